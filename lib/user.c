/*
 * lib/user.c - looks users and groups up in the sandbox's /etc/passwd and
 * /etc/group. A static binary cannot use NSS (getpwnam), and the sandbox's
 * files are the only source of users anyway, so the agent parses them (the
 * rules are in user.h). Lines are read whole with getline, so no line is
 * too long to read; what is kept of one is bounded by the limits in user.h.
 */
#include "user.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PASSWD_FILE "/etc/passwd"
#define GROUP_FILE "/etc/group"

/* Where the entry on line (modified: cut at its newline) starts, or NULL for a
 * blank line or a comment. */
static char *entry_start(char *line)
{
	line[strcspn(line, "\n")] = '\0';
	while (isspace((unsigned char)*line))
		line++;
	return *line && *line != '#' ? line : NULL;
}

/* Splits line (modified) at ':' into at most max fields; returns the count. */
static size_t split_fields(char *line, char **field, size_t max)
{
	size_t n = 0;
	while (n < max) {
		field[n++] = line;
		char *colon = strchr(line, ':');
		if (!colon)
			break;
		*colon = '\0';
		line = colon + 1;
	}
	return n;
}

/* A uid or gid: decimal digits only (strtoul would take a sign, blanks and
 * "-18446744073709551615" as 1), below 2^32. */
static bool parse_id(const char *s, uint32_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* Whether a name field can name a user. */
static bool name_ok(const char *name)
{
	return *name && strlen(name) < USER_NAME_MAX;
}

/*
 * Splits each entry of the file at path into at most max fields and calls match on it until
 * it returns true. Returns 0 when one matched, -ENOENT when none did, or -errno when the file
 * cannot be opened or read.
 */
static int find_entry(const char *path, size_t max, bool (*match)(char **fld, size_t n, void *ctx), void *ctx)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;
	char *fld[8];
	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			if (!feof(f))
				ret = errno ? -errno : -EIO;
			break;
		}
		char *entry = entry_start(line);
		if (entry && match(fld, split_fields(entry, fld, max), ctx)) {
			ret = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

struct passwd_want {
	const char *name; /* NULL: by uid */
	uid_t uid;
	struct user_info *u;
	char *namebuf;
};

static bool passwd_match(char **fld, size_t n, void *ctx)
{
	struct passwd_want *w = ctx;
	uint32_t id, gid;
	if (n < 7 || !name_ok(fld[0]) || !parse_id(fld[2], &id) || !parse_id(fld[3], &gid))
		return false;
	if (w->name ? strcmp(fld[0], w->name) != 0 : (uid_t)id != w->uid)
		return false;
	w->u->uid = (uid_t)id;
	w->u->gid = (gid_t)gid;
	bool home_fits = *fld[5] && strlen(fld[5]) < sizeof(w->u->home);
	snprintf(w->u->home, sizeof(w->u->home), "%s", home_fits ? fld[5] : "/");
	snprintf(w->namebuf, USER_NAME_MAX, "%s", fld[0]);
	return true;
}

/*
 * Finds the passwd entry whose name equals `name` (when not NULL) or whose
 * uid equals `uid`. Fills u->uid, u->gid, u->home and the entry's name into
 * namebuf (USER_NAME_MAX bytes). Returns 0, -ENOENT, or -errno when the file
 * cannot be opened or read.
 */
static int passwd_find(const char *path, const char *name, uid_t uid, struct user_info *u, char namebuf[USER_NAME_MAX])
{
	struct passwd_want w = { name, uid, u, namebuf };
	return find_entry(path, 7, passwd_match, &w);
}

static bool has_group(const struct user_info *u, gid_t gid)
{
	for (size_t i = 0; i < u->ngroups; i++)
		if (u->groups[i] == gid)
			return true;
	return false;
}

/* Collects the supplementary groups listing `name` as a member after the
 * primary gid (initgroups), each once. A group file that is missing or cannot
 * be read just means none. */
static void groups_find(const char *path, const char *name, struct user_info *u)
{
	u->groups[0] = u->gid;
	u->ngroups = 1;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	while (u->ngroups < USER_MAX_GROUPS && getline(&line, &cap, f) > 0) {
		char *entry = entry_start(line);
		char *fld[4];
		uint32_t gid;
		if (!entry || split_fields(entry, fld, 4) < 4 || !parse_id(fld[2], &gid) || has_group(u, (gid_t)gid))
			continue;
		char *save = NULL;
		for (char *m = strtok_r(fld[3], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
			if (strcmp(m, name) == 0) {
				u->groups[u->ngroups++] = (gid_t)gid;
				break;
			}
		}
	}
	free(line);
	fclose(f);
}

int user_by_name_in(const char *passwd_path, const char *group_path, const char *name, struct user_info *u)
{
	char namebuf[USER_NAME_MAX];
	memset(u, 0, sizeof(*u));
	if (!name_ok(name))
		return -ENOENT;
	int err = passwd_find(passwd_path, name, 0, u, namebuf);
	if (err < 0)
		return err;
	groups_find(group_path, namebuf, u);
	return 0;
}

int user_by_id_in(const char *passwd_path, const char *group_path, uid_t uid, gid_t gid, struct user_info *u)
{
	char namebuf[USER_NAME_MAX];
	memset(u, 0, sizeof(*u));
	if (passwd_find(passwd_path, NULL, uid, u, namebuf) == 0) {
		u->gid = gid; /* the caller's gid wins over the entry's */
		groups_find(group_path, namebuf, u);
		return 0;
	}
	u->uid = uid;
	u->gid = gid;
	snprintf(u->home, sizeof(u->home), "%s", uid == 0 ? "/root" : "/");
	u->groups[0] = gid;
	u->ngroups = 1;
	return 0;
}

int user_by_spec_in(const char *passwd_path, const char *group_path, const char *spec, struct user_info *u)
{
	char namebuf[USER_NAME_MAX];
	const char *colon = strchr(spec, ':');
	uint32_t uid, gid;
	if (*spec < '0' || *spec > '9')
		return user_by_name_in(passwd_path, group_path, spec, u);
	if (colon) {
		char idbuf[16];
		size_t n = (size_t)(colon - spec);
		if (n >= sizeof(idbuf))
			return -EINVAL;
		memcpy(idbuf, spec, n);
		idbuf[n] = '\0';
		if (!parse_id(idbuf, &uid) || !parse_id(colon + 1, &gid) || uid == UINT32_MAX || gid == UINT32_MAX)
			return -EINVAL;
		return user_by_id_in(passwd_path, group_path, uid, gid, u);
	}
	if (!parse_id(spec, &uid))
		return -EINVAL;
	memset(u, 0, sizeof(*u));
	int err = passwd_find(passwd_path, NULL, uid, u, namebuf);
	if (err < 0)
		return err;
	groups_find(group_path, namebuf, u);
	return 0;
}

struct id_want {
	uint32_t id;
	char *out;
};

static bool id_match(char **fld, size_t n, void *ctx)
{
	struct id_want *w = ctx;
	uint32_t id;
	if (n < 3 || !name_ok(fld[0]) || !parse_id(fld[2], &id) || id != w->id)
		return false;
	snprintf(w->out, USER_NAME_MAX, "%s", fld[0]);
	return true;
}

/* The name of the first entry of file (passwd or group: name first, id third) with this id into
 * out; 0, -ENOENT, or -errno when the file cannot be read. */
static int id_find(const char *path, uint32_t want, char out[USER_NAME_MAX])
{
	struct id_want w = { want, out };
	return find_entry(path, 4, id_match, &w);
}

struct group_want {
	const char *name;
	gid_t *gid;
};

static bool group_match(char **fld, size_t n, void *ctx)
{
	struct group_want *w = ctx;
	uint32_t id;
	if (n < 3 || !name_ok(fld[0]) || !parse_id(fld[2], &id) || strcmp(fld[0], w->name) != 0)
		return false;
	*w->gid = (gid_t)id;
	return true;
}

int user_group_by_name_in(const char *group_path, const char *name, gid_t *gid)
{
	struct group_want w = { name, gid };
	return name_ok(name) ? find_entry(group_path, 4, group_match, &w) : -ENOENT;
}

/* Whether the cache still describes file, as stat sees it now; if not it is emptied and st kept. */
static bool cache_fresh(struct user_name_cache *c, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof(st));
	if (c->ino == st.st_ino && c->size == st.st_size && c->mtime.tv_sec == st.st_mtim.tv_sec &&
	    c->mtime.tv_nsec == st.st_mtim.tv_nsec && c->n)
		return true;
	c->ino = st.st_ino;
	c->size = st.st_size;
	c->mtime = st.st_mtim;
	c->n = 0;
	c->next = 0;
	return false;
}

const char *user_id_name_in(struct user_name_cache *c, const char *path, uint32_t id)
{
	cache_fresh(c, path);
	for (unsigned i = 0; i < c->n; i++)
		if (c->slot[i].id == id)
			return c->slot[i].name;
	unsigned k = c->next;
	c->next = (c->next + 1) % USER_NAME_CACHE;
	if (c->n < USER_NAME_CACHE)
		c->n++;
	c->slot[k].id = id;
	if (id_find(path, id, c->slot[k].name) < 0)
		c->slot[k].name[0] = '\0';
	return c->slot[k].name;
}

const char *user_name_of(struct user_names *names, uid_t uid)
{
	return user_id_name_in(&names->users, PASSWD_FILE, (uint32_t)uid);
}

const char *user_group_name_of(struct user_names *names, gid_t gid)
{
	return user_id_name_in(&names->groups, GROUP_FILE, (uint32_t)gid);
}

int user_by_spec(const char *spec, struct user_info *u)
{
	return user_by_spec_in(PASSWD_FILE, GROUP_FILE, spec, u);
}

int user_by_name(const char *name, struct user_info *u)
{
	return user_by_name_in(PASSWD_FILE, GROUP_FILE, name, u);
}

int user_by_id(uid_t uid, gid_t gid, struct user_info *u)
{
	return user_by_id_in(PASSWD_FILE, GROUP_FILE, uid, gid, u);
}

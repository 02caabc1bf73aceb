/*
 * agent/user.c - looks users and groups up in the sandbox's /etc/passwd and
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
 * Finds the passwd entry whose name equals `name` (when not NULL) or whose
 * uid equals `uid`. Fills u->uid, u->gid, u->home and the entry's name into
 * namebuf (USER_NAME_MAX bytes). Returns 0, -ENOENT, or -errno when the file
 * cannot be opened or read.
 */
static int passwd_find(const char *path, const char *name, uid_t uid, struct user_info *u, char namebuf[USER_NAME_MAX])
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;
	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			if (!feof(f))
				ret = errno ? -errno : -EIO;
			break;
		}
		char *entry = entry_start(line);
		char *fld[7];
		uint32_t id, gid;
		if (!entry || split_fields(entry, fld, 7) < 7 || !name_ok(fld[0]) || !parse_id(fld[2], &id) ||
		    !parse_id(fld[3], &gid))
			continue;
		if (name ? strcmp(fld[0], name) != 0 : (uid_t)id != uid)
			continue;
		u->uid = (uid_t)id;
		u->gid = (gid_t)gid;
		bool home_fits = *fld[5] && strlen(fld[5]) < sizeof(u->home);
		snprintf(u->home, sizeof(u->home), "%s", home_fits ? fld[5] : "/");
		snprintf(namebuf, USER_NAME_MAX, "%s", fld[0]);
		ret = 0;
		break;
	}
	free(line);
	fclose(f);
	return ret;
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

int user_by_name(const char *name, struct user_info *u)
{
	return user_by_name_in(PASSWD_FILE, GROUP_FILE, name, u);
}

int user_by_id(uid_t uid, gid_t gid, struct user_info *u)
{
	return user_by_id_in(PASSWD_FILE, GROUP_FILE, uid, gid, u);
}

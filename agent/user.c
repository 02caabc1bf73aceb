/*
 * agent/user.c - looks users and groups up in the sandbox's /etc/passwd and
 * /etc/group. A static binary cannot use NSS (getpwnam), and the sandbox's
 * files are the only source of users anyway, so the agent parses them: one
 * entry per line, fields separated by ':'. Lines that do not parse are
 * skipped, like the C library does.
 */
#include "user.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASSWD_FILE "/etc/passwd"
#define GROUP_FILE "/etc/group"

/* Splits line (modified) at ':' into at most max fields; returns the count. */
static size_t split_fields(char *line, char **field, size_t max)
{
	size_t n = 0;
	line[strcspn(line, "\n")] = '\0';
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

static bool parse_id(const char *s, unsigned long *out)
{
	char *end;
	if (!*s)
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !*end && !errno && *out <= 0xfffffffful;
}

/*
 * Finds the passwd entry whose name equals `name` (when not NULL) or whose
 * uid equals `uid`. Fills u->uid, u->gid, u->home and copies the name into
 * namebuf. Returns 0, -ENOENT or -errno.
 */
static int passwd_find(const char *path, const char *name, uid_t uid, struct user_info *u,
		       char *namebuf, size_t namesize)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int ret = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		char *fld[7];
		unsigned long id, gid;
		if (split_fields(line, fld, 7) < 7 || !parse_id(fld[2], &id) ||
		    !parse_id(fld[3], &gid))
			continue;
		if (name ? strcmp(fld[0], name) != 0 : (uid_t)id != uid)
			continue;
		u->uid = (uid_t)id;
		u->gid = (gid_t)gid;
		snprintf(u->home, sizeof(u->home), "%s", *fld[5] ? fld[5] : "/");
		snprintf(namebuf, namesize, "%s", fld[0]);
		ret = 0;
		break;
	}
	free(line);
	fclose(f);
	return ret;
}

/* Collects the supplementary groups listing `name` as a member after the
 * primary gid (initgroups). A missing /etc/group just means none. */
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
		char *fld[4];
		unsigned long gid;
		if (split_fields(line, fld, 4) < 4 || !parse_id(fld[2], &gid) || gid == u->gid)
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

int user_by_name_in(const char *passwd_path, const char *group_path, const char *name,
		    struct user_info *u)
{
	char namebuf[256];
	memset(u, 0, sizeof(*u));
	int err = passwd_find(passwd_path, name, 0, u, namebuf, sizeof(namebuf));
	if (err < 0)
		return err;
	groups_find(group_path, namebuf, u);
	return 0;
}

int user_by_id_in(const char *passwd_path, const char *group_path, uid_t uid, gid_t gid,
		  struct user_info *u)
{
	char namebuf[256];
	memset(u, 0, sizeof(*u));
	if (passwd_find(passwd_path, NULL, uid, u, namebuf, sizeof(namebuf)) == 0) {
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

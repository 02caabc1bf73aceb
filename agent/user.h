/*
 * agent/user.h - users and groups from the sandbox's /etc/passwd and
 * /etc/group, read directly (a static binary has no NSS).
 */
#ifndef SPACE_AGENT_USER_H
#define SPACE_AGENT_USER_H

#include <stddef.h>
#include <sys/types.h>

#define USER_MAX_GROUPS 64u
#define USER_HOME_MAX 512u

struct user_info {
	uid_t uid;
	gid_t gid;
	char home[USER_HOME_MAX];
	gid_t groups[USER_MAX_GROUPS]; /* supplementary groups, primary gid first */
	size_t ngroups;
};

/* Looks up a user by name. Returns 0, -ENOENT if there is no such user,
 * or -errno if /etc/passwd cannot be read. */
int user_by_name(const char *name, struct user_info *u);

/* Fills u for a numeric uid/gid: home and groups from the files when the uid
 * has an entry, else home "/" ("/root" for uid 0) and no supplementary
 * groups. The caller's gid is the primary one either way. Returns 0. */
int user_by_id(uid_t uid, gid_t gid, struct user_info *u);

/* The same lookups in the given files instead of /etc/passwd and /etc/group
 * (the tests and the fuzzer use them). */
int user_by_name_in(const char *passwd_path, const char *group_path, const char *name,
		    struct user_info *u);
int user_by_id_in(const char *passwd_path, const char *group_path, uid_t uid, gid_t gid,
		  struct user_info *u);

#endif

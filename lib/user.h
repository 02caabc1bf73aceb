/*
 * lib/user.h - users and groups from the sandbox's /etc/passwd and
 * /etc/group, read directly (a static binary has no NSS).
 *
 * The files are read as the C library reads them: one entry per line,
 * fields separated by ':'; blank lines and lines whose first non-blank
 * character is '#' are skipped, and so is every line that does not parse
 * (too few fields, an empty name or one of USER_NAME_MAX bytes or more, an
 * id that is not a plain decimal number below 2^32). The first entry of a
 * name or uid is the one that counts. A NUL byte ends what is read of a line.
 *
 * The agent reads the sandbox's own files; the template builder (builder/step.c) reads an
 * image's, for its USER and --chown, so a build and the sandboxes of what it built agree on
 * who a user is.
 */
#ifndef SPACE_LIB_USER_H
#define SPACE_LIB_USER_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

/* Groups a command runs with, the primary one included: USER_MAX_GROUPS - 1
 * supplementary groups at most, the first ones in /etc/group's order. */
#define USER_MAX_GROUPS 64u
/* Bytes of a home directory, NUL included. A longer home is never cut to
 * another path: the user gets "/", as for an empty home field. */
#define USER_HOME_MAX 512u
/* Bytes of a user name, NUL included (Linux's LOGIN_NAME_MAX). */
#define USER_NAME_MAX 256u

struct user_info {
	uid_t uid;
	gid_t gid;
	char home[USER_HOME_MAX];
	gid_t groups[USER_MAX_GROUPS]; /* primary gid first, then the supplementary ones, each once */
	size_t ngroups;
};

/* Looks up a user by name. Returns 0, -ENOENT if there is no such user,
 * or -errno if /etc/passwd cannot be read. */
int user_by_name(const char *name, struct user_info *u);

/* Fills u for a numeric uid/gid: home and groups from the files when the uid
 * has an entry, else home "/" ("/root" for uid 0) and no supplementary
 * groups. The caller's gid is the primary one either way. Returns 0. */
int user_by_id(uid_t uid, gid_t gid, struct user_info *u);

/* Looks up the user a file request names (proto/agent.h, SP_FEATURE_FILE_USER): a name, "UID"
 * (its entry gives the gid, home and groups) or "UID:GID" (as user_by_id). Returns 0, -ENOENT
 * when the name or uid has no entry, -EINVAL for ids that are not numbers below 2^32 - 1, or
 * -errno when /etc/passwd cannot be read. */
int user_by_spec(const char *spec, struct user_info *u);

/* Names of ids for file entries: the last USER_NAME_CACHE lookups of each file are kept, and
 * forgotten as soon as the file changes (its inode, size or mtime), so an account added in the
 * sandbox shows at once while a listing of many files reads the file once. */
#define USER_NAME_CACHE 16u

struct user_name_cache {
	struct {
		uint32_t id;
		char name[USER_NAME_MAX]; /* "" when the id has no entry */
	} slot[USER_NAME_CACHE];
	unsigned n, next;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct user_names {
	struct user_name_cache users, groups;
};

/* The name of uid in /etc/passwd, of gid in /etc/group: "" when there is none (or the file
 * cannot be read). The string lives in the cache until the next lookup. */
const char *user_name_of(struct user_names *names, uid_t uid);
const char *user_group_name_of(struct user_names *names, gid_t gid);

/* The same lookups in the given files instead of /etc/passwd and /etc/group
 * (the tests and the fuzzer use them). */
int user_by_name_in(const char *passwd_path, const char *group_path, const char *name, struct user_info *u);
int user_by_id_in(const char *passwd_path, const char *group_path, uid_t uid, gid_t gid, struct user_info *u);
int user_by_spec_in(const char *passwd_path, const char *group_path, const char *spec, struct user_info *u);
const char *user_id_name_in(struct user_name_cache *c, const char *path, uint32_t id);

/* The gid of the first entry of group_path (a group file, by user.h's rules) named name into
 * *gid. Returns 0, -ENOENT when there is none, or -errno when the file cannot be read. */
int user_group_by_name_in(const char *group_path, const char *name, gid_t *gid);

#endif

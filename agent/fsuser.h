/*
 * agent/fsuser.h - file requests done as a user of the sandbox (SP_FEATURE_FILE_USER).
 *
 * The agent runs as root. For a request that names a user it takes that user's
 * groups, gid and uid as its effective ids (setgroups, setegid, seteuid) around the
 * system calls of the request and gives them back right after, so the kernel checks
 * access as it would for the user, and what the request creates is the user's (a
 * nonzero effective uid also drops root's capabilities until it ends). The agent is
 * single-threaded and does nothing else in between, so no other work ever runs
 * under a user's ids. Calls nest: fsuser_enter with no user is a no-op.
 */
#ifndef SPACE_AGENT_FSUSER_H
#define SPACE_AGENT_FSUSER_H

#include <stdbool.h>
#include <stddef.h>

#include "../lib/frame.h"
#include "../lib/user.h"

/* Whom a file request acts as: `set` false for the agent itself. */
struct fsuser {
	bool set;
	struct user_info u;
};

/*
 * Reads the optional user string of a file request at *off (after the request's own strings)
 * and looks it up. Returns 0 (fu->set when a non-empty user was named), -EPROTO when the
 * string is not NUL-terminated, or -ENOENT / -EINVAL / -errno as user_by_spec.
 */
int fsuser_arg(const struct frame *f, size_t *off, struct fsuser *fu);

/* Takes fu's ids as the effective ones (no-op when !fu->set). Returns 0 or -errno, ids
 * unchanged on failure. */
int fsuser_enter(const struct fsuser *fu);

/* Gives root's ids back after fsuser_enter (no-op when !fu->set). */
void fsuser_leave(const struct fsuser *fu);

/*
 * The absolute path a request means: path itself when absolute; with a user, path taken
 * from the user's home ("." and leading "./" dropped); else NULL (a relative path without a
 * user is refused). Writes into buf (size bytes) when it joins; NULL when it would not fit.
 */
const char *fsuser_path(const struct fsuser *fu, const char *path, char *buf, size_t size);

#endif

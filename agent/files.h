/*
 * agent/files.h - one-frame file operations (H_STAT, H_MKDIR, H_REMOVE,
 * H_RENAME, H_SYNC) and the helpers xfer.c shares: mkdir -p and A_STAT.
 */
#ifndef SPACE_AGENT_FILES_H
#define SPACE_AGENT_FILES_H

#include <stdint.h>
#include <sys/stat.h>

#include <limits.h>

#include "../lib/frame.h"
#include "fsuser.h"

struct agent;

/* Request handlers; return 0, or -EPROTO to close the connection. */
int files_stat(struct agent *a, const struct frame *f);
int files_mkdir(struct agent *a, const struct frame *f);
int files_remove(struct agent *a, const struct frame *f);
int files_rename(struct agent *a, const struct frame *f);
int files_sync(struct agent *a, const struct frame *f);

/* Creates path and its missing parents; the last one gets `mode` exactly.
 * An existing directory is fine. Returns 0 or -errno. */
int files_mkdir_p(const char *path, mode_t mode);

/* Queues A_STAT on chan describing st under `name`, with its extension (proto/agent.h): owner
 * and group names, the target of a link (read at rel, relative to dirfd) and the absolute
 * path. Returns 0 or -ENOMEM. */
int files_send_stat(struct agent *a, uint32_t chan, const struct stat *st, const char *name, int dirfd,
		    const char *rel, const char *path);

/* The last component of path ("/" for the root); points into path or a constant. */
const char *files_basename(const char *path, char *buf, size_t size);

/* The arguments of a file request: its paths as given and as meant (absolute), and whom it
 * acts as. */
struct files_req {
	const char *given[2];
	const char *path[2];
	char buf[2][PATH_MAX];
	struct fsuser user;
};

/*
 * Reads npaths (1 or 2) path strings at off, then the optional user (fsuser.h), and resolves
 * the paths. Returns 1 to go on; 0 when the request was answered with A_ERROR (EINVAL: an
 * unknown user, a relative path without one, a path of PATH_MAX bytes or more); -EPROTO when
 * a string is missing or not NUL-terminated (the connection is to be closed); -ENOMEM.
 */
int files_args(struct agent *a, const struct frame *f, size_t off, struct files_req *r, int npaths);

#endif

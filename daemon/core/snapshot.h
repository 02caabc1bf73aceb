/*
 * daemon/core/snapshot.h - named snapshots (image + copy of the writable layer under
 * <state>/snapshots/<id>/) and fork.
 */
#ifndef SPACE_DAEMON_SNAPSHOT_H
#define SPACE_DAEMON_SNAPSHOT_H

#include <stddef.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define SNAPSHOT_ID_LEN 14 /* "s-" + 12 hex characters */
#define FORK_MAX_COUNT 16  /* forks made by one request */

struct op;

/* Snapshots running sb (it runs on after); op is answered 201 with the snapshot. [L] */
int snapshot_take(struct daemon *d, struct sandbox *sb, const char *name, struct op *op, struct err *e);
/* Makes `count` new sandboxes continuing from sb's current state; op gets them. [L] */
int snapshot_fork(struct daemon *d, struct sandbox *sb, int count, struct op *op, struct err *e);
/* The directory of recorded snapshot id into out; -ENOENT if there is none. */
int snapshot_path(struct daemon *d, const char *id, char *out, size_t n);
/* Removes a snapshot's record, then its files on a job; op gets 204. Sandboxes made from
 * it are unaffected. [L] */
int snapshot_remove(struct daemon *d, const char *id, struct op *op, struct err *e);
/* Removes snapshot directories without a record (interrupted snapshots and forks). At start. */
void snapshot_cleanup(struct daemon *d);

#endif

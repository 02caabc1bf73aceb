/*
 * daemon/core/ready.h - a template's start command and its ready check.
 *
 * A template may name a start command (LABEL space.start, "start" in its config) and a ready
 * command (space.ready, "ready"). Every sandbox made fresh from it (not one restored from a
 * snapshot, a fork or a suspend, whose processes come back as they were) runs the start command
 * in the background, as a process of its own that the process list shows, before its create
 * answers: its output goes to READY_START_LOG inside the sandbox, so a chatty server never
 * waits on a reader. Then the ready command runs, every READY_POLL_MS, until it exits 0; the
 * create answers once it has. The create fails (422 not_ready, the sandbox removed) when the
 * start command ends first, or when the ready command has not succeeded within the daemon's
 * ready timeout (spaced --ready-timeout, READY_DEFAULT_TIMEOUT_S); the message carries the end
 * of the start command's output. Both run as any process that names no user, folder or
 * environment: the template's user, working folder and environment, with the create's env.
 */
#ifndef SPACE_DAEMON_CORE_READY_H
#define SPACE_DAEMON_CORE_READY_H

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define READY_START_LOG "/tmp/space-start.log"
#define READY_POLL_MS 100
#define READY_DEFAULT_TIMEOUT_S 60
#define READY_MAX_TIMEOUT_S 3600
#define READY_LOG_TAIL 200 /* bytes of the start command's output a failure quotes (its last) */

/* Starts sb's start command and waits for its ready command (either may be NULL), releasing
 * d->lock while it waits. 0, or -errno with e filled. [L] */
int ready_run(struct daemon *d, struct sandbox *sb, const char *start, const char *ready, struct err *e);

#endif

/*
 * daemon/base/reaper.h - spaced as a child subreaper.
 *
 * `runsc run --detach` leaves the sandbox's processes orphaned. On a host
 * whose PID 1 reaps orphans slowly, `runsc delete` then waits (polling) for
 * a zombie to disappear: a second and a half per suspend and per delete on
 * these machines. As a subreaper, spaced inherits those orphans and reaps
 * them as soon as they exit. Processes that spawn.c is waiting for are left
 * to it.
 */
#ifndef SPACE_DAEMON_REAPER_H
#define SPACE_DAEMON_REAPER_H

/* Becomes a subreaper and returns a signalfd for SIGCHLD (which must be blocked
 * in every thread), or -errno. */
int reaper_init(void);
/* Drains the signalfd and reaps every exited child that nobody waits for. */
void reaper_run(int fd);

#endif

/*
 * daemon/driver/jail.h - starting a VMM (QEMU) confined: an unprivileged user of its own,
 * its own mount, PID, network, IPC and UTS namespaces, and a root file system holding only
 * /usr, the loader's cache and a few device nodes (docs/security.md).
 *
 * Everything the program is to use comes as a descriptor (keep), opened by spaced: the
 * jailed program reaches files only through them (/proc/self/fd/N, QEMU's /dev/fdset/N),
 * never by a path of the host.
 */
#ifndef SPACE_DAEMON_JAIL_H
#define SPACE_DAEMON_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JAIL_MAX_KEEP 12

/* The first of the users jailed programs run as: a VMM's is JAIL_UID_BASE + a number
 * derived from its sandbox, with no entry in /etc/passwd and owning no file. */
#define JAIL_UID_BASE 1000000000u
#define JAIL_UID_SPAN 1048576u

struct jail {
	uid_t uid;        /* user and group the program runs as */
	bool kvm;         /* /dev/kvm in its /dev, its group among the program's */
	bool transient;   /* killed when the thread that started it ends (PR_SET_PDEATHSIG), as
	                     when spaced dies: for a program that serves no sandbox */
};

/* The user the sandbox named id runs as when it is free: JAIL_UID_BASE + a hash of id. */
uid_t jail_uid_for(const char *id);

/*
 * The user a start of the sandbox named id is to run as: jail_uid_for(id) or, when a process of
 * the host already runs as that user or a start under way holds it (held[0..nheld)), the next
 * free one after it, at most JAIL_UID_PROBES further, so that no two jailed programs share a
 * user. Returns the uid, or 0 when every one probed is taken. Reads /proc: call it where a
 * start is made, holding what keeps the starts under way from changing held.
 */
#define JAIL_UID_PROBES 64
uid_t jail_uid_pick(const char *id, const uid_t *held, size_t nheld);

/*
 * Starts exe (an absolute path) with argv in a jail as j says, in a session of its own,
 * stdin from /dev/null, stdout and stderr to out_fd/err_fd, and keep[0..nkeep) as its
 * descriptors 3, 4, ...; does not wait. Returns its pid (as spaced sees it) once the program
 * is running, or -errno with *step naming what failed (a mount, the change of user, exec).
 * It outlives spaced (unless transient); while spaced runs, the reaper reaps it when it exits.
 */
pid_t jail_start(const struct jail *j, const char *exe, char *const argv[], const int *keep, int nkeep,
		 int out_fd, int err_fd, const char **step);

#endif

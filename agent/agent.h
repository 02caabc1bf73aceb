/*
 * agent/agent.h - the state of space-agent, shared by its modules.
 *
 * space-agent is PID 1 inside every sandbox. It is one single-threaded poll
 * loop (main.c) over a handful of file descriptors: a signalfd for SIGCHLD,
 * the connection to spaced (conn.c), and the pipes of the processes it runs
 * (proc.c, spawn.c). File operations (files.c) run inline; downloads,
 * uploads and listings that span many frames are kept as transfers (xfer.c),
 * watched folders as watches (watch.c).
 * Incoming frames are routed by dispatch.c. The log, the clocks and the
 * poll set every module uses are agent.c's.
 *
 * Every module works on one `struct agent`, passed explicitly; there is no
 * global state. Functions return 0 or a negative errno.
 */
#ifndef SPACE_AGENT_AGENT_H
#define SPACE_AGENT_AGENT_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "../proto/agent.h"
#include "conn.h"
#include "oom.h"
#include "proc.h"
#include "../lib/user.h"
#include "watch.h"
#include "xfer.h"

/* Upper bound of descriptors one loop iteration polls: the signalfd, the relay, the
 * connection, each process's pipes and each watch's inotify descriptor. */
#define AGENT_MAX_FDS (3u + 3u * AGENT_MAX_PROCS + AGENT_MAX_WATCHES)

struct agent {
	bool pid1;            /* running as the sandbox's init */
	/* a VM's init: where H_IDENTITY takes the restored sandbox's environment from
	 * (vminit_env: the running QEMU's, not the one of the machine its image was written on) */
	int (*vm_env)(void);
	int sigfd;            /* signalfd for SIGCHLD */
	int relay_fd;         /* the loopback relay's listening socket (connect.h), or -1: no network */
	uint64_t boot_id;     /* random, chosen once per agent start */
	struct conn conn;
	struct proc_table procs;
	struct xfer_table xfers;
	struct watch_table watches;
	struct oom oom;
	struct user_names names; /* owner and group names of file entries */
};

/*
 * One watched descriptor of a loop iteration. The callback receives the
 * revents poll reported; it must treat them as hints and re-check that `fd`
 * is still the descriptor it owns (an earlier callback of the same
 * iteration may have closed it).
 */
typedef void watch_fn(struct agent *a, void *obj, int fd, short revents);

struct pollset {
	struct pollfd fds[AGENT_MAX_FDS];
	watch_fn *fn[AGENT_MAX_FDS];
	void *obj[AGENT_MAX_FDS];
	unsigned n;
};

/* Adds fd to the set for this iteration (ignored when the set is full). */
void pollset_add(struct pollset *ps, int fd, short events, watch_fn *fn, void *obj);

/* Milliseconds of CLOCK_MONOTONIC, for deadlines. */
uint64_t agent_now_ms(void);

/* Milliseconds since the epoch (CLOCK_REALTIME), for what the host shows. */
uint64_t agent_wall_ms(void);

/* One line on stderr, prefixed "space-agent: " (the sandbox's log). */
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

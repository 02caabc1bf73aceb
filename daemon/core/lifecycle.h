/*
 * daemon/core/lifecycle.h - transitions of a running sandbox: pause, resume,
 * suspend to disk, sync, and the pieces snapshots reuse (detaching the agent,
 * writing a durable image).
 */
#ifndef SPACE_DAEMON_LIFECYCLE_H
#define SPACE_DAEMON_LIFECYCLE_H

#include "daemon/daemon.h"
#include "lib/host/err.h"

struct op;

#define LIFECYCLE_ANSWERED 1 /* lifecycle_start answered op at once (the state already held) */

/*
 * Starts action a (ACT_PAUSE, ACT_RESUME, ACT_SUSPEND) on sb. Returns 0 when a
 * job will answer op, LIFECYCLE_ANSWERED when op was answered at once (the target
 * state already held), or -errno with *e set (409 for an illegal transition). [L]
 */
int lifecycle_start(struct daemon *d, struct sandbox *sb, enum sb_action a, struct op *op, struct err *e);

/* Flushes sb's filesystem (inside, then its writable layer on the host); op is answered
 * once it is durable. [L] */
int lifecycle_sync(struct daemon *d, struct sandbox *sb, struct op *op, struct err *e);


/* The file a whole, synced image holds (checkpoint/complete): without it an image is not one. */
#define LIFECYCLE_IMAGE_MARK "complete"
/* Room asked of the host beyond the sandbox's memory before a suspend. */
#define LIFECYCLE_IMAGE_SLACK (64ull << 20)
/* How long a suspend of a sandbox whose runtime cannot keep network connections (gVisor) waits
 * for those open to end: past the 60 s a closed connection waits in time-wait. */
#define LIFECYCLE_NET_DRAIN_MS 65000
#define LIFECYCLE_NET_POLL_MS 250

/* Asks sb's agent to detach and waits until its connection is closed. [L] */
int lifecycle_detach(struct daemon *d, struct sandbox *sb, struct err *e);
/* Listens for sb's agent again (after a detach). [L] */
int lifecycle_reattach(struct daemon *d, struct sandbox *sb, struct err *e);

/* Suspends sb (from state `from`) to disk; returns the state it ends in. Blocks; no d->lock. */
enum sb_state lifecycle_do_suspend(struct daemon *d, struct sandbox *sb, enum sb_state from, struct err *e);
/* Restores a suspended sb; returns the state it ends in. Blocks; no d->lock. */
enum sb_state lifecycle_do_resume(struct daemon *d, struct sandbox *sb, struct err *e);

/* What a change of a sandbox's timeouts sets (the rest stays). */
struct sb_timeouts {
	bool set_timeout, set_lifetime, set_action;
	double timeout_s;  /* a new idle timeout, counted from now (0: none) */
	double lifetime_s; /* a new lifetime, counted from now (0: none) */
	bool kill;         /* the new timeout action: delete instead of suspend */
};

/* Changes sb's timeouts as t says (at once: the next check of timeouts sees them) and records
 * them on a job, which answers op with the sandbox. A suspended sandbox's new idle timeout is
 * what it gets when it resumes. 409 in *e while sb is in a transition, failed or deleting. [L] */
int lifecycle_set_timeouts(struct daemon *d, struct sandbox *sb, const struct sb_timeouts *t, struct op *op,
			   struct err *e);

/* Suspends or deletes every sandbox whose idle timeout or lifetime has passed; a request open on
 * a sandbox (peer_awaited) is activity, and moves its idle timeout on. [L] */
void lifecycle_expire(struct daemon *d);
/* Once a second on the I/O thread: timeouts, then every sandbox's peer_tick. [L] */
void lifecycle_tick(struct daemon *d);
/* How agent events reach this layer (d->peer_events): a ready agent lets deferred requests go
 * on; a lost, silent or stopped one is watched, nudged or probed by sandbox_live.c's jobs. */
extern const struct peer_events lifecycle_peer_events;

/* Called when a resume ended (e NULL on success): requests waiting for it go on. [L] */
void lifecycle_resumed(struct daemon *d, struct sandbox *sb, const struct err *e);

#endif

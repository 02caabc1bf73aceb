/*
 * daemon/core/starts.h - how many sandboxes boot at once (spaced --max-starting).
 *
 * A sandbox boots from the moment its runtime is started (a create, a resume, a restore from a
 * snapshot, a warm pool's fill) until its agent says hello. Booting is work for the host's CPUs:
 * a microVM without KVM runs its kernel's start on one of them under TCG, and ten at once on two
 * CPUs take ten times as long each, so that all ten can miss the agent's hello deadline where one
 * after the other none would. At most --max-starting boot at once (default: the CPUs online, at
 * least STARTS_MIN_DEFAULT); the others wait their turn in the order they asked, and the hello
 * deadline of each counts from its turn. Holding a turn never waits for anything but the boot, so
 * the line always moves.
 *
 * GET /metrics shows space_sandbox_starts{phase="booting"|"waiting"} and
 * space_sandbox_start_waits_total (docs/metrics.md).
 */
#ifndef SPACE_DAEMON_CORE_STARTS_H
#define SPACE_DAEMON_CORE_STARTS_H

#include <pthread.h>
#include <stdint.h>

#include "lib/buf.h"

#define STARTS_MAX 1024        /* --max-starting's largest */
#define STARTS_MIN_DEFAULT 2   /* the default on a host with fewer CPUs online */

struct starts {
	pthread_mutex_t lock;
	pthread_cond_t turn;
	int slots;         /* --max-starting */
	uint64_t asked;    /* turns given out (tickets), in order */
	uint64_t entered;  /* ... of which have begun */
	uint64_t done;     /* ... of which have ended */
	uint64_t waited;   /* turns that could not begin at once */
};

/* Sets s up with slots at once; 0 picks the default (the CPUs online, at least
 * STARTS_MIN_DEFAULT, at most STARTS_MAX). */
void starts_init(struct starts *s, int slots);
void starts_destroy(struct starts *s);

/* Waits for a turn to boot; never fails. Called without d->lock. */
void starts_enter(struct starts *s);

/* Ends a turn starts_enter began. */
void starts_leave(struct starts *s);

/* The series above, in Prometheus' text format. */
int starts_write(struct starts *s, struct buf *b);

#endif

/*
 * daemon/io/timer.h - deadlines on the I/O thread's monotonic clock.
 *
 * A timer is embedded in whatever waits (an op); when its time passes,
 * timer_fire disarms it and calls fn. A list of timers is a `struct timer *`
 * head, sorted by time; the waits are bounded by the connection limit, so a
 * list is enough. Pure bookkeeping: the I/O loop (loop.h) owns spaced's list,
 * sleeps until timer_next and fires with the daemon's lock held.
 */
#ifndef SPACE_DAEMON_IO_TIMER_H
#define SPACE_DAEMON_IO_TIMER_H

#include <stdbool.h>
#include <stdint.h>

struct timer {
	int64_t when;              /* mono_ms() */
	void (*fn)(struct timer *t);
	struct timer *next;
	bool armed;
};

/* Arms t for `when_ms` (mono_ms clock), replacing an earlier arming. */
void timer_add(struct timer **list, struct timer *t, int64_t when_ms);
/* Disarms t if armed. */
void timer_del(struct timer **list, struct timer *t);
/* Milliseconds from `now` until the earliest deadline, -1 if none. */
int timer_next(struct timer *const *list, int64_t now);
/* Fires every timer due at `now`. */
void timer_fire(struct timer **list, int64_t now);

#endif

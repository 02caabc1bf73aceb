/*
 * daemon/io/timer.h - deadlines for requests that wait (process wait with a
 * timeout). The I/O thread sleeps until the earliest deadline and fires the
 * ones that passed; firing answers the op with the process as it is now.
 */
#ifndef SPACE_DAEMON_TIMER_H
#define SPACE_DAEMON_TIMER_H

#include <stdint.h>

#include "daemon/daemon.h"

struct op;

/* Arms op's deadline (mono_ms() clock). [L] */
void timer_add(struct daemon *d, struct op *op, int64_t when_ms);
/* Disarms op's deadline if armed. [L] */
void timer_del(struct daemon *d, struct op *op);
/* Milliseconds until the earliest deadline, -1 if none. [L] */
int timer_next(struct daemon *d);
/* Fires every deadline that has passed. [L] */
void timer_fire(struct daemon *d);

#endif

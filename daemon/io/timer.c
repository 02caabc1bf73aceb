/*
 * daemon/io/timer.c - request deadlines kept in a list sorted by time (see
 * timer.h). The number of waiting requests is bounded by the connection
 * limit, so a list is enough.
 */
#include "daemon/io/timer.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "daemon/core/op.h"
#include "daemon/core/sandbox.h"

void timer_add(struct daemon *d, struct op *op, int64_t when_ms)
{
	timer_del(d, op);
	op->deadline = when_ms;
	op->timed = true;
	struct op **pp = &d->timers;
	while (*pp && (*pp)->deadline <= when_ms)
		pp = &(*pp)->tnext;
	op->tnext = *pp;
	*pp = op;
	uint64_t one = 1;
	if (write(d->wakefd, &one, sizeof(one)) < 0) {
		/* the I/O thread is awake already */
	}
}

void timer_del(struct daemon *d, struct op *op)
{
	if (!op->timed)
		return;
	for (struct op **pp = &d->timers; *pp; pp = &(*pp)->tnext)
		if (*pp == op) {
			*pp = op->tnext;
			break;
		}
	op->timed = false;
	op->tnext = NULL;
}

int timer_next(struct daemon *d)
{
	if (!d->timers)
		return -1;
	int64_t left = d->timers->deadline - mono_ms();
	return left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

void timer_fire(struct daemon *d)
{
	int64_t now = mono_ms();
	while (d->timers && d->timers->deadline <= now) {
		struct op *op = d->timers;
		timer_del(d, op);
		if (op->deferred) {
			/* waited for an agent that did not come */
			struct err e = { 0 };
			err_set(&e, 503, "unavailable", ENOTCONN, "sandbox %s: its agent did not connect", op->sbid);
			op_unlink(op);
			op_fail(op, &e);
			continue;
		}
		if (op->proc)
			op->json = sandbox_proc_json(op->proc);
		op_unlink(op);
		op_finish(op);
	}
}

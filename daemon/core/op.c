/*
 * daemon/core/op.c - requests in flight: d->lock and the suspended connections it wakes,
 * linking requests to sandboxes and processes, failing them, their client streams and
 * deadlines, and the accounts of captured output and of credit returned as the client takes
 * bytes.
 *
 * A process's output and exit reach their requests in op_output.c; the agent's other replies
 * become answers in op_frame.c.
 */
#include "daemon/core/op.h"
#include "daemon/core/op_private.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/base/log.h"
#include "daemon/core/proc.h"
#include "daemon/core/stats.h"

/* Connections to resume once this thread drops d->lock. */
#define RESUME_MAX 256
struct resume {
	const struct op_front *front;
	void *conn;
};
static __thread struct resume to_resume[RESUME_MAX];
static __thread unsigned n_resume;

/* How long d->lock is held, for the lock figures logged at exit (bench/lock.py reads
 * them). Written with the lock held. */
static struct {
	uint64_t holds, over_1ms, over_10ms;
	int64_t total_ns, max_ns;
} lock_stats;
static __thread int64_t held_since_ns;

void daemon_lock(struct daemon *d)
{
	pthread_mutex_lock(&d->lock);
	held_since_ns = mono_ns();
}

static void count_hold(void)
{
	int64_t ns = mono_ns() - held_since_ns;
	lock_stats.holds++;
	lock_stats.total_ns += ns;
	lock_stats.over_1ms += ns >= 1000000;
	lock_stats.over_10ms += ns >= 10000000;
	if (ns > lock_stats.max_ns)
		lock_stats.max_ns = ns;
}

int daemon_wait(struct daemon *d, const struct timespec *until)
{
	stats_lock_held(d->stats, mono_ns() - held_since_ns);
	count_hold();
	int rc = pthread_cond_timedwait(&d->cond, &d->lock, until);
	held_since_ns = mono_ns();
	return rc;
}

void daemon_lock_report(struct daemon *d)
{
	daemon_lock(d);
	log_info("lock: held %llu times, %.3f ms in all, longest %.3f ms, %llu holds of 1 ms or more, %llu of 10 ms or more",
		 (unsigned long long)lock_stats.holds, lock_stats.total_ns / 1e6, lock_stats.max_ns / 1e6,
		 (unsigned long long)lock_stats.over_1ms, (unsigned long long)lock_stats.over_10ms);
	pthread_mutex_unlock(&d->lock);
}

void daemon_unlock(struct daemon *d)
{
	struct resume list[RESUME_MAX];
	unsigned n = n_resume;
	memcpy(list, to_resume, n * sizeof(list[0]));
	n_resume = 0;
	stats_lock_held(d->stats, mono_ns() - held_since_ns);
	count_hold();
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < n; i++)
		list[i].front->resume(list[i].conn);
}

void op_wake(struct op *op)
{
	if (!op->suspended || !op->conn)
		return;
	if (n_resume == RESUME_MAX) {
		/* Never expected (256 wake-ups under one lock); resuming with the lock held is
		 * still correct, only slower. */
		op->front->resume(op->conn);
	} else {
		to_resume[n_resume++] = (struct resume){ op->front, op->conn };
	}
	op->suspended = false;
}

void op_suspend(struct op *op)
{
	if (op->suspended)
		return;
	op->front->suspend(op->conn);
	op->suspended = true;
}

void op_finish(struct op *op)
{
	op->done = true;
	if (!op->conn)
		pthread_cond_broadcast(&op->d->cond); /* a job waits for it */
	op_wake(op);
}

uint32_t op_link(struct op *op, struct sandbox *sb)
{
	sb->next_tag = (sb->next_tag + 1) & ~SP_CHAN_REQ;
	if (sb->next_tag < AGENT_TAG_FIRST)
		sb->next_tag = AGENT_TAG_FIRST;
	op->tag = SP_CHAN_REQ | sb->next_tag;
	op->sb = sb;
	op->next = sb->ops;
	sb->ops = op;
	return op->tag;
}

static void list_remove(struct op **head, struct op *op)
{
	for (struct op **pp = head; *pp; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			op->next = NULL;
			return;
		}
}

/* Takes op out of p's readers; false when it was not one. */
static bool reader_remove(struct proc *p, struct op *op)
{
	for (struct op **pp = &p->readers; *pp; pp = &(*pp)->next_reader)
		if (*pp == op) {
			*pp = op->next_reader;
			op->next_reader = NULL;
			p->nreaders--;
			return true;
		}
	return false;
}

void op_unlink(struct op *op)
{
	loop_timer_del(&op->d->loop, &op->timer);
	if (op->proc) {
		struct proc *p = op->proc;
		op->proc = NULL;
		list_remove(&p->waiters, op);
		/* a reader that leaves holds nothing back any more: the others go on */
		if (reader_remove(p, op) && op->sb)
			op_proc_credit(op->sb, p);
	}
	if (op->sb) {
		list_remove(op->deferred ? &op->sb->deferred : &op->sb->ops, op);
		op->deferred = false;
		op->sb = NULL;
	}
}

/* Appends one line to the client stream; `raw` output bytes ride on it for credit. */
void op_emit(struct op *op, const char *line, size_t n, uint32_t raw)
{
	buf_put(&op->out, line, n);
	op->out_written += n;
	op->emitted_ms = mono_ms();
	if (raw) {
		if (op->ring_n == OP_CREDIT_RING) {
			op->ring[OP_CREDIT_RING - 1].end = op->out_written;
			op->ring[OP_CREDIT_RING - 1].raw += raw;
		} else {
			op->ring[op->ring_n].end = op->out_written;
			op->ring[op->ring_n].raw = raw;
			op->ring_n++;
		}
	}
	op_wake(op);
}

void op_emit_json(struct op *op, json_t *ev)
{
	char *s = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (!s)
		return;
	size_t n = strlen(s);
	s[n] = '\n';
	op_emit(op, s, n + 1, 0);
	free(s);
}

void op_keepalive(struct op *op, int64_t now_ms)
{
	if (!op->stream || !op->responding || op->eof || op->kind == OP_READ)
		return;
	if (op->emitted_ms == 0)
		op->emitted_ms = now_ms;
	if (now_ms - op->emitted_ms >= STREAM_KEEPALIVE_MS)
		op_emit_json(op, json_pack("{s:s}", "type", "keepalive"));
}

bool op_check_gone(struct op *op)
{
	if (!op->suspended || !op->conn || op->gone)
		return op->gone;
	int fd = op->front->fd(op->conn);
	if (fd < 0)
		return false;
	/* the peer's FIN (or a reset) is visible without reading what it may have sent */
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return false;
	op->gone = true;
	op_wake(op);
	return true;
}

void op_fail(struct op *op, const struct err *e)
{
	if (op->responding) {
		if (op->kind == OP_READ) {
			op->failed = true;
		} else {
			json_t *ev = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "code", err_code(e->kind), "message",
					       e->msg);
			if (ev && e->state[0])
				json_object_set_new(json_object_get(ev, "error"), "state", json_string(e->state));
			op_emit_json(op, ev);
		}
		op->eof = true;
		op_wake(op);
		return;
	}
	if (op->err.kind == 0)
		op->err = *e;
	op_finish(op);
}

void op_fail_list(struct op **head, const struct err *e)
{
	while (*head) {
		struct op *op = *head;
		op_unlink(op); /* takes it off the list */
		op_fail(op, e);
	}
}

void op_fail_process_requests(struct sandbox *sb, const struct err *e)
{
	for (struct proc *p = sb->procs; p; p = p->next) {
		while (p->readers) {
			struct op *op = p->readers;
			op_unlink(op);
			op_fail(op, e);
		}
		op_fail_list(&p->waiters, e);
	}
}

/* The captured-output budget of op's tenant: the administrator's own, or its tenant's while it
 * has requests in flight (this one among them); NULL if the tenant is unknown. */
uint64_t *capture_budget(struct op *op)
{
	if (!op->tenant[0])
		return &op->d->admin_captured;
	for (struct tenant_load *t = op->d->loads; t; t = t->next)
		if (strcmp(t->tenant, op->tenant) == 0)
			return &t->captured;
	return NULL;
}

void op_release_capture(struct op *op)
{
	uint64_t *budget = op->exec.captured ? capture_budget(op) : NULL;
	if (budget)
		*budget -= op->exec.captured < *budget ? op->exec.captured : *budget;
	op->exec.captured = 0;
}

void op_proc_credit(struct sandbox *sb, struct proc *p)
{
	uint32_t hold = 0;
	for (const struct op *r = p->readers; r; r = r->next_reader)
		if (r->exec.untaken > hold)
			hold = r->exec.untaken;
	if (!p->readers && !p->drop)
		hold = p->pending_out;
	if (p->owed > hold) {
		chan_credit(&sb->chan, p->pid, p->owed - hold);
		p->owed = hold;
	}
}

void op_return_credit(struct op *op, uint32_t credit)
{
	if (!op->sb || !credit)
		return;
	if (op->kind == OP_READ || op->kind == OP_WATCH) {
		uint32_t give = credit < op->list.owed ? credit : op->list.owed;
		op->list.owed -= give;
		chan_credit(&op->sb->chan, op->tag, give);
	} else if (op->proc) {
		op->exec.untaken -= credit < op->exec.untaken ? credit : op->exec.untaken;
		op_proc_credit(op->sb, op->proc);
	}
}

/* A deadline passed: a deferred request gives up on the agent; a wait answers with the process
 * as it is now. */
static void op_deadline(struct timer *t)
{
	struct op *op = (struct op *)((char *)t - offsetof(struct op, timer));
	if (op->deferred) {
		struct err e = { 0 };
		err_set(&e, ERR_UNAVAILABLE, ENOTCONN, "sandbox %s: its agent did not connect", op->sbid);
		op_unlink(op);
		op_fail(op, &e);
		return;
	}
	if (op->proc)
		op->json = proc_json(op->proc);
	op_unlink(op);
	op_finish(op);
}

void op_set_deadline(struct op *op, int64_t when_ms)
{
	op->timer.fn = op_deadline;
	loop_timer_add(&op->d->loop, &op->timer, when_ms);
}

size_t op_take(struct op *op, uint8_t *dst, size_t max, uint32_t *credit)
{
	size_t n = buf_avail(&op->out);
	if (n > max)
		n = max;
	memcpy(dst, buf_head(&op->out), n);
	buf_consume(&op->out, n);
	op->out_read += n;
	uint32_t give = 0;
	unsigned k = 0;
	while (k < op->ring_n && op->ring[k].end <= op->out_read)
		give += op->ring[k++].raw;
	if (k) {
		memmove(op->ring, op->ring + k, (op->ring_n - k) * sizeof(op->ring[0]));
		op->ring_n -= k;
	}
	*credit = give;
	if (op->on_take)
		op->on_take(op);
	return n;
}

void op_free(struct op *op)
{
	op_release_capture(op);
	free(op->list.after);
	free(op->list.last_name);
	buf_free(&op->body);
	buf_free(&op->out);
	buf_free(&op->exec.cap[0]);
	buf_free(&op->exec.cap[1]);
	json_decref(op->json);
	json_decref(op->query);
	json_decref(op->spec);
	free(op->what);
	free(op);
}

/*
 * daemon/core/peer.c - the agent messages spaced takes, and the agent's
 * liveness (see peer.h).
 *
 * A connection goes OPEN -> GREETED (its hello taken; spaced asks for the
 * process listing) -> READY (the listing ended: requests may go to it).
 * When it drops, requests waiting for a reply fail with 503, while process
 * readers stay attached: the agent keeps the processes running and resumes
 * their output on its next connection.
 */
#include "daemon/core/peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/proc.h"
#include "daemon/core/isolation.h"
#include "daemon/core/stats.h"
#include "daemon/driver/driver.h"

#define ANY (CHAN_IN(CHAN_GREETED) | CHAN_IN(CHAN_READY))
#define READY CHAN_IN(CHAN_READY)
/* a process's own stream, read on after a suspend from what the VM's port held (chan.h) */
#define CARRIED (ANY | CHAN_IN(CHAN_TAIL))

static void sock_path(const struct sandbox *sb, char *out, size_t n)
{
	snprintf(out, n, "%s/sock/agent.sock", sb->conf.dir);
}

/* Fails every request waiting on a reply from the agent of sb (a folder watch among them): with
 * the state when a suspend (or a snapshot's) detached the agent, else as unavailable. */
static void fail_pending(struct sandbox *sb, const char *why)
{
	struct err e = { 0 };
	if (sb->state == SB_SUSPENDING) {
		err_set(&e, ERR_CONFLICT, EBUSY, "sandbox %s is being suspended", sb->id);
		snprintf(e.state, sizeof(e.state), "%s", sb_state_name(sb->state));
	} else {
		err_set(&e, ERR_UNAVAILABLE, EPIPE, "sandbox %s: %s", sb->id, why);
	}
	op_fail_list(&sb->ops, &e);
}

static void on_dropped(void *ctx, const char *why)
{
	struct sandbox *sb = ctx;
	struct daemon *d = sb->d;
	if (why && why[0])
		log_warn("sandbox %s: dropped the agent's connection: %s", sb->id, why);
	else if (!sb->dead)
		log_info("sandbox %s: agent disconnected", sb->id);
	sb->peer.ping_ms = 0;
	sb->peer.listing = false;
	sb->peer.relist = false;
	fail_pending(sb, why && why[0] ? why : "the agent disconnected");
	pthread_cond_broadcast(&d->cond);
	/* Unasked (not a detach: that happens in suspending): did the sandbox die? */
	if (sb->state == SB_RUNNING && !sb->dead && !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE) &&
	    d->peer_events && d->peer_events->lost)
		d->peer_events->lost(d, sb);
}

/* Wakes the requests writing to p's stdin: credit came, or the queue has room again. */
static void wake_stdin(struct proc *p)
{
	for (struct op *w = p->waiters; w; w = w->next)
		if (w->kind == OP_STDIN)
			op_wake(w);
}

static void on_drained(void *ctx)
{
	struct sandbox *sb = ctx;
	/* bulk senders that waited for room go on */
	for (struct op *op = sb->ops; op; op = op->next)
		if (op->kind == OP_WRITE)
			op_wake(op);
	for (struct proc *p = sb->procs; p; p = p->next)
		wake_stdin(p);
}

/* Asks for the process listing on PEER_TAG_HELLO_PS, or for one more after the one under way. */
static void ask_listing(struct sandbox *sb)
{
	if (sb->peer.listing) {
		sb->peer.relist = true;
		return;
	}
	if (chan_send_early(&sb->chan, SP_H_PS, PEER_TAG_HELLO_PS, NULL, 0) == 0)
		sb->peer.listing = true;
}

void peer_send_clock(struct sandbox *sb)
{
	if (!(sb->peer.features & SP_FEATURE_CLOCK))
		return;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint8_t clk[sizeof(struct sp_clock)] = { 0 };
	frame_put_u64(clk + offsetof(struct sp_clock, sec), (uint64_t)now.tv_sec);
	frame_put_u32(clk + offsetof(struct sp_clock, nsec), (uint32_t)now.tv_nsec);
	int rc = chan_send_early(&sb->chan, SP_H_CLOCK, PEER_TAG_CLOCK, clk, sizeof(clk));
	if (rc < 0 && rc != -ENOTCONN) /* no connection: the next hello sends it */
		log_warn("sandbox %s: cannot give its agent the time: %s", sb->id, strerror(-rc));
}

static int on_hello(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	struct sp_hello h;
	memcpy(&h, f->payload, sizeof(h));
	if (h.version < SP_PROTO_MIN_VERSION || h.version > SP_PROTO_VERSION) {
		snprintf(why, CHAN_MAX_WHY, "the agent speaks protocol %u, not %u..%u", h.version,
			 SP_PROTO_MIN_VERSION, SP_PROTO_VERSION);
		return -EPROTO;
	}
	chan_advance(&sb->chan, CHAN_GREETED);
	sb->peer.version = h.version;
	sb->peer.features = 0;
	if (f->len >= sizeof(h) + sizeof(struct sp_hello_ext))
		sb->peer.features = frame_get_u32(f->payload + sizeof(h) + offsetof(struct sp_hello_ext, features));
	if (sb->peer.boot_id) /* it said hello before: a reconnection */
		stats_add(sb->d->stats, STATS_AGENT_RECONNECTS, 1);
	sb->peer.boot_id = h.boot_id;
	sb->peer.ping_ms = 0;
	/* A fresh connection starts every window afresh: nothing is owed. */
	for (struct proc *p = sb->procs; p; p = p->next) {
		p->owed = 0;
		p->stdin_credit = SP_WINDOW;
		p->listed = false; /* until this agent's listing names it */
	}
	ask_listing(sb);
	peer_send_clock(sb); /* a VM restored from an image wakes up at the time the image was made */
	return 0;
}

/* The record of the process a frame names, made if new; NULL (a protocol error) past the limit. */
static struct proc *named(struct sandbox *sb, uint32_t pid, char *why)
{
	bool known = proc_find(sb, pid) != NULL;
	struct proc *p = proc_get(sb, pid);
	if (p && !known)
		p->hearsay = true;
	if (!p)
		snprintf(why, CHAN_MAX_WHY, "the agent names more than %d processes", SANDBOX_MAX_PROCS_TRACKED);
	return p;
}

static int on_proc(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	if (f->chan != PEER_TAG_HELLO_PS || !sb->peer.listing) {
		snprintf(why, CHAN_MAX_WHY, "a process record with no listing asked for");
		return -EPROTO;
	}
	struct sp_proc pr;
	memcpy(&pr, f->payload, sizeof(pr));
	size_t off = sizeof(pr);
	const char *cmd = frame_str(f, &off);
	struct proc *p = named(sb, pr.pid, why);
	if (!p)
		return -EPROTO;
	p->listed = true;
	if (cmd && !p->cmd)
		p->cmd = strdup(cmd);
	p->started_ms = (int64_t)pr.started_ms;
	if (pr.state == SP_PROC_EXITED && !p->exited) {
		p->exited = true;
		p->code = pr.code;
		p->signo = pr.signo;
	}
	return 0;
}

/* The listing asked for on hello ended: the sandbox is ready for requests about its processes. */
static void listing_ended(struct sandbox *sb)
{
	struct daemon *d = sb->d;
	sb->peer.listing = false;
	if (sb->chan.phase == CHAN_GREETED)
		proc_forget_unlisted(sb);
	proc_prune(sb);
	if (sb->chan.phase == CHAN_GREETED) {
		chan_advance(&sb->chan, CHAN_READY);
		pthread_cond_broadcast(&d->cond);
		if (d->peer_events && d->peer_events->ready)
			d->peer_events->ready(d, sb);
	}
	if (sb->peer.relist) {
		sb->peer.relist = false;
		ask_listing(sb);
	}
}

/* The request op waiting under the frame's tag, or NULL. */
static struct op *by_tag(struct sandbox *sb, uint32_t tag)
{
	for (struct op *op = sb->ops; op; op = op->next)
		if (op->tag == tag)
			return op;
	return NULL;
}

/* A frame for a request tag: to the request waiting for it, if any. */
static int on_reply(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	if (!(f->chan & SP_CHAN_REQ)) {
		snprintf(why, CHAN_MAX_WHY, "message type %u for a pid, not a request", f->type);
		return -EPROTO;
	}
	if (f->chan == PEER_TAG_PING) {
		if (f->type == SP_A_PONG && sb->peer.ping_ms) {
			sb->peer.ping_ms = 0;
			pthread_cond_broadcast(&sb->d->cond);
		}
		return 0;
	}
	if (f->chan == PEER_TAG_CLOCK) {
		if (f->type == SP_A_ERROR)
			log_warn("sandbox %s: its agent would not take the time: %.*s", sb->id,
				 f->len > sizeof(struct sp_error) ? (int)(f->len - sizeof(struct sp_error)) : 0,
				 (const char *)f->payload + sizeof(struct sp_error));
		return 0;
	}
	if (f->chan == PEER_TAG_HELLO_PS) {
		if (f->type == SP_A_END && sb->peer.listing)
			listing_ended(sb);
		return 0;
	}
	if (sb->chan.phase != CHAN_READY)
		return 0; /* replies belong to requests of an earlier connection, all failed */
	struct op *op = by_tag(sb, f->chan);
	if (op)
		return op_on_frame(op, f, why);
	/* A reply to a request that gave up. A process it started runs on all the same: record it,
	 * and ask for the listing that names its command. */
	if (f->type == SP_A_STARTED) {
		struct sp_started st;
		memcpy(&st, f->payload, sizeof(st));
		if (!proc_find(sb, st.pid)) {
			struct proc *p = named(sb, st.pid, why);
			if (!p)
				return -EPROTO;
			p->listed = true;
			ask_listing(sb);
		}
	}
	return 0;
}

/* Hands a frame of p's (output, or a memory report) to every reader of p, or keeps it for the
 * next one (proc_keep: bounded per process and per sandbox); then gives back the credit no
 * reader holds. */
static int deliver(struct sandbox *sb, struct proc *p, const struct frame *f, char *why)
{
	int rc = 0;
	if (p->readers) {
		for (struct op *r = p->readers, *next; r; r = next) {
			next = r->next_reader;
			op_on_output(r, f->type, f->payload, f->len);
		}
	} else {
		/* a real agent keeps unread output within its credit: two windows per process */
		rc = proc_keep(sb, p, f->type, f->payload, f->len);
		if (rc == -EPROTO)
			snprintf(why, CHAN_MAX_WHY, "more unread output than credit allows");
	}
	op_proc_credit(sb, p);
	return rc;
}

static int on_output(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	struct proc *p = named(sb, f->chan, why);
	if (!p)
		return -EPROTO;
	if (p->owed + f->len > SP_WINDOW) {
		snprintf(why, CHAN_MAX_WHY, "output of process %u beyond its credit", p->pid);
		return -EPROTO;
	}
	p->owed += f->len;
	return deliver(sb, p, f, why);
}

/* The memory watcher killed a process of p's: an event for whoever reads p's output, kept with
 * its unread output until someone does. Bounded like that output (a real agent sends one per
 * kill, and waits for each victim to go before the next). */
static int on_oom(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	struct proc *p = named(sb, f->chan, why);
	if (!p)
		return -EPROTO;
	size_t off = sizeof(struct sp_oom);
	if (!frame_str(f, &off)) {
		snprintf(why, CHAN_MAX_WHY, "memory report of process %u without a command", p->pid);
		return -EPROTO;
	}
	struct sp_oom o;
	memcpy(&o, f->payload, sizeof(o));
	p->oom_kills++;
	if (o.victim == p->pid)
		p->oom_killed = true;
	return deliver(sb, p, f, why);
}

static int on_exit_frame(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	struct proc *p = named(sb, f->chan, why);
	if (!p)
		return -EPROTO;
	struct sp_exit x;
	memcpy(&x, f->payload, sizeof(x));
	p->exited = true;
	p->code = x.code;
	p->signo = x.signo;
	p->timed_out = (x.flags & SP_EXIT_TIMEDOUT) != 0;
	p->oom_killed = (x.flags & SP_EXIT_OOM) != 0;
	while (p->readers) /* each reader's exit unlinks it */
		op_on_exit(p->readers, p);
	while (p->waiters) {
		struct op *w = p->waiters;
		if (w->kind == OP_WAIT)
			w->json = proc_json(p);
		op_unlink(w);
		if (w->kind == OP_STDIN) {
			/* what it sent was taken; it answers 409 only if its body holds more */
			op_wake(w);
		} else {
			op_finish(w);
		}
	}
	proc_prune(sb);
	return 0;
}

static int on_credit(void *ctx, const struct frame *f, char *why)
{
	struct sandbox *sb = ctx;
	if (f->chan & SP_CHAN_REQ)
		return on_reply(ctx, f, why); /* upload credit */
	struct proc *p = proc_find(sb, f->chan);
	if (!p)
		return 0; /* stdin credit of a process forgotten since */
	uint32_t more = frame_get_u32(f->payload);
	if (more > SP_WINDOW || p->stdin_credit + more > SP_WINDOW) {
		snprintf(why, CHAN_MAX_WHY, "stdin credit of process %u beyond the window", p->pid);
		return -EPROTO;
	}
	p->stdin_credit += more;
	wake_stdin(p);
	return 0;
}

static const struct chan_msg msgs[] = {
	{ SP_A_HELLO, sizeof(struct sp_hello), CHAN_IN(CHAN_OPEN), on_hello },
	{ SP_A_PONG, 0, ANY, on_reply },
	{ SP_A_STARTED, sizeof(struct sp_started), READY, on_reply },
	{ SP_A_STDOUT, 0, CARRIED, on_output },
	{ SP_A_STDERR, 0, CARRIED, on_output },
	{ SP_A_EXIT, sizeof(struct sp_exit), CARRIED, on_exit_frame },
	{ SP_A_ERROR, sizeof(struct sp_error), ANY, on_reply },
	{ SP_A_OK, 0, ANY, on_reply },
	{ SP_A_CREDIT, sizeof(struct sp_credit), ANY, on_credit },
	{ SP_A_PROC, sizeof(struct sp_proc), ANY, on_proc },
	{ SP_A_STAT, sizeof(struct sp_stat), ANY, on_reply },
	{ SP_A_DATA, 0, ANY, on_reply },
	{ SP_A_END, 0, ANY, on_reply },
	{ SP_A_OOM, sizeof(struct sp_oom), CARRIED, on_oom },
	{ SP_A_PORT, sizeof(struct sp_port), ANY, on_reply },
	{ SP_A_EVENT, sizeof(struct sp_event), ANY, on_reply },
};

const struct chan_proto peer_proto = {
	.msgs = msgs,
	.nmsgs = sizeof(msgs) / sizeof(msgs[0]),
	.dropped = on_dropped,
	.drained = on_drained,
};

void peer_init(struct sandbox *sb)
{
	chan_init(&sb->chan, &peer_proto, sb);
	memset(&sb->peer, 0, sizeof(sb->peer));
	sb->peer.probe_ms = mono_ms(); /* the first look at PID 1 comes a period after it starts */
}

int peer_listen(struct daemon *d, struct sandbox *sb)
{
	char dir[600], path[640];
	const struct driver_slot *k = isolation_find(d, sb->conf.isolation);
	const char *dial = k && k->ops ? k->ops->agent_dial : NULL;
	if (dial) { /* the runtime listens (QEMU, for a microVM): spaced connects */
		snprintf(path, sizeof(path), "%s/%s", sb->conf.dir, dial);
		return chan_dial(&sb->chan, &d->loop, path);
	}
	snprintf(dir, sizeof(dir), "%s/sock", sb->conf.dir);
	mkdir(dir, 0700);
	sock_path(sb, path, sizeof(path));
	return chan_listen(&sb->chan, &d->loop, path);
}

void peer_unlisten(struct sandbox *sb)
{
	char path[640]; /* a channel that dials only forgets its peer's path */
	sock_path(sb, path, sizeof(path));
	chan_unlisten(&sb->chan, path);
}

int peer_detach(struct sandbox *sb)
{
	if (sb->chan.dial[0]) {
		/* A microVM's checkpoint keeps the agent's side of the port, queue and all, in its
		 * memory: nothing is asked of the agent; the connection ends when QEMU does, after
		 * everything QEMU passed on has been read, and what the port still held comes
		 * after the restore, ahead of the next connection's A_OPEN. */
		chan_keep_tail(&sb->chan, true);
		peer_unlisten(sb);
		return 1;
	}
	peer_unlisten(sb);
	return chan_send(&sb->chan, SP_H_DETACH, 0, NULL, 0, NULL, 0);
}

int peer_request(struct daemon *d, struct sandbox *sb, const char *what, uint8_t type, const void *a, size_t na,
		 const void *b, size_t nb, int timeout_ms, struct err *e)
{
	struct op *call = calloc(1, sizeof(*call));
	if (!call)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	call->d = d;
	call->kind = OP_CALL;
	call->long_call = true; /* bounded by timeout_ms instead of the liveness ping */
	op_link(call, sb);
	int rc = 0;
	if (chan_send(&sb->chan, type, call->tag, a, na, b, nb) == 0) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!call->done && daemon_wait(d, &until) != ETIMEDOUT)
			;
		if (!call->done)
			rc = err_set(e, ERR_INTERNAL, ETIMEDOUT, "sandbox %s: %s did not finish", sb->id, what);
		else if (call->err.kind)
			rc = err_set(e, call->err.kind, EIO, "%s", call->err.msg);
	} else {
		rc = err_set(e, ERR_UNAVAILABLE, ENOTCONN, "sandbox %s: cannot reach its agent", sb->id);
	}
	op_unlink(call);
	op_free(call);
	return rc;
}

bool peer_ready(const struct sandbox *sb)
{
	return chan_ready(&sb->chan);
}

bool peer_awaited(const struct sandbox *sb)
{
	if (sb->ops)
		return true;
	for (const struct proc *p = sb->procs; p; p = p->next)
		if (!p->exited && (p->readers || p->waiters))
			return true;
	return false;
}

/* The clients waiting on sb: one that left is let go, a silent stream gets a keepalive. */
static void watch_clients(struct sandbox *sb, int64_t now)
{
	for (struct proc *p = sb->procs; p; p = p->next) {
		for (struct op *r = p->readers; r; r = r->next_reader)
			if (!op_check_gone(r))
				op_keepalive(r, now);
		for (struct op *w = p->waiters; w; w = w->next)
			op_check_gone(w);
	}
	for (struct op *op = sb->ops; op; op = op->next)
		if (!op_check_gone(op))
			op_keepalive(op, now); /* a watch's stream */
	for (struct op *op = sb->deferred; op; op = op->next)
		op_check_gone(op);
}

/* Whether the agent of sb serves a call it may rightly be silent in (sync(2)). */
static bool in_long_call(const struct sandbox *sb)
{
	for (const struct op *op = sb->ops; op; op = op->next)
		if (op->long_call)
			return true;
	return false;
}

/*
 * Liveness of an agent someone waits on: silent for AGENT_PING_AFTER_MS, it is pinged; a ping
 * unanswered for AGENT_DEADLINE_MS hands the sandbox to sandbox_unresponsive. Answers can be
 * forged by whatever holds the socket, so PID 1 is also looked at from the host every
 * AGENT_PROBE_MS (sandbox_probe). Only a running sandbox counts, outside long calls (bounded by
 * their own deadline): the clock starts afresh after a pause, a suspend or a sync.
 */
static void watch_agent(struct daemon *d, struct sandbox *sb, int64_t now)
{
	struct peer *pe = &sb->peer;
	if (sb->state != SB_RUNNING || sb->chan.fd < 0 || in_long_call(sb) || !peer_awaited(sb)) {
		pe->ping_ms = 0;
		sb->chan.last_rx_ms = now;
		pe->probe_ms = now;
		return;
	}
	if (now - pe->probe_ms >= AGENT_PROBE_MS && !pe->probing) {
		pe->probe_ms = now;
		if (d->peer_events && d->peer_events->probe)
			d->peer_events->probe(d, sb);
	}
	if (!chan_ready(&sb->chan))
		return;
	if (pe->ping_ms) {
		if (now - pe->ping_ms >= AGENT_DEADLINE_MS && !pe->nudging && d->peer_events &&
		    d->peer_events->unresponsive)
			d->peer_events->unresponsive(d, sb);
	} else if (now - sb->chan.last_rx_ms >= AGENT_PING_AFTER_MS) {
		if (chan_send(&sb->chan, SP_H_PING, PEER_TAG_PING, NULL, 0, NULL, 0) == 0)
			pe->ping_ms = now;
	}
}

void peer_tick(struct daemon *d, struct sandbox *sb, int64_t now)
{
	/* a channel that dials connects again after a drop; a runtime that is not there refuses.
	 * An H_OPEN that the port left unread (sent while the agent had it closed, it waits in
	 * QEMU until something wakes QEMU's reader) is sent again on a new connection: while the
	 * sandbox runs, and while it is being made, whose create waits for the hello. */
	if (sb->state == SB_RUNNING || sb->state == SB_CREATING) {
		if (chan_open_overdue(&sb->chan, now, AGENT_OPEN_MS))
			chan_drop(&sb->chan, "the agent did not answer H_OPEN");
		chan_redial(&sb->chan);
	}
	watch_clients(sb, now);
	watch_agent(d, sb, now);
}

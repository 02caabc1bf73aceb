/*
 * daemon/io/agent.c - the I/O thread: agent sockets, frame reading and writing,
 * and dispatch of each frame to the op or process it is for.
 *
 * Per sandbox there is a listening Unix socket (bind-mounted into the
 * sandbox) and at most one connection. A new connection replaces an old one
 * (the agent only reconnects after it saw the old one fail). When the
 * connection drops, requests waiting for a reply fail with 503, while process
 * readers stay attached: the agent keeps the processes running and resumes
 * their output on its next connection.
 */
#include "daemon/io/agent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/frame.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/lifecycle.h"
#include "daemon/base/reaper.h"
#include "daemon/core/sandbox.h"
#include "daemon/io/timer.h"

#define TAG_HELLO_PS (SP_CHAN_REQ | AGENT_TAG_HELLO_PS)
#define TAG_PING (SP_CHAN_REQ | AGENT_TAG_PING)
#define EXPIRY_PERIOD_MS 1000 /* how often sandbox timeouts are checked */
#define RBUF_MAX (2 * (SP_HDR_SIZE + SP_MAX_PAYLOAD))

/* epoll data: the sandbox pointer, with bit 0 set for its listening socket. */
#define EV_LISTEN 1u
#define EV_REAPER 2u /* the SIGCHLD signalfd (never a sandbox pointer: those are aligned) */

static void chan_init(struct chan *c)
{
	memset(c, 0, sizeof(*c));
	c->listen_fd = -1;
	c->fd = -1;
}

struct proc *agent_proc(struct sandbox *sb, uint32_t pid, bool create)
{
	for (struct proc *p = sb->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	if (!create)
		return NULL;
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->started_ms = now_ms();
	p->stdin_credit = SP_WINDOW; /* a fresh record: the agent's window for it is whole */
	p->next = sb->procs;
	sb->procs = p;
	return p;
}

static void arm(struct daemon *d, struct sandbox *sb, bool out)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0), .data.ptr = sb };
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, sb->chan.fd, &ev);
	sb->chan.want_out = out;
}

/* Writes what it can of the queue; arms EPOLLOUT for the rest. [L] */
static void flush(struct daemon *d, struct sandbox *sb)
{
	struct chan *c = &sb->chan;
	while (buf_avail(&c->wq) > 0) {
		ssize_t n = send(c->fd, buf_head(&c->wq), buf_avail(&c->wq), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!c->want_out)
					arm(d, sb, true);
				return;
			}
			/* The read side notices the broken connection and cleans up. */
			buf_consume(&c->wq, buf_avail(&c->wq));
			return;
		}
		buf_consume(&c->wq, (size_t)n);
	}
	if (c->want_out)
		arm(d, sb, false);
}

int agent_send(struct daemon *d, struct sandbox *sb, uint8_t type, uint32_t chan,
	       const void *a, size_t na, const void *b, size_t nb)
{
	struct chan *c = &sb->chan;
	if (c->fd < 0 || !c->hello)
		return -ENOTCONN;
	if (na + nb > SP_MAX_PAYLOAD)
		return -E2BIG;
	uint8_t hdr[SP_HDR_SIZE];
	frame_put_header(hdr, type, chan, (uint32_t)(na + nb));
	if (buf_put(&c->wq, hdr, sizeof(hdr)) || buf_put(&c->wq, a, na) || buf_put(&c->wq, b, nb))
		return -ENOMEM;
	if (!c->want_out)
		flush(d, sb);
	return 0;
}

void agent_credit(struct daemon *d, struct sandbox *sb, uint32_t chan, uint32_t bytes)
{
	if (bytes == 0)
		return;
	uint8_t p[4];
	frame_put_u32(p, bytes);
	agent_send(d, sb, SP_H_CREDIT, chan, p, sizeof(p), NULL, 0);
}

int agent_listen(struct daemon *d, struct sandbox *sb)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/sock", sb->dir);
	mkdir(dir, 0700);
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/agent.sock", dir) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	sb->chan.listen_fd = fd;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)(uintptr_t)sb | EV_LISTEN };
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return 0;
}

/* Fails every request waiting on the agent of sb. [L] */
static void fail_pending(struct sandbox *sb, const char *why)
{
	struct err e = { 0 };
	err_set(&e, 503, "unavailable", EPIPE, "sandbox %s: %s", sb->id, why);
	while (sb->ops) {
		struct op *op = sb->ops;
		op_unlink(op);
		op_fail(op, &e);
	}
}

static void disconnect(struct daemon *d, struct sandbox *sb)
{
	struct chan *c = &sb->chan;
	if (c->fd < 0)
		return;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->hello = false;
	c->listed = false;
	c->want_out = false;
	c->ping_ms = 0;
	buf_free(&c->wq);
	buf_free(&c->rbuf);
	fail_pending(sb, "the agent disconnected");
	pthread_cond_broadcast(&d->cond);
	/* Unasked (not a detach: that happens in suspending): did the sandbox die? */
	if (sb->state == SB_RUNNING && !sb->dead && !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE))
		sandbox_watch(d, sb);
}

void agent_unlisten(struct daemon *d, struct sandbox *sb)
{
	if (sb->chan.listen_fd < 0)
		return;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, sb->chan.listen_fd, NULL);
	close(sb->chan.listen_fd);
	sb->chan.listen_fd = -1;
	char path[600];
	snprintf(path, sizeof(path), "%s/sock/agent.sock", sb->dir);
	unlink(path);
}

int agent_detach(struct daemon *d, struct sandbox *sb)
{
	agent_unlisten(d, sb);
	return agent_send(d, sb, SP_H_DETACH, 0, NULL, 0, NULL, 0);
}

static void on_accept(struct daemon *d, struct sandbox *sb)
{
	int fd = accept4(sb->chan.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	daemon_lock(d);
	if (sb->dead) {
		close(fd);
		daemon_unlock(d);
		return;
	}
	disconnect(d, sb);
	sb->chan.fd = fd;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = sb };
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
	daemon_unlock(d);
}

static void on_hello(struct daemon *d, struct sandbox *sb, const struct frame *f)
{
	struct sp_hello h;
	if (frame_need(f, sizeof(h)) < 0)
		return;
	memcpy(&h, f->payload, sizeof(h));
	if (h.version != SP_PROTO_VERSION) {
		log_warn("sandbox %s: agent speaks protocol %u, not %u", sb->id, h.version, SP_PROTO_VERSION);
		return;
	}
	sb->chan.hello = true;
	sb->chan.boot_id = h.boot_id;
	/* A fresh connection starts every window afresh: nothing is owed. */
	for (struct proc *p = sb->procs; p; p = p->next) {
		p->owed = 0;
		p->stdin_credit = SP_WINDOW;
	}
	agent_send(d, sb, SP_H_PS, TAG_HELLO_PS, NULL, 0, NULL, 0);
	/* requests that waited for this agent go on once its process list is in (below) */
}

/* The listing asked for on hello: brings the process table up to date. */
static void on_hello_ps(struct sandbox *sb, const struct frame *f)
{
	struct sp_proc pr;
	if (f->type == SP_A_END) {
		/* the table is complete: the sandbox is ready for requests about its processes */
		sb->chan.listed = true;
		return;
	}
	if (f->type != SP_A_PROC || frame_need(f, sizeof(pr)) < 0)
		return;
	memcpy(&pr, f->payload, sizeof(pr));
	size_t off = sizeof(pr);
	const char *cmd = frame_str(f, &off);
	struct proc *p = agent_proc(sb, pr.pid, true);
	if (!p)
		return;
	if (cmd && !p->cmd)
		p->cmd = strdup(cmd);
	p->started_ms = (int64_t)pr.started_ms;
	if (pr.state == SP_PROC_EXITED && !p->exited) {
		p->exited = true;
		p->code = pr.code;
		p->signo = pr.signo;
	}
}

static void on_exit_frame(struct sandbox *sb, struct proc *p, const struct frame *f)
{
	struct sp_exit x;
	if (frame_need(f, sizeof(x)) < 0)
		return;
	memcpy(&x, f->payload, sizeof(x));
	p->exited = true;
	p->code = x.code;
	p->signo = x.signo;
	p->timed_out = (x.flags & SP_EXIT_TIMEDOUT) != 0;
	if (p->reader)
		op_on_exit(p->reader, p);
	while (p->waiters) {
		struct op *w = p->waiters;
		if (w->kind == OP_WAIT)
			w->json = sandbox_proc_json(p);
		op_unlink(w);
		if (w->kind == OP_STDIN) {
			struct err e = { 0 };
			err_set(&e, 409, "conflict", ESRCH, "process %u exited before taking all of its stdin", p->pid);
			op_fail(w, &e);
		} else {
			op_finish(w);
		}
	}
	sandbox_prune_procs(sb);
}

static int count_procs(const struct sandbox *sb)
{
	int n = 0;
	for (const struct proc *q = sb->procs; q; q = q->next)
		n++;
	return n;
}

static void dispatch(struct daemon *d, struct sandbox *sb, const struct frame *f)
{
	if (f->type == SP_A_HELLO) {
		on_hello(d, sb, f);
		return;
	}
	if (!sb->chan.hello)
		return;
	if (f->chan & SP_CHAN_REQ) {
		if (f->chan == TAG_PING)
			return; /* its arrival was noted on reading */
		if (f->chan == TAG_HELLO_PS) {
			on_hello_ps(sb, f);
			if (sb->chan.listed) {
				pthread_cond_broadcast(&d->cond);
				if (sb->state == SB_RUNNING && sb->deferred)
					lifecycle_resumed(d, sb, NULL);
			}
			return;
		}
		for (struct op *op = sb->ops; op; op = op->next)
			if (op->tag == f->chan) {
				op_on_frame(op, f);
				return;
			}
		/* A reply to a request that gave up. A process it started runs on all the same:
		 * record it, and ask for the listing that names its command. */
		struct sp_started st;
		if (f->type == SP_A_STARTED && frame_need(f, sizeof(st)) == 0) {
			memcpy(&st, f->payload, sizeof(st));
			if (!agent_proc(sb, st.pid, false) && count_procs(sb) < SANDBOX_MAX_PROCS_TRACKED &&
			    agent_proc(sb, st.pid, true))
				agent_send(d, sb, SP_H_PS, TAG_HELLO_PS, NULL, 0, NULL, 0);
		}
		return;
	}
	/* Whatever speaks on the agent's socket is inside the sandbox, so it is held to the
	 * protocol: a bounded number of process records, and never more output than credit. */
	struct proc *p = agent_proc(sb, f->chan, false);
	if (!p) {
		if (count_procs(sb) >= SANDBOX_MAX_PROCS_TRACKED) {
			log_warn("sandbox %s: the agent names more than %d processes; dropping the connection", sb->id,
				 SANDBOX_MAX_PROCS_TRACKED);
			disconnect(d, sb);
			return;
		}
		p = agent_proc(sb, f->chan, true);
	}
	if (!p)
		return;
	switch (f->type) {
	case SP_A_STDOUT:
	case SP_A_STDERR:
		if (p->owed + f->len > SP_WINDOW) {
			log_warn("sandbox %s: output of process %u beyond its credit; dropping the connection", sb->id,
				 p->pid);
			disconnect(d, sb);
			return;
		}
		p->owed += f->len;
		if (p->reader) {
			op_on_output(p->reader, f->type, f->payload, f->len);
		} else {
			/* unread output waits here; a real agent keeps it within two windows per process */
			if (buf_avail(&p->pending) + f->len > 2 * SP_WINDOW || sb->pending_bytes + f->len > SANDBOX_MAX_PENDING) {
				log_warn("sandbox %s: more unread output than credit allows; dropping the connection", sb->id);
				disconnect(d, sb);
				return;
			}
			uint8_t h[5] = { f->type };
			frame_put_u32(h + 1, f->len);
			buf_put(&p->pending, h, sizeof(h));
			buf_put(&p->pending, f->payload, f->len);
			sb->pending_bytes += f->len;
			p->pending_raw += f->len;
		}
		break;
	case SP_A_EXIT:
		on_exit_frame(sb, p, f);
		break;
	case SP_A_CREDIT:
		/* stdin credit; a request writing to stdin waits among the waiters */
		if (frame_need(f, 4) < 0)
			break;
		p->stdin_credit += frame_get_u32(f->payload);
		for (struct op *w = p->waiters; w; w = w->next)
			if (w->kind == OP_STDIN)
				op_wake(w);
		break;
	default:
		break;
	}
}

static void on_readable(struct daemon *d, struct sandbox *sb)
{
	struct chan *c = &sb->chan;
	uint8_t *dst = buf_reserve(&c->rbuf, SP_HDR_SIZE + SP_MAX_PAYLOAD);
	ssize_t n = dst ? recv(c->fd, dst, SP_HDR_SIZE + SP_MAX_PAYLOAD, MSG_DONTWAIT) : -1;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	daemon_lock(d);
	if (n <= 0) {
		if (!sb->dead)
			log_info("sandbox %s: agent disconnected", sb->id);
		disconnect(d, sb);
		daemon_unlock(d);
		return;
	}
	buf_commit(&c->rbuf, (size_t)n);
	/* anything at all from the agent shows it is alive */
	c->last_rx_ms = mono_ms();
	if (c->ping_ms) {
		c->ping_ms = 0;
		pthread_cond_broadcast(&d->cond);
	}
	for (;;) {
		struct frame f;
		long used = frame_parse(buf_head(&c->rbuf), buf_avail(&c->rbuf), &f);
		if (used == 0)
			break;
		if (used < 0) {
			log_warn("sandbox %s: malformed frame from the agent; dropping the connection", sb->id);
			disconnect(d, sb);
			break;
		}
		dispatch(d, sb, &f);
		if (c->fd < 0)
			break;
		buf_consume(&c->rbuf, (size_t)used);
	}
	daemon_unlock(d);
}

/* Whether a request or a client waits on the agent of sb. [L] */
static bool awaited(const struct sandbox *sb)
{
	if (sb->ops)
		return true;
	for (const struct proc *p = sb->procs; p; p = p->next)
		if (!p->exited && (p->reader || p->waiters))
			return true;
	return false;
}

/* The clients waiting on sb: one that left is let go, a silent stream gets a keepalive. [L] */
static void watch_clients(struct sandbox *sb, int64_t now)
{
	for (struct proc *p = sb->procs; p; p = p->next) {
		if (p->reader && !op_check_gone(p->reader))
			op_keepalive(p->reader, now);
		for (struct op *w = p->waiters; w; w = w->next)
			op_check_gone(w);
	}
	for (struct op *op = sb->ops; op; op = op->next)
		op_check_gone(op);
	for (struct op *op = sb->deferred; op; op = op->next)
		op_check_gone(op);
}

/* Whether the agent of sb serves a call it may rightly be silent in (sync(2)). [L] */
static bool in_long_call(const struct sandbox *sb)
{
	for (const struct op *op = sb->ops; op; op = op->next)
		if (op->long_call)
			return true;
	return false;
}

/*
 * Liveness of an agent someone waits on: silent for AGENT_PING_AFTER_MS, it is pinged; a ping
 * unanswered for AGENT_DEADLINE_MS hands the sandbox to sandbox_unresponsive. Only a running
 * sandbox counts, outside long calls (bounded by their own deadline): the clock starts afresh
 * after a pause, a suspend or a sync. [L]
 */
static void watch_agent(struct daemon *d, struct sandbox *sb, int64_t now)
{
	struct chan *c = &sb->chan;
	if (sb->state != SB_RUNNING || c->fd < 0 || !c->hello || in_long_call(sb)) {
		c->ping_ms = 0;
		c->last_rx_ms = now;
		return;
	}
	if (c->ping_ms) {
		if (now - c->ping_ms >= AGENT_DEADLINE_MS && !c->nudging)
			sandbox_unresponsive(d, sb);
	} else if (now - c->last_rx_ms >= AGENT_PING_AFTER_MS && awaited(sb)) {
		if (agent_send(d, sb, SP_H_PING, TAG_PING, NULL, 0, NULL, 0) == 0)
			c->ping_ms = now;
	}
}

/* Once a second, for every sandbox. [L] */
static void watchdog(struct daemon *d)
{
	int64_t now = mono_ms();
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		watch_clients(sb, now);
		watch_agent(d, sb, now);
	}
}

static void bury_all(struct daemon *d)
{
	daemon_lock(d);
	struct sandbox *g = d->graveyard, *keep = NULL;
	d->graveyard = NULL;
	while (g) {
		/* a job still holding it finishes first; a later pass frees it */
		struct sandbox *next = g->grave;
		if (g->refs > 0) {
			g->grave = keep;
			keep = g;
		} else {
			g->grave = d->graveyard;
			d->graveyard = g;
		}
		g = next;
	}
	g = d->graveyard;
	d->graveyard = keep;
	daemon_unlock(d);
	while (g) {
		struct sandbox *next = g->grave;
		if (g->chan.listen_fd >= 0) {
			epoll_ctl(d->epfd, EPOLL_CTL_DEL, g->chan.listen_fd, NULL);
			close(g->chan.listen_fd);
		}
		if (g->chan.fd >= 0) {
			epoll_ctl(d->epfd, EPOLL_CTL_DEL, g->chan.fd, NULL);
			close(g->chan.fd);
		}
		buf_free(&g->chan.rbuf);
		buf_free(&g->chan.wq);
		sandbox_free(g);
		g = next;
	}
}

void agent_bury(struct daemon *d, struct sandbox *sb)
{
	sb->dead = true;
	sb->grave = d->graveyard;
	d->graveyard = sb;
	uint64_t one = 1;
	if (write(d->wakefd, &one, sizeof(one)) < 0) {
		/* The counter cannot overflow in practice; the next wake-up buries it. */
	}
}

static void *io_main(void *arg)
{
	struct daemon *d = arg;
	struct epoll_event evs[64];
	int64_t next_expiry = 0;

	while (!__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
		daemon_lock(d);
		int wait_ms = timer_next(d);
		if (wait_ms < 0 || wait_ms > EXPIRY_PERIOD_MS)
			wait_ms = EXPIRY_PERIOD_MS;
		daemon_unlock(d);
		int n = epoll_wait(d->epfd, evs, 64, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			uint64_t u = evs[i].data.u64;
			if (u == EV_REAPER) {
				reaper_run(d->reaperfd);
				continue;
			}
			if (u == 0) {
				uint64_t v;
				if (read(d->wakefd, &v, sizeof(v)) < 0) {
					/* EAGAIN: already drained */
				}
				continue;
			}
			struct sandbox *sb = (struct sandbox *)(uintptr_t)(u & ~(uint64_t)EV_LISTEN);
			daemon_lock(d);
			bool dead = sb->dead;
			daemon_unlock(d);
			if (dead)
				continue;
			if (u & EV_LISTEN) {
				on_accept(d, sb);
				continue;
			}
			if (evs[i].events & EPOLLOUT) {
				daemon_lock(d);
				if (sb->chan.fd >= 0)
					flush(d, sb);
				daemon_unlock(d);
			}
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				on_readable(d, sb);
		}
		daemon_lock(d);
		timer_fire(d);
		if (mono_ms() >= next_expiry) {
			sandbox_expire(d);
			watchdog(d);
			next_expiry = mono_ms() + EXPIRY_PERIOD_MS;
		}
		daemon_unlock(d);
		bury_all(d);
	}
	return NULL;
}

int agent_start(struct daemon *d)
{
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->epfd < 0 || d->wakefd < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->wakefd, &ev) < 0)
		return -errno;
	if (d->reaperfd >= 0) {
		struct epoll_event rev = { .events = EPOLLIN, .data.u64 = EV_REAPER };
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->reaperfd, &rev);
	}
	int rc = pthread_create(&d->io_thread, NULL, io_main, d);
	return -rc;
}

void agent_stop(struct daemon *d)
{
	__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(d->wakefd, &one, sizeof(one)) == sizeof(one))
		pthread_join(d->io_thread, NULL);
}

void agent_chan_init(struct sandbox *sb)
{
	chan_init(&sb->chan);
}

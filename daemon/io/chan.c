/*
 * daemon/io/chan.c - the agent channel's transport (see chan.h): accepting
 * the peer, reading and checking frames, handing them to the table, and
 * writing a bounded queue.
 *
 * A new connection replaces the current one: the real agent connects again
 * only after it saw its old connection fail, so whatever connects while
 * another connection lives is either a reconnecting agent or an impostor,
 * and in both cases the old connection has nothing more to say.
 */
#include "daemon/io/chan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/base/clock.h"

#define READ_CHUNK (SP_HDR_SIZE + SP_MAX_PAYLOAD)
#define CONN_EVENTS (EPOLLIN | EPOLLRDHUP)

static void on_conn(struct loop_src *s, uint32_t events);
static void on_listen(struct loop_src *s, uint32_t events);

void chan_init(struct chan *c, const struct chan_proto *proto, void *ctx)
{
	memset(c, 0, sizeof(*c));
	c->listen_fd = -1;
	c->fd = -1;
	c->proto = proto;
	c->ctx = ctx;
	c->lsrc.fn = on_listen;
	c->csrc.fn = on_conn;
}

const struct chan_msg *chan_lookup(const struct chan_proto *p, uint8_t type)
{
	for (size_t i = 0; i < p->nmsgs; i++)
		if (p->msgs[i].type == type)
			return &p->msgs[i];
	return NULL;
}

static void arm(struct chan *c, bool out)
{
	loop_mod(c->loop, &c->csrc, c->fd, CONN_EVENTS | (out ? EPOLLOUT : 0));
	c->want_out = out;
}

/* Stops using the connection at once; the reader sees the shutdown and drops it with `why`. */
static void break_conn(struct chan *c, const char *why)
{
	if (c->broken)
		return;
	c->broken = true;
	snprintf(c->why, sizeof(c->why), "%s", why);
	shutdown(c->fd, SHUT_RDWR);
	buf_free(&c->wq);
	c->credit_tail = false;
}

/* Writes what the peer takes; arms EPOLLOUT for the rest. */
static void flush(struct chan *c)
{
	while (buf_avail(&c->wq) > 0) {
		ssize_t n = send(c->fd, buf_head(&c->wq), buf_avail(&c->wq), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!c->want_out)
				arm(c, true);
			return;
		}
		if (n < 0) {
			char why[CHAN_MAX_WHY];
			snprintf(why, sizeof(why), "writing to the agent: %s", strerror(errno));
			break_conn(c, why);
			return;
		}
		buf_consume(&c->wq, (size_t)n);
		c->credit_tail = false; /* a frame begun to be sent cannot change */
	}
	if (c->want_out)
		arm(c, false);
	if (c->high) {
		c->high = false;
		if (c->proto->drained)
			c->proto->drained(c->ctx);
	}
}

static int queue(struct chan *c, uint8_t type, uint32_t chan, const void *a, size_t na, const void *b,
		 size_t nb)
{
	if (na + nb > SP_MAX_PAYLOAD)
		return -E2BIG;
	if (buf_avail(&c->wq) + SP_HDR_SIZE + na + nb > CHAN_MAX_QUEUE) {
		char why[CHAN_MAX_WHY];
		snprintf(why, sizeof(why), "the agent left more than %u KiB unread", CHAN_MAX_QUEUE / 1024);
		break_conn(c, why);
		return -ENOBUFS;
	}
	uint8_t hdr[SP_HDR_SIZE];
	frame_put_header(hdr, type, chan, (uint32_t)(na + nb));
	if (buf_put(&c->wq, hdr, sizeof(hdr)) || buf_put(&c->wq, a, na) || buf_put(&c->wq, b, nb)) {
		break_conn(c, "out of memory queueing for the agent");
		return -ENOMEM;
	}
	c->credit_tail = false;
	if (buf_avail(&c->wq) > CHAN_DATA_ROOM)
		c->high = true;
	if (!c->want_out)
		flush(c);
	return 0;
}

int chan_send(struct chan *c, uint8_t type, uint32_t chan, const void *a, size_t na, const void *b,
	      size_t nb)
{
	if (!chan_ready(c) || c->broken)
		return -ENOTCONN;
	return queue(c, type, chan, a, na, b, nb);
}

int chan_send_early(struct chan *c, uint8_t type, uint32_t chan, const void *a, size_t na)
{
	if (c->fd < 0 || c->broken || (c->phase != CHAN_GREETED && c->phase != CHAN_READY))
		return -ENOTCONN;
	return queue(c, type, chan, a, na, NULL, 0);
}

int chan_credit(struct chan *c, uint32_t chan, uint32_t bytes)
{
	if (bytes == 0)
		return 0;
	if (c->credit_tail && c->credit_chan == chan && chan_ready(c) && !c->broken) {
		/* the last queued frame returns credit for the same channel: add to it */
		uint8_t *p = c->wq.data + c->wq.len - sizeof(struct sp_credit);
		uint32_t had = frame_get_u32(p);
		if (had <= UINT32_MAX - bytes) {
			frame_put_u32(p, had + bytes);
			return 0;
		}
	}
	uint8_t p[sizeof(struct sp_credit)];
	frame_put_u32(p, bytes);
	int rc = chan_send(c, SP_H_CREDIT, chan, p, sizeof(p), NULL, 0);
	if (rc == 0 && buf_avail(&c->wq) >= SP_HDR_SIZE + sizeof(p)) {
		c->credit_tail = true;
		c->credit_chan = chan;
	}
	return rc;
}

bool chan_data_room(struct chan *c, size_t n)
{
	if (buf_avail(&c->wq) + n <= CHAN_DATA_ROOM)
		return true;
	c->high = true;
	return false;
}

void chan_advance(struct chan *c, enum chan_phase p)
{
	if (c->fd >= 0)
		c->phase = p;
}

void chan_close(struct chan *c)
{
	if (c->fd >= 0) {
		loop_del(c->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (c->listen_fd >= 0) {
		loop_del(c->loop, c->listen_fd);
		close(c->listen_fd);
		c->listen_fd = -1;
	}
	c->phase = CHAN_DOWN;
	c->dial[0] = '\0';
	c->opening = false;
	chan_keep_tail(c, false);
	buf_free(&c->rbuf);
	buf_free(&c->wq);
}

void chan_drop(struct chan *c, const char *reason)
{
	if (c->fd < 0)
		return;
	char why[CHAN_MAX_WHY];
	snprintf(why, sizeof(why), "%s", reason ? reason : "");
	loop_del(c->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	c->phase = CHAN_DOWN;
	c->want_out = false;
	c->broken = false;
	c->opening = false;
	c->high = false;
	c->credit_tail = false;
	buf_free(&c->wq);
	if (c->keep_tail) {
		/* the VM stopped for a suspend: its port holds the rest, after the restore */
		buf_free(&c->tail);
		c->tail = c->rbuf;
		memset(&c->rbuf, 0, sizeof(c->rbuf));
		c->tail_live = true;
	}
	c->keep_tail = false;
	buf_free(&c->rbuf);
	snprintf(c->why, sizeof(c->why), "%s", why);
	c->proto->dropped(c->ctx, reason ? why : NULL);
}

int chan_listen(struct chan *c, struct loop *l, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	int rc = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
		rc = -errno;
	if (rc == 0)
		rc = loop_add(l, &c->lsrc, fd, EPOLLIN);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	c->loop = l;
	c->listen_fd = fd;
	return 0;
}

void chan_unlisten(struct chan *c, const char *path)
{
	if (c->dial[0]) {
		c->dial[0] = '\0';
		return;
	}
	if (c->listen_fd < 0)
		return;
	loop_del(c->loop, c->listen_fd);
	close(c->listen_fd);
	c->listen_fd = -1;
	unlink(path);
}

/* Makes fd, a new connection, the channel's; false (fd closed) if the loop cannot take it. */
static bool take_conn(struct chan *c, int fd)
{
	if (loop_add(c->loop, &c->csrc, fd, CONN_EVENTS) < 0) {
		close(fd);
		return false;
	}
	c->fd = fd;
	c->phase = CHAN_OPEN;
	c->last_rx_ms = mono_ms();
	c->why[0] = '\0';
	return true;
}

static void on_listen(struct loop_src *s, uint32_t events)
{
	struct chan *c = (struct chan *)((char *)s - offsetof(struct chan, lsrc));
	if (c->listen_fd < 0)
		return;
	int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	chan_drop(c, "a new connection replaced it");
	take_conn(c, fd);
}

int chan_dial(struct chan *c, struct loop *l, const char *path)
{
	struct sockaddr_un sa;
	if (strlen(path) >= sizeof(sa.sun_path) || strlen(path) >= sizeof(c->dial))
		return -ENAMETOOLONG;
	c->loop = l;
	snprintf(c->dial, sizeof(c->dial), "%s", path);
	c->keep_tail = false; /* a connection that outlived a suspend refused (the tail stays) */
	chan_redial(c);
	return 0;
}

bool chan_redial(struct chan *c)
{
	if (c->fd >= 0 || !c->dial[0])
		return c->fd >= 0;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->dial);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	/* a Unix connect completes at once, into the listener's backlog, or fails */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || getrandom(&c->nonce, sizeof(c->nonce), 0) !=
	    (ssize_t)sizeof(c->nonce)) {
		close(fd);
		return false;
	}
	if (!take_conn(c, fd))
		return false;
	c->opening = true;
	c->open_ms = mono_ms();
	uint8_t p[sizeof(struct sp_open)];
	frame_put_u64(p, c->nonce);
	queue(c, SP_H_OPEN, 0, p, sizeof(p), NULL, 0);
	return c->fd >= 0;
}

bool chan_open_overdue(const struct chan *c, int64_t now, int ms)
{
	return c->fd >= 0 && c->opening && now - c->open_ms >= ms;
}

void chan_keep_tail(struct chan *c, bool keep)
{
	c->keep_tail = keep;
	if (!keep) {
		c->tail_live = false;
		buf_free(&c->tail);
	}
}

/* Reads the n bytes at the head of rbuf as the rest of the connection a suspend ended: each
 * whole frame among them that CHAN_TAIL allows goes to its handler; the others belonged to that
 * connection alone (answers to requests failed with it, credit its successor's hello starts
 * afresh) and are passed over. A malformed frame or a refusal ends the tail there, without
 * blaming the new connection. What is left is at most one partial frame: one the agent rewound
 * and sends whole again after its hello, when the A_OPEN comes next. */
static void read_tail(struct chan *c, size_t n)
{
	if (buf_put(&c->tail, buf_head(&c->rbuf), n) < 0)
		chan_keep_tail(c, false);
	buf_consume(&c->rbuf, n);
	while (c->tail_live) {
		struct frame f;
		long used = frame_parse(buf_head(&c->tail), buf_avail(&c->tail), &f);
		if (used == 0)
			return;
		const struct chan_msg *m = used > 0 ? chan_lookup(c->proto, f.type) : NULL;
		if (used < 0) {
			chan_keep_tail(c, false);
			return;
		}
		if (m && (m->phases & CHAN_IN(CHAN_TAIL))) {
			enum chan_phase was = c->phase;
			char why[CHAN_MAX_WHY];
			c->phase = CHAN_TAIL;
			int rc = chan_dispatch(c, &f, why);
			c->phase = was;
			if (rc < 0) {
				chan_keep_tail(c, false);
				return;
			}
		}
		buf_consume(&c->tail, (size_t)used);
	}
}

/* While the connection is opening, drops what came before the peer's A_OPEN with this
 * connection's nonce (an earlier connection's output; read on as its tail after a suspend) and
 * the A_OPEN itself. */
static void skip_to_open(struct chan *c)
{
	uint8_t want[SP_HDR_SIZE + sizeof(struct sp_open)];
	frame_put_header(want, SP_A_OPEN, 0, sizeof(struct sp_open));
	frame_put_u64(want + SP_HDR_SIZE, c->nonce);
	const uint8_t *h = buf_head(&c->rbuf);
	size_t n = buf_avail(&c->rbuf);
	const uint8_t *m = memmem(h, n, want, sizeof(want));
	/* without it, the tail of what came may be the start of it */
	size_t before = m ? (size_t)(m - h) : n >= sizeof(want) ? n - (sizeof(want) - 1) : 0;
	if (c->tail_live)
		read_tail(c, before);
	else
		buf_consume(&c->rbuf, before);
	if (m) {
		chan_keep_tail(c, false);
		buf_consume(&c->rbuf, sizeof(want));
		c->opening = false;
	}
}

int chan_dispatch(struct chan *c, const struct frame *f, char *why)
{
	const struct chan_msg *m = chan_lookup(c->proto, f->type);
	if (!m) {
		snprintf(why, CHAN_MAX_WHY, "message type %u is not one the agent sends", f->type);
		return -EPROTO;
	}
	if (!(m->phases & CHAN_IN(c->phase))) {
		snprintf(why, CHAN_MAX_WHY, "message type %u is not allowed %s", f->type,
			 c->phase == CHAN_OPEN ? "before the hello" : c->phase == CHAN_GREETED ? "before the hello's listing ends" : "after the hello");
		return -EPROTO;
	}
	if (f->len < m->min_len) {
		snprintf(why, CHAN_MAX_WHY, "message type %u is %u bytes, shorter than its %u", f->type, f->len,
			 m->min_len);
		return -EPROTO;
	}
	why[0] = '\0';
	int rc = m->fn(c->ctx, f, why);
	if (rc < 0 && !why[0])
		snprintf(why, CHAN_MAX_WHY, "message type %u refused: %s", f->type, strerror(-rc));
	return rc;
}

/* Reads what the peer sent and dispatches every whole frame. */
static void receive(struct chan *c)
{
	uint8_t *dst = buf_reserve(&c->rbuf, READ_CHUNK);
	ssize_t n = dst ? recv(c->fd, dst, READ_CHUNK, MSG_DONTWAIT) : -1;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		chan_drop(c, c->broken ? c->why : NULL);
		return;
	}
	buf_commit(&c->rbuf, (size_t)n);
	c->last_rx_ms = mono_ms();
	if (c->opening)
		skip_to_open(c);
	int fd = c->fd;
	while (c->fd == fd && !c->broken && !c->opening) {
		struct frame f;
		long used = frame_parse(buf_head(&c->rbuf), buf_avail(&c->rbuf), &f);
		if (used == 0)
			break;
		char why[CHAN_MAX_WHY] = "a malformed frame header";
		if (used > 0 && f.type == SP_A_OPEN && c->dial[0]) {
			/* on a dialled port, the agent's end of the connection: it opens again (the
			 * next chan_redial) with a new nonce */
			chan_drop(c, "the agent ended the connection");
			return;
		}
		if (used < 0 || chan_dispatch(c, &f, why) < 0) {
			chan_drop(c, why);
			return;
		}
		if (c->fd != fd)
			return; /* a handler dropped it */
		buf_consume(&c->rbuf, (size_t)used);
	}
	if (c->broken)
		chan_drop(c, c->why);
}

static void on_conn(struct loop_src *s, uint32_t events)
{
	struct chan *c = (struct chan *)((char *)s - offsetof(struct chan, csrc));
	if (c->fd < 0)
		return;
	if ((events & EPOLLOUT) && !c->broken)
		flush(c);
	if (c->fd >= 0 && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		receive(c);
}

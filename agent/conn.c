/*
 * agent/conn.c - the connection to spaced: connect and reconnect, the
 * outgoing frame queue, and reading incoming frames.
 *
 * The connection's descriptor comes from its transport (conn_unix below, the
 * virtio-serial port in vport.c) and is non-blocking. Incoming bytes collect
 * in one buffer of a maximal frame; every whole frame goes up (conn_hooks: dispatch_frame),
 * and a frame that fails its checks closes the connection. Outgoing frames
 * wait in one FIFO (struct outframe) written through the transport (sendmsg
 * with MSG_NOSIGNAL on the socket). The queue is bounded by credit for output
 * and by AGENT_CTRL_MAX for control frames: past that the connection is no
 * longer read, so a host that does not read is slowed down rather than the
 * agent's memory growing.
 *
 * A drop (EOF, error, protocol error, H_DETACH) ends the connection, abandons
 * the transfers of the connection, drops queued answers to its requests and
 * its credit returns, rewinds a partly written frame, and schedules the next
 * attempt SP_AGENT_RETRY_MS later. A new connection begins with A_HELLO,
 * followed by the frames of processes still queued.
 */
#include "agent.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>


#define CONN_IOV_MAX 64

static bool is_data(uint8_t type)
{
	return type == SP_A_STDOUT || type == SP_A_STDERR || type == SP_A_DATA || type == SP_A_EVENT;
}

static uint8_t frame_type(const struct outframe *o)
{
	return o->bytes[4];
}

static uint32_t frame_chan(const struct outframe *o)
{
	return frame_get_u32(o->bytes + 8);
}

int conn_init(struct agent *a, const struct conn_transport *t, const char *where, const struct conn_hooks *up)
{
	struct conn *c = &a->conn;
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->up = up;
	c->where = where;
	c->fd = -1;
	c->dev_fd = -1;
	c->in = malloc(SP_HDR_SIZE + SP_MAX_PAYLOAD);
	return c->in ? 0 : -ENOMEM;
}

bool conn_up(const struct agent *a)
{
	return a->conn.fd >= 0;
}

bool conn_has_room(const struct agent *a)
{
	return a->conn.ctrl_bytes < AGENT_CTRL_MAX;
}

/* Unlinks and frees o, whose predecessor is prev (NULL at the head). */
static void queue_remove(struct conn *c, struct outframe *prev, struct outframe *o)
{
	if (prev)
		prev->next = o->next;
	else
		c->head = o->next;
	if (c->tail == o)
		c->tail = prev;
	if (o->owner)
		o->owner->queued -= o->size - SP_HDR_SIZE;
	if (!is_data(frame_type(o)))
		c->ctrl_bytes -= o->size;
	free(o);
}

static struct outframe *frame_new(uint8_t type, uint32_t chan, size_t len)
{
	struct outframe *o = malloc(sizeof(*o) + SP_HDR_SIZE + len);
	if (!o)
		return NULL;
	o->next = NULL;
	o->owner = NULL;
	o->size = (uint32_t)(SP_HDR_SIZE + len);
	frame_put_header(o->bytes, type, chan, (uint32_t)len);
	return o;
}

static void queue_push(struct conn *c, struct outframe *o, bool front)
{
	if (!is_data(frame_type(o)))
		c->ctrl_bytes += o->size;
	if (!c->head) {
		c->head = c->tail = o;
	} else if (front) {
		o->next = c->head;
		c->head = o;
	} else {
		c->tail->next = o;
		c->tail = o;
	}
}

int conn_send(struct agent *a, uint8_t type, uint32_t chan, const void *fixed, size_t nfixed,
	      const char *str)
{
	size_t slen = 0;
	if (str) {
		slen = strlen(str);
		if (nfixed + slen + 1 > SP_MAX_PAYLOAD)
			slen = SP_MAX_PAYLOAD - nfixed - 1;
	}
	size_t len = nfixed + (str ? slen + 1 : 0);
	struct outframe *o = frame_new(type, chan, len);
	if (!o)
		return -ENOMEM;
	uint8_t *p = o->bytes + SP_HDR_SIZE;
	if (nfixed)
		memcpy(p, fixed, nfixed);
	if (str) {
		memcpy(p + nfixed, str, slen);
		p[nfixed + slen] = '\0';
	}
	queue_push(&a->conn, o, false);
	return 0;
}

struct outframe *conn_frame_alloc(size_t cap)
{
	return frame_new(SP_A_DATA, 0, cap);
}

uint8_t *conn_frame_payload(struct outframe *o)
{
	return o->bytes + SP_HDR_SIZE;
}

void conn_frame_queue(struct agent *a, struct outframe *o, uint8_t type, uint32_t chan,
		      size_t len, struct proc *owner)
{
	if (SP_HDR_SIZE + len < o->size) {
		struct outframe *smaller = realloc(o, sizeof(*o) + SP_HDR_SIZE + len);
		if (smaller)
			o = smaller;
	}
	o->size = (uint32_t)(SP_HDR_SIZE + len);
	frame_put_header(o->bytes, type, chan, (uint32_t)len);
	o->owner = owner;
	if (owner)
		owner->queued += len;
	queue_push(&a->conn, o, false);
}

int conn_send_error(struct agent *a, uint32_t chan, int err, const char *fmt, ...)
{
	char msg[1024];
	uint8_t fixed[sizeof(struct sp_error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	frame_put_u32(fixed, (uint32_t)err);
	return conn_send(a, SP_A_ERROR, chan, fixed, sizeof(fixed), msg);
}

void conn_disown(struct agent *a, const struct proc *p)
{
	for (struct outframe *o = a->conn.head; o; o = o->next)
		if (o->owner == p)
			o->owner = NULL;
}

/* Frames that belong to the connection that just ended. */
static bool dies_with_connection(const struct outframe *o)
{
	uint8_t type = frame_type(o);
	return (frame_chan(o) & SP_CHAN_REQ) || type == SP_A_CREDIT || type == SP_A_HELLO || type == SP_A_OPEN;
}

/* What ends with a connection, whatever ended it: a partly written frame is rewound (the
 * host discards partial frames), answers and credit returns go, transfers are abandoned. */
static void end_connection(struct agent *a)
{
	struct conn *c = &a->conn;
	c->head_off = 0;
	struct outframe *prev = NULL, *o = c->head;
	while (o) {
		struct outframe *next = o->next;
		if (dies_with_connection(o))
			queue_remove(c, prev, o);
		else
			prev = o;
		o = next;
	}
	c->up->ended(a);
}

static int write_within(struct conn *c, unsigned ms);

/* On a transport without connections of its own (the serial port) the host cannot see the
 * agent end one: the agent writes out what it queued, so that the host is not left inside a
 * frame, then an A_OPEN with nonce 0, which the host takes for the end (it opens again with
 * H_OPEN). A host that does not read in time finds the connection dead by its own checks. */
static void say_ended(struct conn *c)
{
	if (write_within(c, AGENT_END_FLUSH_MS) < 0)
		return;
	struct outframe *o = frame_new(SP_A_OPEN, 0, sizeof(struct sp_open));
	if (!o)
		return;
	memset(o->bytes + SP_HDR_SIZE, 0, sizeof(struct sp_open));
	queue_push(c, o, false);
	write_within(c, AGENT_END_FLUSH_MS); /* what is left of it goes with the connection */
}

static void conn_drop(struct agent *a, const char *why, bool host_gone)
{
	struct conn *c = &a->conn;
	if (c->fd < 0)
		return;
	agent_log("disconnected (%s); retrying every %u ms", why, SP_AGENT_RETRY_MS);
	if (!host_gone && c->t->host_opens && !c->awaiting_open)
		say_ended(c);
	c->t->end(c, host_gone);
	c->fd = -1;
	c->in_len = 0;
	c->awaiting_open = false;
	/* the port: once the host left, reach arms its signal of the host's return, so the first
	 * attempt comes at once and the period is only a fallback; after an end of the agent's own
	 * the port is open again at once, since what a host sends while it is closed waits in
	 * QEMU unread until something else wakes QEMU's reader */
	c->retry_at = agent_now_ms() + (c->t->host_opens ? 0 : SP_AGENT_RETRY_MS);
	end_connection(a);
}

/* Queues a frame at the head of the queue: nonce's A_OPEN or the hello go before
 * everything that waits. Returns 0 or -ENOMEM. */
static int push_first(struct conn *c, uint8_t type, const void *payload, size_t len)
{
	struct outframe *o = frame_new(type, 0, len);
	if (!o)
		return -ENOMEM;
	memcpy(o->bytes + SP_HDR_SIZE, payload, len);
	queue_push(c, o, true);
	return 0;
}

/* A connection starts: A_HELLO (after A_OPEN when the host opened it), fresh credit. */
static int begin_connection(struct agent *a, const uint64_t *nonce)
{
	struct conn *c = &a->conn;
	uint8_t hello[sizeof(struct sp_hello) + sizeof(struct sp_hello_ext)];
	uint8_t *ext = hello + sizeof(struct sp_hello);
	frame_put_u32(hello + offsetof(struct sp_hello, version), SP_PROTO_VERSION);
	frame_put_u32(hello + offsetof(struct sp_hello, max_pid), c->up->max_pid(a));
	frame_put_u64(hello + offsetof(struct sp_hello, boot_id), a->boot_id);
	frame_put_u32(ext + offsetof(struct sp_hello_ext, features),
		      SP_FEATURE_FILE_USER | (a->vm_env ? SP_FEATURE_CLOCK : 0));
	frame_put_u32(ext + offsetof(struct sp_hello_ext, rsvd), 0);
	if (push_first(c, SP_A_HELLO, hello, sizeof(hello)) < 0)
		return -ENOMEM;
	if (nonce) {
		uint8_t open[sizeof(struct sp_open)];
		frame_put_u64(open, *nonce);
		if (push_first(c, SP_A_OPEN, open, sizeof(open)) < 0)
			return -ENOMEM; /* the hello is dropped with the connection */
	}
	c->generation++;
	c->up->begun(a);
	return 0;
}

void conn_host_open(struct agent *a, uint64_t nonce)
{
	struct conn *c = &a->conn;
	if (!c->awaiting_open)
		end_connection(a); /* the host started over on a connection we took to be running */
	c->awaiting_open = false;
	if (begin_connection(a, &nonce) < 0) {
		conn_drop(a, "out of memory", false);
		return;
	}
	agent_log("the host opened a connection on %s", c->where);
}

static int unix_reach(struct conn *c)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(c->where) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, c->where);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void unix_end(struct conn *c, bool host_gone)
{
	close(c->fd);
}

static ssize_t unix_send(int fd, const struct iovec *iov, int n)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
	return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static ssize_t unix_recv(int fd, void *buf, size_t n)
{
	return recv(fd, buf, n, 0);
}

const struct conn_transport conn_unix = {
	.kind = "unix socket",
	.host_opens = false,
	.reach = unix_reach,
	.end = unix_end,
	.send = unix_send,
	.recv = unix_recv,
};

static int conn_connect(struct agent *a)
{
	struct conn *c = &a->conn;
	int fd = c->t->reach(c);
	if (fd < 0)
		return fd;
	c->fd = fd;
	c->in_len = 0;
	if (c->t->host_opens) {
		c->awaiting_open = true;
		agent_log("reached %s (%s); waiting for the host to open", c->where, c->t->kind);
		return 0;
	}
	if (begin_connection(a, NULL) < 0) {
		c->t->end(c, false);
		c->fd = -1;
		end_connection(a);
		return -ENOMEM;
	}
	agent_log("connected to %s (%s)", c->where, c->t->kind);
	return 0;
}

void conn_tick(struct agent *a, uint64_t now)
{
	struct conn *c = &a->conn;
	if (c->fd >= 0 || now < c->retry_at)
		return;
	if (conn_connect(a) == 0) {
		c->fast_retries = 0;
	} else if (c->fast_retries > 0) {
		c->fast_retries--;
		c->retry_at = now + AGENT_RETRY_FAST_MS;
	} else {
		c->retry_at = now + SP_AGENT_RETRY_MS;
	}
}

void conn_host_back(struct agent *a)
{
	if (a->conn.fd < 0)
		a->conn.retry_at = 0;
}

uint64_t conn_deadline(const struct agent *a)
{
	return a->conn.fd >= 0 ? UINT64_MAX : a->conn.retry_at;
}

/* Writes without blocking. Returns 0 when the queue is empty, -EAGAIN when
 * the socket is full, or another -errno when the connection failed. */
static int conn_write(struct conn *c)
{
	while (c->head) {
		struct iovec iov[CONN_IOV_MAX];
		int n = 0;
		size_t off = c->head_off;
		for (struct outframe *o = c->head; o && n < CONN_IOV_MAX; o = o->next) {
			iov[n].iov_base = o->bytes + off;
			iov[n].iov_len = o->size - off;
			off = 0;
			n++;
		}
		ssize_t w = c->t->send(c->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		size_t left = (size_t)w;
		while (left && c->head) {
			size_t rest = c->head->size - c->head_off;
			if (left < rest) {
				c->head_off += left;
				break;
			}
			left -= rest;
			c->head_off = 0;
			queue_remove(c, NULL, c->head);
		}
	}
	return 0;
}

void conn_flush(struct agent *a)
{
	struct conn *c = &a->conn;
	if (c->fd < 0 || !c->head || c->awaiting_open)
		return;
	int err = conn_write(c);
	if (err < 0 && err != -EAGAIN)
		conn_drop(a, strerror(-err), false);
}

/* Writes the queue out, waiting at most ms for the host to read. 0 once it is empty,
 * -ETIMEDOUT, or the write's -errno. */
static int write_within(struct conn *c, unsigned ms)
{
	uint64_t end = agent_now_ms() + ms;
	for (;;) {
		int err = conn_write(c);
		if (err != -EAGAIN)
			return err;
		uint64_t now = agent_now_ms();
		if (now >= end)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		poll(&p, 1, (int)(end - now));
	}
}

void conn_detach(struct agent *a)
{
	struct conn *c = &a->conn;
	if (c->fd >= 0 && !c->awaiting_open) {
		int err = write_within(c, AGENT_DETACH_FLUSH_MS);
		if (err == -ETIMEDOUT) {
			agent_log("detach: host did not read the queue in time");
		} else if (err < 0) {
			conn_drop(a, strerror(-err), false);
			return;
		}
	}
	conn_drop(a, "detached by the host", false);
	c->fast_retries = AGENT_FAST_RETRIES;
	c->retry_at = agent_now_ms() + AGENT_RETRY_FAST_MS;
}

/* Handles every whole frame in the input buffer. */
static void conn_parse(struct agent *a)
{
	struct conn *c = &a->conn;
	size_t pos = 0;
	while (c->fd >= 0) {
		struct frame f;
		long n = frame_parse(c->in + pos, c->in_len - pos, &f);
		if (n == 0)
			break;
		if (n > 0 && c->awaiting_open && f.type != SP_H_OPEN) {
			pos += (size_t)n; /* of a connection that ended: not ours to answer */
			continue;
		}
		if (n < 0 || c->up->frame(a, &f) == -EPROTO) {
			agent_log("bad frame (type %u, len %u) from the host",
				  c->in[pos + 4], frame_get_u32(c->in + pos));
			conn_drop(a, "protocol error", false);
			return;
		}
		pos += (size_t)n;
	}
	if (c->fd < 0)
		return; /* detached: the rest belonged to the old connection */
	memmove(c->in, c->in + pos, c->in_len - pos);
	c->in_len -= pos;
}

static void on_socket(struct agent *a, void *obj, int fd, short revents)
{
	struct conn *c = &a->conn;
	if (c->fd != fd)
		return;
	if (revents & POLLOUT)
		conn_flush(a);
	if (c->fd < 0 || !(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (!conn_has_room(a) && !(revents & (POLLHUP | POLLERR)))
		return;
	ssize_t r = c->t->recv(fd, c->in + c->in_len, SP_HDR_SIZE + SP_MAX_PAYLOAD - c->in_len);
	if (r == 0) {
		conn_drop(a, "host closed the connection", true);
		return;
	}
	if (r < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_drop(a, strerror(errno), false);
		return;
	}
	c->in_len += (size_t)r;
	conn_parse(a);
	conn_flush(a);
}

void conn_watch(struct agent *a, struct pollset *ps)
{
	struct conn *c = &a->conn;
	if (c->fd < 0)
		return;
	short ev = 0;
	if (conn_has_room(a))
		ev |= POLLIN;
	if (c->head && !c->awaiting_open)
		ev |= POLLOUT;
	pollset_add(ps, c->fd, ev, on_socket, NULL);
}

/*
 * daemon/net/proxy.c - the port proxy (see proxy.h).
 *
 * A connection goes through these states: HEAD (reading the first request's head from the
 * client), WAKE (its sandbox resuming for it), CONNECT (a non-blocking connect to the
 * sandbox's address is under way), RELAY (the agent's relay connecting inside) and PIPE.
 * In PIPE the client's bytes are read into `in` and go on to the sandbox only as far as they
 * were read as requests (advance(): each head checked and rewritten, each body passed as it
 * is), until an Upgrade request is answered 101, after which they pass unread. Each direction
 * has a buffer of PROXY_BUF bytes: a side is read only while its buffer has room, so a slow
 * reader slows the writer and nothing grows. Every state has a deadline. When both directions
 * have ended, the sandbox's side is closed with a reset (SO_LINGER 0): a connection closed
 * that way leaves no time-wait inside the sandbox, which gVisor could not write into a
 * suspend's image (lifecycle.c, drain_network). The bytes of the two directions are moved by
 * proxy_flow.c.
 */
#include "daemon/net/proxy.h"
#include "daemon/net/proxy_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/op.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/stats.h"
#include "daemon/net/net.h"
#include "proto/agent.h"

struct proxy {
	struct daemon *d;
	pthread_t thread;
	int lfd, epfd, wakefd;
	struct end listener, waker;
	struct pconn *conns;
	int nconns;
	int waking;            /* connections in P_WAKE */
	struct pconn *dropped; /* closed in this round of events, freed after it */
};

static bool same_token(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);
	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
	return diff == 0 && lb > 0;
}

static int64_t idle_ms(struct proxy *px)
{
	return (int64_t)px->d->cfg.proxy_idle_s * 1000;
}

/* ---- connections ---- */

static void watch(struct proxy *px, struct end *e, uint32_t events)
{
	if (e->fd < 0 || e->events == events)
		return;
	struct epoll_event ev = { .events = events, .data.ptr = e };
	epoll_ctl(px->epfd, e->events || events == 0 ? (events ? EPOLL_CTL_MOD : EPOLL_CTL_DEL) : EPOLL_CTL_ADD, e->fd,
		  &ev);
	e->events = events;
}

/*
 * Closes c and takes it out of the list. It is freed after the round of events (free_dropped):
 * an event of the same round for its other end still names it, and is skipped (on_event).
 */
static void drop(struct proxy *px, struct pconn *c)
{
	if (c->dropped)
		return;
	if (c->up.fd >= 0) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 }; /* a reset: no time-wait inside */
		setsockopt(c->up.fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(c->up.fd);
	}
	if (c->client.fd >= 0)
		close(c->client.fd);
	if (c->state == P_WAKE)
		px->waking--;
	if (c->prev)
		c->prev->next = c->next;
	else
		px->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	px->nconns--;
	c->up.fd = c->client.fd = -1;
	c->dropped = true;
	c->next_dropped = px->dropped;
	px->dropped = c;
}

static void free_dropped(struct proxy *px)
{
	while (px->dropped) {
		struct pconn *c = px->dropped;
		px->dropped = c->next_dropped;
		free(c->owed);
		free(c);
	}
}

/* A whole answer of the proxy's own, into a new string (*len its length); NULL without memory. */
static char *answer_text(int status, const char *reason, const char *extra, const char *body, size_t *len)
{
	char *out = NULL;
	int n = asprintf(&out,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\nCache-Control: no-store\r\n%s\r\n%s",
			 status, reason, strlen(body), extra ? extra : "", body);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return out;
}

/* A whole answer to the client, then the end of the connection. */
static void answer(struct proxy *px, struct pconn *c, int status, const char *reason, const char *extra,
		   const char *body)
{
	size_t n;
	char *out = answer_text(status, reason, extra, body, &n);
	if (out) {
		ssize_t w = send(c->client.fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		free(out);
	}
	drop(px, c);
}

/*
 * A request refused: answered at once when it is the connection's first; after it, nothing
 * more goes to the sandbox, and the answer waits until the sandbox's answers to the requests
 * before it have all come (its side ends: rearm), so that it is the last on the connection.
 */
static void refuse(struct proxy *px, struct pconn *c, int status, const char *reason, const char *extra,
		   const char *body)
{
	if (status >= 400) /* not a redirect */
		stats_add(px->d->stats, STATS_PROXY_REFUSED_REQUEST, 1);
	if (c->state != P_PIPE) {
		answer(px, c, status, reason, extra, body);
		return;
	}
	c->owed = answer_text(status, reason, extra, body, &c->owed_len);
	if (!c->owed) {
		drop(px, c);
		return;
	}
	c->rstate = R_REFUSED;
	c->in_len = 0;
	c->c2u.eof = true;
}

struct target {
	char id[SANDBOX_ID_LEN + 1];
	int port;
	bool found, allowed, has_network;
	bool wakes;       /* not running, but resuming for this connection (its auto_resume) */
	char state[16];
	char reach[16];
};

/* What a request asks for, checked against the sandbox (token: the one given, or NULL when
 * the connection was let in already); fills t. A paused or suspended sandbox whose auto_resume
 * is on is resumed for a request let in, as any request for it is (api.c). [takes d->lock] */
static void look_up(struct daemon *d, struct target *t, const char *token)
{
	daemon_lock(d);
	struct sandbox *sb = sandbox_find(d, t->id);
	t->found = sb != NULL && sb->pooled == SB_POOL_NONE;
	if (t->found) {
		t->allowed = !token || sb->public_ports || same_token(token, sb->conf.traffic_token);
		t->has_network = sb->network != NULL;
		snprintf(t->state, sizeof(t->state), "%s", sb_state_name(sb->state));
		if (sb->network)
			net_host_reach(sb, t->reach, sizeof(t->reach));
		bool stopped = sb->state == SB_PAUSED || sb->state == SB_SUSPENDED;
		t->wakes = t->allowed && t->has_network && sb->auto_resume &&
			   (stopped || sb->state == SB_PAUSING || sb->state == SB_SUSPENDING || sb->state == SB_RESUMING);
		struct err e = { 0 };
		if (t->wakes && stopped && lifecycle_start(d, sb, ACT_RESUME, NULL, &e) < 0)
			t->wakes = false;
	}
	daemon_unlock(d);
}

/* A head proxy_http_head() did not take: answered (refuse). */
static void refuse_head(struct proxy *px, struct pconn *c, int rc)
{
	if (rc == -E2BIG)
		refuse(px, c, 431, "Request Header Fields Too Large", NULL, "the request's head is too large\n");
	else if (rc == -ENOSYS)
		refuse(px, c, 501, "Not Implemented", NULL, "the port proxy takes no transfer coding but chunked\n");
	else
		refuse(px, c, 400, "Bad Request", NULL, "not an HTTP/1.1 request the port proxy passes on\n");
}

/*
 * Whether request h goes on: its Host names a sandbox's port (the connection's own, after
 * the first request), and its token opens it. 0 with t filled, or -1 when it was answered
 * instead (refused, or the redirect that turns a token in the query into a cookie).
 */
static int admit(struct proxy *px, struct pconn *c, const struct proxy_head *h, struct target *t)
{
	if (!h->host || proxy_parse_host(h->host, h->host_len, px->d->cfg.proxy_domain, t->id, &t->port) < 0) {
		refuse(px, c, 404, "Not Found", NULL,
		       "this is space's port proxy: open http://<port>-<sandbox id>.<domain>/ to reach a port\n");
		return -1;
	}
	bool given = h->qtoken_given || h->token_given;
	look_up(px->d, t, h->qtoken_given ? h->qtoken : h->token);
	if (!t->found || !t->allowed) { /* the same answer whether the sandbox exists or not */
		if (given)
			refuse(px, c, 403, "Forbidden", NULL, "this token does not open this port\n");
		else
			refuse(px, c, 401, "Unauthorized", NULL,
			       "this port needs the sandbox's traffic token: header X-Space-Token, or ?space_token=\n");
		return -1;
	}
	if (c->state == P_PIPE && (strcmp(t->id, c->id) != 0 || t->port != c->port)) {
		refuse(px, c, 421, "Misdirected Request", NULL,
		       "this connection goes to another port: open a new connection for this one\n");
		return -1;
	}
	if (h->qtoken_given) { /* a browser's first visit: the token becomes a cookie of this host alone */
		char loc[PROXY_HEAD_MAX], extra[PROXY_HEAD_MAX + 256];
		proxy_http_location(h->target, h->target_len, loc, sizeof(loc));
		snprintf(extra, sizeof(extra), "Location: %s\r\n", loc);
		if (h->qtoken[0])
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
				 "Set-Cookie: space_token=%s; Path=/; HttpOnly; SameSite=Lax\r\n", h->qtoken);
		refuse(px, c, 302, "Found", extra, "");
		return -1;
	}
	return 0;
}

/* PIPE: reads the client's bytes as requests as far as they go, and passes them on. */
static void advance(struct proxy *px, struct pconn *c)
{
	for (;;) {
		if (c->rstate == R_UPGRADE || c->rstate == R_REFUSED)
			return;
		if (c->rstate == R_TUNNEL || c->rstate == R_BODY) {
			size_t room = proxy_flow_room(&c->c2u), n = c->in_len < room ? c->in_len : room, took = n;
			int rc = c->rstate == R_TUNNEL ? 0 : proxy_http_body(&c->body, c->in, n, &took);
			if (rc < 0) {
				refuse(px, c, 400, "Bad Request", NULL, "the request's chunked body is not one\n");
				return;
			}
			proxy_take_in(c, took, true);
			if (rc == 0)
				break;
			c->rstate = c->upgrade ? R_UPGRADE : R_HEAD;
			memset(&c->status, 0, sizeof(c->status));
			continue;
		}
		struct proxy_head h;
		int rc = proxy_http_head(c->in, c->in_len, &h);
		if (rc == 0)
			break;
		if (rc < 0) {
			refuse_head(px, c, rc);
			return;
		}
		struct target t = { 0 };
		if (admit(px, c, &h, &t) < 0 || proxy_pass_head(c, &h) < 0)
			return; /* answered, or waiting for room */
	}
	if (c->in_eof && (c->in_len == 0 || c->rstate == R_HEAD))
		c->c2u.eof = true; /* the client ended: a head it left unfinished goes nowhere */
}

static void start_connect(struct proxy *px, struct pconn *c, const struct target *t);

/* The first request, admitted, to a running sandbox: passed on, and the sandbox dialled. */
static void forward(struct proxy *px, struct pconn *c, const struct target *t)
{
	if (strcmp(t->state, "running") != 0) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the sandbox is %s: resume it to reach its ports\n", t->state);
		answer(px, c, 503, "Service Unavailable", NULL, msg);
		return;
	}
	struct proxy_head h;
	if (proxy_http_head(c->in, c->in_len, &h) <= 0 || proxy_pass_head(c, &h) < 0) {
		answer(px, c, 431, "Request Header Fields Too Large", NULL, "the request's head is too large\n");
		return;
	}
	start_connect(px, c, t);
}

/* The first request's head h is at the start of in: route, authorise, forward. */
static void on_head(struct proxy *px, struct pconn *c, const struct proxy_head *h)
{
	struct target t = { 0 };
	if (admit(px, c, h, &t) < 0)
		return;
	if (!t.has_network) {
		answer(px, c, 502, "Bad Gateway", NULL, "this sandbox was made with no network: use space port-forward\n");
		return;
	}
	snprintf(c->id, sizeof(c->id), "%s", t.id);
	c->port = t.port;
	if (strcmp(t.state, "running") != 0 && t.wakes) { /* the connection waits for it to run */
		c->state = P_WAKE;
		c->deadline = mono_ms() + PROXY_WAKE_MS;
		px->waking++;
		watch(px, &c->client, 0);
		return;
	}
	forward(px, c, &t);
}

/* Goes on with a connection whose sandbox was resuming for it: on to the sandbox once it
 * runs; an answer when it will not (failed, gone, paused again by someone) or not in time. */
static void wake_poll(struct proxy *px, struct pconn *c, int64_t now)
{
	struct target t = { .port = c->port };
	snprintf(t.id, sizeof(t.id), "%s", c->id);
	look_up(px->d, &t, NULL);
	if (t.found && strcmp(t.state, "running") == 0) {
		c->state = P_HEAD;
		px->waking--;
		forward(px, c, &t);
	} else if (!t.found || !t.wakes) {
		answer(px, c, 503, "Service Unavailable", NULL, "the sandbox did not resume\n");
	} else if (now > c->deadline) {
		answer(px, c, 504, "Gateway Timeout", NULL, "the sandbox did not resume in time\n");
	}
}

/* Connects to port of the sandbox's address: the server's, or the agent's relay. */
static void dial(struct proxy *px, struct pconn *c, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, c->reach, &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		answer(px, c, 503, "Service Unavailable", NULL, "no socket for the connection\n");
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->up.fd = fd;
	c->up.c = c;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		answer(px, c, 502, "Bad Gateway", NULL, "cannot connect to the sandbox\n");
		return;
	}
	c->state = P_CONNECT;
	watch(px, &c->client, 0); /* nothing more is read from it until the sandbox answers */
	watch(px, &c->up, EPOLLOUT);
}

static void start_connect(struct proxy *px, struct pconn *c, const struct target *t)
{
	snprintf(c->reach, sizeof(c->reach), "%s", t->reach);
	c->deadline = mono_ms() + PROXY_CONNECT_TIMEOUT_MS; /* for the relay's answer too */
	dial(px, c, t->port);
}

/* Interest of both ends from the flows' state; ends the connection when both flows are done,
 * or with the answer it owes once the sandbox's side has ended. */
static void rearm(struct proxy *px, struct pconn *c)
{
	if (c->owed && c->u2c.eof && c->u2c.len == 0) {
		ssize_t w = send(c->client.fd, c->owed, c->owed_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		drop(px, c);
		return;
	}
	struct flow *f[2] = { &c->c2u, &c->u2c };
	struct end *dst[2] = { &c->up, &c->client };
	for (int i = 0; i < 2; i++)
		if (f[i]->eof && f[i]->len == 0 && !f[i]->shut) {
			shutdown(dst[i]->fd, SHUT_WR);
			f[i]->shut = true;
		}
	if (c->c2u.shut && c->u2c.shut) {
		drop(px, c);
		return;
	}
	uint32_t client = 0, up = 0;
	if (proxy_reading_client(c))
		client |= EPOLLIN | EPOLLRDHUP;
	if (c->u2c.len > 0)
		client |= EPOLLOUT;
	if (!c->u2c.eof && c->u2c.len < PROXY_BUF)
		up |= EPOLLIN | EPOLLRDHUP;
	if (c->c2u.len > 0)
		up |= EPOLLOUT;
	watch(px, &c->client, client);
	watch(px, &c->up, up);
}

/* PIPE: an event of one end. Bytes read and sent both ways; any byte moved keeps it alive. */
static void on_pipe(struct proxy *px, struct pconn *c, struct end *e, uint32_t ev)
{
	bool in = ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
	ssize_t moved = 0;
	if (ev & EPOLLERR)
		goto broken; /* reset: reported at every wait, even for an end not being read */
	if (in && e == &c->client && proxy_reading_client(c)) {
		ssize_t r = recv(c->client.fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		if (r > 0)
			c->in_len += (size_t)r, moved += r;
		else if (r == 0)
			c->in_eof = true;
		else if (errno != EAGAIN && errno != EINTR)
			goto broken;
	}
	if (in && e == &c->up) {
		ssize_t r = proxy_flow_read(&c->u2c, c->up.fd);
		if (r < 0)
			goto broken;
		moved += r;
		if (c->rstate == R_UPGRADE) {
			int s = proxy_http_status(&c->status, c->u2c.buf + c->u2c.len - r, (size_t)r);
			if (s > 0)
				c->rstate = R_TUNNEL;
			else if (s < 0 || c->u2c.eof)
				c->rstate = R_HEAD; /* not switched: requests go on */
		}
	}
	advance(px, c);
	if (c->dropped)
		return;
	ssize_t w1 = proxy_flow_write(&c->c2u, c->up.fd), w2 = proxy_flow_write(&c->u2c, c->client.fd);
	if (w1 < 0 || w2 < 0)
		goto broken;
	if (w1 > 0 && c->rstate != R_REFUSED)
		advance(px, c); /* room again for what waits in `in` */
	if (c->dropped)
		return;
	if (moved + w1 + w2 > 0)
		c->deadline = mono_ms() + idle_ms(px);
	rearm(px, c);
	return;
broken:
	drop(px, c);
}

/* CONNECT and RELAY: the sandbox's side answered. */
static void on_connect(struct proxy *px, struct pconn *c)
{
	if (c->state == P_CONNECT) {
		int err = 0;
		socklen_t len = sizeof(err);
		getsockopt(c->up.fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err == ECONNREFUSED && !c->relayed) {
			/* nothing on the sandbox's address: a server on its loopback, through the relay */
			c->relayed = true;
			watch(px, &c->up, 0);
			close(c->up.fd);
			c->up.fd = -1;
			dial(px, c, SP_RELAY_PORT);
			return;
		}
		if (!err && c->relayed) {
			unsigned char port[2] = { (unsigned char)(c->port >> 8), (unsigned char)c->port };
			if (send(c->up.fd, port, 2, MSG_NOSIGNAL | MSG_DONTWAIT) != 2)
				err = EIO;
			else {
				c->state = P_RELAY;
				watch(px, &c->up, EPOLLIN);
				return;
			}
		}
		if (err) {
			char msg[256];
			snprintf(msg, sizeof(msg), "nothing answers on port %d in the sandbox (%s)\n", c->port,
				 strerror(err));
			answer(px, c, 502, "Bad Gateway", NULL, msg);
			return;
		}
	} else {
		unsigned char status = EIO;
		ssize_t r = recv(c->up.fd, &status, 1, MSG_DONTWAIT);
		if (r < 0 && errno == EAGAIN)
			return;
		if (r != 1 || status != 0) {
			char msg[256];
			snprintf(msg, sizeof(msg),
				 "nothing answers on port %d in the sandbox (%s): is a server listening there?\n", c->port,
				 strerror(r == 1 ? status : ECONNREFUSED));
			answer(px, c, 502, "Bad Gateway", NULL, msg);
			return;
		}
	}
	c->state = P_PIPE; /* the first request's body, if any, follows its head (R_BODY) */
	c->deadline = mono_ms() + idle_ms(px);
	on_pipe(px, c, &c->up, EPOLLOUT);
}

static void on_event(struct proxy *px, struct end *e, uint32_t ev)
{
	struct pconn *c = e->c;
	if (c->dropped)
		return; /* its other end's event, earlier in this round, closed it */
	if (c->state == P_CONNECT || c->state == P_RELAY) {
		on_connect(px, c);
		return;
	}
	if (c->state == P_PIPE) {
		on_pipe(px, c, e, ev);
		return;
	}
	/* P_HEAD: the first request's head */
	ssize_t r = recv(c->client.fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		drop(px, c);
		return;
	}
	if (r > 0)
		c->in_len += (size_t)r;
	struct proxy_head h;
	int rc = proxy_http_head(c->in, c->in_len, &h);
	if (rc > 0)
		on_head(px, c, &h);
	else if (rc < 0)
		refuse_head(px, c, rc);
}

/* How many connections come from addr now. */
static int conns_from(const struct proxy *px, struct in_addr addr)
{
	int n = 0;
	for (const struct pconn *c = px->conns; c; c = c->next)
		n += c->peer.s_addr == addr.s_addr;
	return n;
}

static void on_accept(struct proxy *px)
{
	for (;;) {
		struct sockaddr_in sa = { 0 };
		socklen_t salen = sizeof(sa);
		int fd = accept4(px->lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		stats_add(px->d->stats, STATS_PROXY_CONNECTIONS, 1);
		if (px->nconns >= PROXY_CONNS_MAX || conns_from(px, sa.sin_addr) >= PROXY_CONNS_PER_ADDR) {
			stats_add(px->d->stats, STATS_PROXY_REFUSED_BUSY, 1);
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
			ssize_t w = send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)w;
			close(fd);
			continue;
		}
		struct pconn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->client = (struct end){ .c = c, .fd = fd };
		c->up = (struct end){ .c = c, .fd = -1 };
		c->peer = sa.sin_addr;
		int64_t head = idle_ms(px) < PROXY_HEAD_TIMEOUT_MS ? idle_ms(px) : PROXY_HEAD_TIMEOUT_MS;
		c->deadline = mono_ms() + head;
		c->next = px->conns;
		if (px->conns)
			px->conns->prev = c;
		px->conns = c;
		px->nconns++;
		watch(px, &c->client, EPOLLIN | EPOLLRDHUP);
	}
}

/* The deadline of each connection's state, and the sandboxes resuming for some. */
static void on_tick(struct proxy *px)
{
	int64_t now = mono_ms();
	for (struct pconn *c = px->conns, *next; c; c = next) {
		next = c->next;
		if (c->state == P_WAKE)
			wake_poll(px, c, now);
		else if (now <= c->deadline)
			continue;
		else if (c->state == P_HEAD)
			answer(px, c, 408, "Request Timeout", NULL, "the request's head did not arrive in time\n");
		else if (c->state == P_CONNECT || c->state == P_RELAY)
			answer(px, c, 504, "Gateway Timeout", NULL, "the sandbox's port did not answer in time\n");
		else
			drop(px, c); /* P_PIPE: nothing moved for the idle timeout */
	}
}

static void *proxy_main(void *arg)
{
	struct proxy *px = arg;
	struct epoll_event evs[64];
	for (;;) {
		/* connections waiting for their sandbox to resume look again every PROXY_WAKE_POLL_MS */
		int n = epoll_wait(px->epfd, evs, 64, px->waking ? PROXY_WAKE_POLL_MS : 1000);
		for (int i = 0; i < n; i++) {
			struct end *e = evs[i].data.ptr;
			if (e == &px->waker)
				return NULL;
			if (e == &px->listener)
				on_accept(px);
			else
				on_event(px, e, evs[i].events);
		}
		on_tick(px);
		free_dropped(px);
	}
}

int proxy_start(struct daemon *d)
{
	if (!d->cfg.proxy_listen[0])
		return 0;
	char host[128];
	snprintf(host, sizeof(host), "%s", d->cfg.proxy_listen);
	char *colon = strrchr(host, ':');
	if (!colon) {
		log_error("--proxy-listen wants HOST:PORT, not %s", d->cfg.proxy_listen);
		return -EINVAL;
	}
	*colon = '\0';
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		log_error("--proxy-listen wants an IPv4 address, not %s", host);
		return -EINVAL;
	}
	struct proxy *px = calloc(1, sizeof(*px));
	if (!px)
		return -ENOMEM;
	px->d = d;
	px->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(px->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	px->epfd = epoll_create1(EPOLL_CLOEXEC);
	px->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int rc = 0;
	if (px->lfd < 0 || px->epfd < 0 || px->wakefd < 0 || bind(px->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(px->lfd, 1024) < 0)
		rc = -errno;
	if (rc == 0) {
		px->listener = (struct end){ .fd = px->lfd };
		px->waker = (struct end){ .fd = px->wakefd };
		watch(px, &px->listener, EPOLLIN);
		watch(px, &px->waker, EPOLLIN);
		rc = -pthread_create(&px->thread, NULL, proxy_main, px);
	}
	if (rc < 0) {
		log_error("cannot start the port proxy on %s: %s", d->cfg.proxy_listen, strerror(-rc));
		if (px->lfd >= 0)
			close(px->lfd);
		if (px->epfd >= 0)
			close(px->epfd);
		if (px->wakefd >= 0)
			close(px->wakefd);
		free(px);
		return rc;
	}
	d->proxy = px;
	log_info("port proxy on %s: http://<port>-<sandbox id>.%s:%s/", d->cfg.proxy_listen, d->cfg.proxy_domain, colon + 1);
	return 0;
}

void proxy_stop(struct daemon *d)
{
	struct proxy *px = d->proxy;
	if (!px)
		return;
	uint64_t one = 1;
	ssize_t w = write(px->wakefd, &one, sizeof(one));
	(void)w;
	pthread_join(px->thread, NULL);
	while (px->conns)
		drop(px, px->conns);
	free_dropped(px);
	close(px->lfd);
	close(px->epfd);
	close(px->wakefd);
	free(px);
	d->proxy = NULL;
}

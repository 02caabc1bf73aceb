/*
 * daemon/net/proxy.c - the port proxy (see proxy.h).
 *
 * A connection goes through three states: HEAD (reading the first request's head from the
 * client), CONNECT (a non-blocking connect to the sandbox's address is under way) and PIPE
 * (bytes carried both ways). Each direction has a buffer of PROXY_BUF bytes: a side is read
 * only while its buffer has room, so a slow reader slows the writer and nothing grows. When
 * both directions have ended, the sandbox's side is closed with a reset (SO_LINGER 0): a
 * connection closed that way leaves no time-wait inside the sandbox, which gVisor could not
 * write into a suspend's image (lifecycle.c, drain_network).
 */
#include "daemon/net/proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
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
#include "daemon/net/net.h"
#include "proto/agent.h"

enum pstate { P_HEAD, P_WAKE, P_CONNECT, P_RELAY, P_PIPE };

struct pconn;

/* One socket of a connection, as epoll knows it. */
struct end {
	struct pconn *c;
	int fd;
	uint32_t events; /* what epoll watches now */
};

/* Bytes on their way from one end to the other. */
struct flow {
	char buf[PROXY_BUF];
	size_t off, len;
	bool eof;  /* its source ended */
	bool shut; /* its destination was told (shutdown SHUT_WR) */
};

struct pconn {
	struct pconn *next, *prev;
	enum pstate state;
	struct end client, up;
	struct flow c2u, u2c;
	int64_t deadline; /* HEAD: by when the head must be in; WAKE: the sandbox must run */
	size_t head_end;  /* WAKE: the head's length in c2u */
	char id[SANDBOX_ID_LEN + 1]; /* WAKE: the sandbox resuming for it */
	int port;         /* the sandbox's port it goes to */
	bool relayed;     /* through the agent's relay (a server bound to loopback only) */
	char reach[16];   /* the sandbox's address */
	bool dropped;     /* closed; freed once the round of events that may still name it is over */
	struct pconn *next_dropped;
};

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


/* ---- the head: pure parsing ---- */

/* The value of cookie `name` in a Cookie header's value, into out. */
static bool cookie_value(const char *v, size_t len, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name);
	for (const char *p = v, *end = v + len; p < end;) {
		while (p < end && (*p == ' ' || *p == ';'))
			p++;
		if (p >= end)
			break;
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *stop = semi ? semi : end;
		if ((size_t)(stop - p) > nl && !strncmp(p, name, nl) && p[nl] == '=') {
			snprintf(out, n, "%.*s", (int)(stop - p - nl - 1), p + nl + 1);
			return true;
		}
		p = stop;
	}
	return false;
}

/* The target without its space_token= parameter into out; the token into tok (if any). */
static void strip_query_token(const char *target, size_t len, char *out, size_t n, char *tok, size_t ntok)
{
	const char *q = memchr(target, '?', len);
	size_t used = 0;
	tok[0] = '\0';
	if (!q) {
		snprintf(out, n, "%.*s", (int)len, target);
		return;
	}
	used = (size_t)snprintf(out, n, "%.*s", (int)(q - target), target);
	char sep = '?';
	for (const char *p = q + 1, *end = target + len; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		if ((size_t)(stop - p) > 12 && !strncmp(p, "space_token=", 12))
			snprintf(tok, ntok, "%.*s", (int)(stop - p - 12), p + 12);
		else if (stop > p && used < n)
			used += (size_t)snprintf(out + used, n - used, "%c%.*s", sep, (int)(stop - p), p), sep = '&';
		p = stop + (amp != NULL);
	}
}

static bool same_token(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);
	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
	return diff == 0 && lb > 0;
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
		free(c);
	}
}

/* A whole response to the client, then the end of the connection. */
static void answer(struct proxy *px, struct pconn *c, int status, const char *reason, const char *extra,
		   const char *body)
{
	char out[2048];
	int n = snprintf(out, sizeof(out),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\nCache-Control: no-store\r\n%s\r\n%s",
			 status, reason, strlen(body), extra ? extra : "", body);
	if (n > 0) {
		ssize_t w = send(c->client.fd, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
	}
	drop(px, c);
}

struct target {
	char id[SANDBOX_ID_LEN + 1];
	int port;
	bool found, allowed, has_network;
	bool wakes;       /* not running, but resuming for this connection (its auto_resume) */
	char state[16];
	char reach[16];
};

/* What the head asks for, checked against the sandbox (token: the one given, or NULL when
 * the connection was let in already); fills t. A paused or suspended sandbox whose auto_resume
 * is on is resumed for a connection let in, as any request for it is (api.c). [takes d->lock] */
static void look_up(struct daemon *d, struct target *t, const char *token)
{
	daemon_lock(d);
	struct sandbox *sb = sandbox_find(d, t->id);
	t->found = sb != NULL && !sb->pool;
	if (t->found) {
		t->allowed = !token || sb->public_ports || same_token(token, sb->traffic_token);
		t->has_network = sb->network != NULL;
		snprintf(t->state, sizeof(t->state), "%s", sb_state_name(sb->state));
		if (sb->network)
			net_host_reach(sb, t->reach, sizeof(t->reach));
		bool stopped = sb->state == SB_PAUSED || sb->state == SB_SUSPENDED;
		t->wakes = t->allowed && t->has_network && sandbox_auto_resume(d, sb) &&
			   (stopped || sb->state == SB_PAUSING || sb->state == SB_SUSPENDING || sb->state == SB_RESUMING);
		struct err e = { 0 };
		if (t->wakes && stopped && lifecycle_start(d, sb, ACT_RESUME, NULL, &e) < 0)
			t->wakes = false;
	}
	daemon_unlock(d);
}

/* Copies the head's header line [p, eol) into out unless it is the proxy's own (the token
 * header) or carries the token cookie (copied without it). */
/* Whether the header name [p, p + nl) carries the access token: X-Space-Token, or E2B's
 * E2b-Traffic-Access-Token (what E2B's SDKs send for a sandbox whose traffic is not public). */
static bool token_header(const char *p, size_t nl)
{
	return (nl == 13 && !strncasecmp(p, "X-Space-Token", 13)) ||
	       (nl == 24 && !strncasecmp(p, "E2b-Traffic-Access-Token", 24));
}

static size_t forward_header(const char *p, const char *eol, char *out, size_t room)
{
	const char *colon = memchr(p, ':', (size_t)(eol - p));
	size_t nl = colon ? (size_t)(colon - p) : 0;
	if (colon && token_header(p, nl))
		return 0;
	if (colon && nl == 6 && !strncasecmp(p, "Cookie", 6)) {
		char kept[PROXY_HEAD_MAX];
		size_t used = 0;
		const char *sep = "";
		for (const char *q = colon + 1; q < eol;) {
			while (q < eol && (*q == ' ' || *q == ';'))
				q++;
			if (q >= eol)
				break;
			const char *semi = memchr(q, ';', (size_t)(eol - q));
			const char *stop = semi ? semi : eol;
			if (stop > q && !(stop - q >= 12 && !strncmp(q, "space_token=", 12)) && used < sizeof(kept)) {
				used += (size_t)snprintf(kept + used, sizeof(kept) - used, "%s%.*s", sep, (int)(stop - q), q);
				sep = "; ";
			}
			q = stop;
		}
		if (used == 0 || used >= sizeof(kept))
			return 0;
		int w = snprintf(out, room, "Cookie: %s\r\n", kept);
		return w > 0 && (size_t)w < room ? (size_t)w : 0;
	}
	size_t len = (size_t)(eol - p) + 2;
	if (len > room)
		return 0;
	memcpy(out, p, len);
	return len;
}

static void start_connect(struct proxy *px, struct pconn *c, const struct target *t);
static void forward(struct proxy *px, struct pconn *c, size_t end, const struct target *t);

/* The head is in c->c2u.buf[0, end): route, authorise, forward. */
static void on_head(struct proxy *px, struct pconn *c, size_t end)
{
	char *h = c->c2u.buf;
	const char *line_end = memmem(h, end, "\r\n", 2);
	const char *sp1 = line_end ? memchr(h, ' ', (size_t)(line_end - h)) : NULL;
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
	if (!sp2 || sp2 == sp1 + 1) {
		answer(px, c, 400, "Bad Request", NULL, "not an HTTP request\n");
		return;
	}
	char host[512] = "", token[128] = "", qtok[128] = "", target[PROXY_HEAD_MAX];
	bool have_host = false;
	for (const char *p = line_end + 2; p < h + end - 2;) {
		const char *eol = memmem(p, (size_t)(h + end - p), "\r\n", 2);
		if (!eol || eol == p)
			break;
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (colon) {
			size_t nl = (size_t)(colon - p);
			const char *v = colon + 1;
			size_t vl = (size_t)(eol - v);
			while (vl && *v == ' ')
				v++, vl--;
			if (nl == 4 && !strncasecmp(p, "Host", 4)) {
				snprintf(host, sizeof(host), "%.*s", (int)vl, v);
				have_host = true;
			} else if (token_header(p, nl)) {
				snprintf(token, sizeof(token), "%.*s", (int)vl, v);
			} else if (nl == 6 && !strncasecmp(p, "Cookie", 6) && !token[0]) {
				cookie_value(v, vl, "space_token", token, sizeof(token));
			}
		}
		p = eol + 2;
	}
	strip_query_token(sp1 + 1, (size_t)(sp2 - sp1 - 1), target, sizeof(target), qtok, sizeof(qtok));
	struct target t = { 0 };
	if (!have_host || proxy_parse_host(host, strlen(host), px->d->proxy_domain, t.id, &t.port) < 0) {
		answer(px, c, 404, "Not Found", NULL,
		       "this is space's port proxy: open http://<port>-<sandbox id>.<domain>/ to reach a port\n");
		return;
	}
	const char *given = qtok[0] ? qtok : token;
	look_up(px->d, &t, given);
	if (!t.found || !t.allowed) { /* the same answer whether the sandbox exists or not */
		if (given[0])
			answer(px, c, 403, "Forbidden", NULL, "this token does not open this port\n");
		else
			answer(px, c, 401, "Unauthorized", NULL,
			       "this port needs the sandbox's access token: header X-Space-Token, or ?space_token=\n");
		return;
	}
	if (qtok[0]) { /* a browser's first visit: the token becomes a cookie of this host alone */
		char extra[PROXY_HEAD_MAX + 256];
		snprintf(extra, sizeof(extra),
			 "Location: %s\r\nSet-Cookie: space_token=%s; Path=/; HttpOnly; SameSite=Lax\r\n",
			 target[0] ? target : "/", qtok);
		answer(px, c, 302, "Found", extra, "");
		return;
	}
	if (!t.has_network) {
		answer(px, c, 502, "Bad Gateway", NULL, "this sandbox was made with no network: use space port-forward\n");
		return;
	}
	if (strcmp(t.state, "running") != 0 && t.wakes) { /* the connection waits for it to run */
		c->state = P_WAKE;
		c->head_end = end;
		c->deadline = mono_ms() + PROXY_WAKE_MS;
		snprintf(c->id, sizeof(c->id), "%s", t.id);
		c->port = t.port;
		px->waking++;
		watch(px, &c->client, 0);
		return;
	}
	forward(px, c, end, &t);
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
		forward(px, c, c->head_end, &t);
	} else if (!t.found || !t.wakes) {
		answer(px, c, 503, "Service Unavailable", NULL, "the sandbox did not resume\n");
	} else if (now > c->deadline) {
		answer(px, c, 504, "Gateway Timeout", NULL, "the sandbox did not resume in time\n");
	}
}

/* The head of a connection let in, to a running sandbox: forwarded, and the sandbox dialled. */
static void forward(struct proxy *px, struct pconn *c, size_t end, const struct target *t)
{
	char *h = c->c2u.buf;
	const char *line_end = memmem(h, end, "\r\n", 2);
	if (strcmp(t->state, "running") != 0) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the sandbox is %s: resume it to reach its ports\n", t->state);
		answer(px, c, 503, "Service Unavailable", NULL, msg);
		return;
	}
	/* the head again, without the proxy's own header and cookie, then what followed it */
	char *fwd = malloc(PROXY_BUF);
	if (!fwd) {
		answer(px, c, 503, "Service Unavailable", NULL, "out of memory\n");
		return;
	}
	size_t used = (size_t)(line_end - h) + 2;
	memcpy(fwd, h, used);
	for (const char *p = line_end + 2; p < h + end;) {
		const char *eol = memmem(p, (size_t)(h + end - p), "\r\n", 2);
		if (!eol)
			break;
		if (eol == p) {
			memcpy(fwd + used, "\r\n", 2);
			used += 2;
			break;
		}
		used += forward_header(p, eol, fwd + used, PROXY_BUF - used - 2);
		p = eol + 2;
	}
	size_t rest = c->c2u.len - end;
	if (used + rest > PROXY_BUF) {
		free(fwd);
		answer(px, c, 431, "Request Header Fields Too Large", NULL, "the request's head is too large\n");
		return;
	}
	memcpy(fwd + used, h + end, rest);
	memcpy(c->c2u.buf, fwd, used + rest);
	c->c2u.off = 0;
	c->c2u.len = used + rest;
	free(fwd);
	start_connect(px, c, t);
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
	c->port = t->port;
	snprintf(c->reach, sizeof(c->reach), "%s", t->reach);
	dial(px, c, t->port);
}

/* Interest of both ends from the flows' state; ends the connection when both flows are done. */
static void rearm(struct proxy *px, struct pconn *c)
{
	struct flow *f[2] = { &c->c2u, &c->u2c };
	struct end *src[2] = { &c->client, &c->up }, *dst[2] = { &c->up, &c->client };
	for (int i = 0; i < 2; i++)
		if (f[i]->eof && f[i]->len == 0 && !f[i]->shut) {
			shutdown(dst[i]->fd, SHUT_WR);
			f[i]->shut = true;
		}
	if (c->c2u.shut && c->u2c.shut) {
		drop(px, c);
		return;
	}
	uint32_t ev[2] = { 0, 0 }; /* client, up */
	for (int i = 0; i < 2; i++) {
		uint32_t *s = src[i] == &c->client ? &ev[0] : &ev[1];
		uint32_t *t = dst[i] == &c->client ? &ev[0] : &ev[1];
		if (!f[i]->eof && f[i]->len < PROXY_BUF)
			*s |= EPOLLIN | EPOLLRDHUP;
		if (f[i]->len > 0)
			*t |= EPOLLOUT;
	}
	watch(px, &c->client, ev[0]);
	watch(px, &c->up, ev[1]);
}

/* Moves what it can of flow f from src to dst (reading only when src is readable; a write is
 * tried whenever bytes wait: the socket says EAGAIN when full); -1 when the connection is broken. */
static int pump(struct flow *f, int src, int dst, bool readable)
{
	if (readable && !f->eof) {
		if (f->off > 0 && f->len > 0 && f->off + f->len == PROXY_BUF) {
			memmove(f->buf, f->buf + f->off, f->len);
			f->off = 0;
		} else if (f->len == 0) {
			f->off = 0;
		}
		size_t room = PROXY_BUF - f->off - f->len;
		if (room > 0) {
			ssize_t r = recv(src, f->buf + f->off + f->len, room, MSG_DONTWAIT);
			if (r > 0)
				f->len += (size_t)r;
			else if (r == 0)
				f->eof = true;
			else if (errno != EAGAIN && errno != EINTR)
				return -1;
		}
	}
	if (f->len > 0) {
		ssize_t w = send(dst, f->buf + f->off, f->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			f->off += (size_t)w;
			f->len -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	return 0;
}

static void on_event(struct proxy *px, struct end *e, uint32_t ev)
{
	struct pconn *c = e->c;
	if (c->dropped)
		return; /* its other end's event, earlier in this round, closed it */
	if (c->state == P_HEAD) {
		struct flow *f = &c->c2u;
		ssize_t r = recv(c->client.fd, f->buf + f->len, PROXY_HEAD_MAX - f->len, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			drop(px, c);
			return;
		}
		if (r > 0)
			f->len += (size_t)r;
		const char *end = memmem(f->buf, f->len, "\r\n\r\n", 4);
		if (end)
			on_head(px, c, (size_t)(end - f->buf) + 4);
		else if (f->len >= PROXY_HEAD_MAX)
			answer(px, c, 431, "Request Header Fields Too Large", NULL, "the request's head is too large\n");
		return;
	}
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
		c->state = P_PIPE;
		ev = EPOLLOUT;
	} else if (c->state == P_RELAY) {
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
		c->state = P_PIPE;
		ev = EPOLLOUT;
	}
	bool in = ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
	int rc;
	if (e == &c->client)
		rc = pump(&c->c2u, c->client.fd, c->up.fd, in) < 0 || pump(&c->u2c, c->up.fd, c->client.fd, false) < 0;
	else
		rc = pump(&c->u2c, c->up.fd, c->client.fd, in) < 0 || pump(&c->c2u, c->client.fd, c->up.fd, false) < 0;
	if (rc) {
		drop(px, c);
		return;
	}
	rearm(px, c);
}

static void on_accept(struct proxy *px)
{
	for (;;) {
		int fd = accept4(px->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (px->nconns >= PROXY_CONNS_MAX) {
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
		c->deadline = mono_ms() + PROXY_HEAD_TIMEOUT_MS;
		c->next = px->conns;
		if (px->conns)
			px->conns->prev = c;
		px->conns = c;
		px->nconns++;
		watch(px, &c->client, EPOLLIN | EPOLLRDHUP);
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
		int64_t now = mono_ms();
		for (struct pconn *c = px->conns, *next; c; c = next) {
			next = c->next;
			if (c->state == P_HEAD && now > c->deadline)
				answer(px, c, 408, "Request Timeout", NULL, "the request's head did not arrive in time\n");
			else if (c->state == P_WAKE)
				wake_poll(px, c, now);
		}
		free_dropped(px);
	}
}

int proxy_start(struct daemon *d)
{
	if (!d->proxy_listen[0])
		return 0;
	char host[128];
	snprintf(host, sizeof(host), "%s", d->proxy_listen);
	char *colon = strrchr(host, ':');
	if (!colon) {
		log_error("--proxy-listen wants HOST:PORT, not %s", d->proxy_listen);
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
		log_error("cannot start the port proxy on %s: %s", d->proxy_listen, strerror(-rc));
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
	log_info("port proxy on %s: http://<port>-<sandbox id>.%s:%s/", d->proxy_listen, d->proxy_domain, colon + 1);
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

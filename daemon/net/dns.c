/*
 * daemon/net/dns.c - spaced's resolver (see dns.h).
 *
 * A question is answered at once (REFUSED) when the sandbox's policy refuses the name, or
 * sent upstream under a random id of the resolver's own from a socket of its own (connected
 * to the upstream, so bound by the kernel to a random port: an answer forged from elsewhere
 * has to guess both), remembered with the sandbox and the asker's id. Each sandbox has its
 * share, NET_DNS_PENDING_MAX questions waiting at once (more are REFUSED at once), and no
 * table is shared: one sandbox's flood, or one tenant's many sandboxes' floods, leave the
 * others' questions their places. The upstream's answer counts only from the upstream's
 * address and port, with the id and question asked; its addresses are pinned first when the
 * name was allowed by name (so that a connection right after the answer finds them
 * reachable), then it is sent back under the asker's id. A question unanswered upstream within
 * NET_DNS_TIMEOUT_MS is forgotten: the asker's own resolver library asks again.
 *
 * Over TCP (what a resolver library uses after a truncated answer), each connection has a
 * thread of its own that reads a question at a time (a two-byte length, then the message),
 * decides the same way and asks upstream over TCP on a connection of its own. A whole message
 * has NET_DNS_TCP_MSG_MS to come, however it trickles in (and the upstream's the same), so a
 * connection is not held by a byte at a time. A sandbox has NET_DNS_TCP_PER_SANDBOX
 * connections at once (more are closed at once), and so at most that many threads.
 */
#include "daemon/net/dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/stats.h"
#include "daemon/net/net.h"
#include "daemon/net/policy.h"

#define NET_DNS_BACKLOG 64 /* connections over TCP not yet accepted */

struct pending {
	struct pending *next;
	int fd;                   /* its socket to the upstream (in the epoll set) */
	bool pin;                 /* the name was allowed by name: pin the answer's addresses */
	uint16_t up_id, asker_id;
	struct sockaddr_in asker; /* the sandbox's slot address and port */
	char sandbox[SANDBOX_ID_LEN + 1];
	char name[256];
	int64_t deadline;
};

struct tcp_conn {
	struct tcp_conn *next;
	struct dns *r;
	int fd;
	struct sockaddr_in from;
	char sandbox[SANDBOX_ID_LEN + 1];
};

struct dns {
	struct daemon *d;
	pthread_t thread;
	int sfd, tfd, epfd, wakefd;
	bool upstream;            /* one is known: else every question is refused */
	struct sockaddr_in up;
	struct pending *pend;     /* the questions waiting upstream (the resolver's thread's) */
	pthread_mutex_t tcp_lock; /* guards tcp, tcp_open */
	pthread_cond_t tcp_gone;
	int tcp_open;
	struct tcp_conn *tcp;     /* the connections served */
};

/* The upstream resolver: --dns-upstream, else the first IPv4 nameserver of /etc/resolv.conf. */
static int upstream(struct daemon *d, struct sockaddr_in *out)
{
	char addr[64] = "";
	int port = 53;
	if (d->cfg.dns_upstream[0]) {
		snprintf(addr, sizeof(addr), "%s", d->cfg.dns_upstream);
		char *colon = strchr(addr, ':');
		if (colon) {
			*colon = '\0';
			port = atoi(colon + 1);
		}
	} else {
		FILE *f = fopen("/etc/resolv.conf", "re");
		char line[256];
		while (f && fgets(line, sizeof(line), f) && !addr[0]) {
			char a[64];
			struct in_addr probe;
			if (sscanf(line, " nameserver %63s", a) == 1 && inet_pton(AF_INET, a, &probe) == 1)
				snprintf(addr, sizeof(addr), "%s", a);
		}
		if (f)
			fclose(f);
	}
	*out = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	return addr[0] && port > 0 && port < 65536 && inet_pton(AF_INET, addr, &out->sin_addr) == 1 ? 0 : -ENOENT;
}

struct asker {
	bool found;
	char id[SANDBOX_ID_LEN + 1];
	int slot;
	enum net_name_verdict verdict;
};

/* The sandbox whose slot address `from` is, and what its policy says of name. [takes d->lock] */
static struct asker who(struct daemon *d, const struct sockaddr_in *from, const char *name)
{
	struct asker a = { 0 };
	char src[16], reach[16];
	inet_ntop(AF_INET, &from->sin_addr, src, sizeof(src));
	daemon_lock(d);
	for (struct sandbox *sb = d->sandboxes; sb && !a.found; sb = sb->next) {
		if (!sb->network)
			continue;
		net_host_reach(sb, reach, sizeof(reach));
		if (strcmp(reach, src) != 0)
			continue;
		a.found = true;
		snprintf(a.id, sizeof(a.id), "%s", sb->id);
		a.slot = sb->conf.net_slot;
		a.verdict = name ? net_policy_name(sb->network, name) : NET_NAME_REFUSE;
	}
	daemon_unlock(d);
	return a;
}

static void reply(struct dns *r, const uint8_t *msg, size_t n, const struct sockaddr_in *to)
{
	ssize_t w = sendto(r->sfd, msg, n, MSG_DONTWAIT, (const struct sockaddr *)to, sizeof(*to));
	(void)w;
}

static void refuse(struct dns *r, const uint8_t *q, size_t n, const struct sockaddr_in *to)
{
	uint8_t out[NET_DNS_MSG_MAX];
	size_t len = dns_refused(q, n, out, sizeof(out));
	stats_add(r->d->stats, STATS_DNS_REFUSED, 1);
	if (len)
		reply(r, out, len, to);
}

static void on_question(struct dns *r)
{
	uint8_t msg[NET_DNS_MSG_MAX];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(r->sfd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	if (n < 12 || fl != sizeof(from))
		return;
	char name[256];
	uint16_t qtype;
	bool parsed = dns_question(msg, (size_t)n, name, sizeof(name), &qtype) == 0;
	struct asker a = who(r->d, &from, parsed ? name : NULL);
	if (!a.found)
		return; /* not a sandbox of this spaced: no answer at all */
	stats_add(r->d->stats, STATS_DNS_QUERIES, 1);
	if (!parsed || a.verdict == NET_NAME_REFUSE || !r->upstream) {
		refuse(r, msg, (size_t)n, &from);
		return;
	}
	int mine = 0;
	for (struct pending *p = r->pend; p; p = p->next)
		mine += !strcmp(p->sandbox, a.id);
	struct pending *p = mine < NET_DNS_PENDING_MAX ? calloc(1, sizeof(*p)) : NULL;
	if (p) {
		p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };
		if (p->fd < 0 || connect(p->fd, (const struct sockaddr *)&r->up, sizeof(r->up)) < 0 ||
		    getrandom(&p->up_id, sizeof(p->up_id), 0) != (ssize_t)sizeof(p->up_id) ||
		    epoll_ctl(r->epfd, EPOLL_CTL_ADD, p->fd, &ev) < 0) {
			if (p->fd >= 0)
				close(p->fd);
			free(p);
			p = NULL;
		}
	}
	if (!p) {
		refuse(r, msg, (size_t)n, &from); /* a flood is one sandbox's own problem */
		return;
	}
	p->pin = a.verdict == NET_NAME_PIN;
	p->asker_id = (uint16_t)(msg[0] << 8 | msg[1]);
	p->asker = from;
	p->deadline = mono_ms() + NET_DNS_TIMEOUT_MS;
	snprintf(p->sandbox, sizeof(p->sandbox), "%s", a.id);
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->next = r->pend;
	r->pend = p;
	msg[0] = (uint8_t)(p->up_id >> 8);
	msg[1] = (uint8_t)p->up_id;
	if (send(p->fd, msg, (size_t)n, MSG_DONTWAIT) != n)
		p->deadline = 0; /* forgotten at the next sweep */
}

/* Forgets p (closing its socket takes it out of the epoll set). */
static void forget(struct dns *r, struct pending *p)
{
	for (struct pending **pp = &r->pend; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	close(p->fd);
	free(p);
}

/* Forgets the questions unanswered in time: the askers ask again. */
static void sweep(struct dns *r)
{
	int64_t now = mono_ms();
	for (struct pending *p = r->pend, *next; p; p = next) {
		next = p->next;
		if (now >= p->deadline)
			forget(r, p);
	}
}

struct pins {
	struct daemon *d;
	const char *sandbox;
};

static void pin_one(uint32_t addr, uint32_t ttl, void *ctx)
{
	struct pins *ps = ctx;
	uint32_t s = ttl < NET_DNS_PIN_MIN_S ? NET_DNS_PIN_MIN_S : ttl > NET_DNS_PIN_MAX_S ? NET_DNS_PIN_MAX_S : ttl;
	struct err e = { 0 };
	if (net_pin(ps->d, ps->sandbox, addr, s, &e) < 0 && e.kind != ERR_NOT_FOUND)
		log_warn("sandbox %s: cannot pin an answer of its resolver: %s", ps->sandbox, e.msg);
}

static void on_answer(struct dns *r, struct pending *p)
{
	uint8_t msg[NET_DNS_MSG_MAX];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(p->fd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	/* only the upstream's address and port, and the id asked (the socket is connected: the
	 * kernel lets nothing else through, and this says so where it is relied on) */
	if (n < 12 || fl != sizeof(from) || from.sin_addr.s_addr != r->up.sin_addr.s_addr ||
	    from.sin_port != r->up.sin_port || (uint16_t)(msg[0] << 8 | msg[1]) != p->up_id)
		return;
	/* the answer's question must be the one asked (the flags say "answer": read it as a
	 * query's by clearing them in a copy) */
	uint8_t head[NET_DNS_MSG_MAX];
	memcpy(head, msg, (size_t)n);
	head[2] = 0;
	head[3] = 0;
	char name[256];
	uint16_t qtype;
	if (dns_question(head, (size_t)n, name, sizeof(name), &qtype) < 0 || strcmp(name, p->name) != 0)
		return;
	if (p->pin) {
		struct pins ps = { .d = r->d, .sandbox = p->sandbox };
		dns_answers_a(msg, (size_t)n, pin_one, &ps);
	}
	msg[0] = (uint8_t)(p->asker_id >> 8);
	msg[1] = (uint8_t)p->asker_id;
	reply(r, msg, (size_t)n, &p->asker);
	forget(r, p);
}

/* ---- over TCP ---- */

/* Reads exactly n bytes by the time mono_ms() reaches deadline: 0, or -1. */
static int read_all(int fd, uint8_t *p, size_t n, int64_t deadline)
{
	while (n > 0) {
		int64_t left = deadline - mono_ms();
		struct pollfd in = { .fd = fd, .events = POLLIN };
		int ready = left > 0 ? poll(&in, 1, (int)left) : 0;
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			return -1; /* the message's time is up, however much of it came */
		ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Writes msg[0..n) with its two-byte length: 0, or -1. */
static int send_framed(int fd, const uint8_t *msg, size_t n)
{
	uint8_t len[2] = { (uint8_t)(n >> 8), (uint8_t)n };
	struct iovec iov[2] = { { len, 2 }, { (void *)msg, n } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t want = n + 2;
	ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
	if (w == (ssize_t)want)
		return 0;
	if (w < 2) /* rare: a socket buffer full under a few bytes; the rest in order */
		return w == 1 && send(fd, len + 1, 1, MSG_NOSIGNAL) == 1 && send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
	size_t done = (size_t)w - 2;
	return send(fd, msg + done, n - done, MSG_NOSIGNAL) == (ssize_t)(n - done) ? 0 : -1;
}

/* One framed message into msg (at most NET_DNS_TCP_MSG_MAX), whole within ms from now: its
 * length, or -1. */
static ssize_t recv_framed(int fd, uint8_t *msg, int ms)
{
	uint8_t len[2];
	int64_t deadline = mono_ms() + ms;
	if (read_all(fd, len, 2, deadline) < 0)
		return -1;
	size_t n = (size_t)len[0] << 8 | len[1];
	return n >= 12 && read_all(fd, msg, n, deadline) == 0 ? (ssize_t)n : -1;
}

static void timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)); /* connect's too */
}

/* The upstream's answer to q[0..n) over TCP into ans: its length, or -1. */
static ssize_t ask_tcp(struct dns *r, const uint8_t *q, size_t n, uint8_t *ans)
{
	int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u < 0)
		return -1;
	timeouts(u, NET_DNS_TIMEOUT_MS);
	ssize_t got = -1;
	if (connect(u, (struct sockaddr *)&r->up, sizeof(r->up)) == 0 && send_framed(u, q, n) == 0)
		got = recv_framed(u, ans, NET_DNS_TIMEOUT_MS);
	close(u);
	return got;
}

/* Whether the answer a[0..n) answers the question q (the same id and name). */
static bool answers(const uint8_t *a, size_t n, const uint8_t *q, const char *name)
{
	uint8_t head[12];
	memcpy(head, a, 12);
	head[2] = head[3] = 0; /* read the answer's question as a query's */
	uint8_t *copy = malloc(n);
	if (!copy)
		return false;
	memcpy(copy, a, n);
	memcpy(copy, head, 12);
	char got[256];
	uint16_t qtype;
	bool same = a[0] == q[0] && a[1] == q[1] && dns_question(copy, n, got, sizeof(got), &qtype) == 0 &&
		    strcmp(got, name) == 0;
	free(copy);
	return same;
}

static void *tcp_main(void *arg)
{
	struct tcp_conn *c = arg;
	struct dns *r = c->r;
	uint8_t *q = malloc(NET_DNS_TCP_MSG_MAX), *ans = malloc(NET_DNS_TCP_MSG_MAX);
	timeouts(c->fd, NET_DNS_TIMEOUT_MS); /* the answer's sending */
	ssize_t n;
	while (q && ans && (n = recv_framed(c->fd, q, NET_DNS_TCP_MSG_MS)) > 0) {
		char name[256];
		uint16_t qtype;
		bool parsed = dns_question(q, (size_t)n, name, sizeof(name), &qtype) == 0;
		struct asker a = who(r->d, &c->from, parsed ? name : NULL);
		if (!a.found)
			break;
		stats_add(r->d->stats, STATS_DNS_QUERIES, 1);
		ssize_t len;
		if (!parsed || a.verdict == NET_NAME_REFUSE || !r->upstream) {
			stats_add(r->d->stats, STATS_DNS_REFUSED, 1);
			len = (ssize_t)dns_refused(q, (size_t)n, ans, NET_DNS_TCP_MSG_MAX);
		} else {
			len = ask_tcp(r, q, (size_t)n, ans);
			if (len < 12 || !answers(ans, (size_t)len, q, name))
				break; /* the asker asks again, or gives up */
			if (a.verdict == NET_NAME_PIN) {
				struct pins ps = { .d = r->d, .sandbox = a.id };
				dns_answers_a(ans, (size_t)len, pin_one, &ps);
			}
		}
		if (len <= 0 || send_framed(c->fd, ans, (size_t)len) < 0)
			break;
	}
	free(q);
	free(ans);
	pthread_mutex_lock(&r->tcp_lock);
	for (struct tcp_conn **pc = &r->tcp; *pc; pc = &(*pc)->next)
		if (*pc == c) {
			*pc = c->next;
			break;
		}
	close(c->fd);
	free(c);
	r->tcp_open--;
	pthread_cond_broadcast(&r->tcp_gone);
	pthread_mutex_unlock(&r->tcp_lock);
	return NULL;
}

/* A new connection: a thread of its own, within the limits; otherwise closed at once. */
static void on_connection(struct dns *r)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	int fd = accept4(r->tfd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct asker a = who(r->d, &from, NULL);
	pthread_mutex_lock(&r->tcp_lock);
	int mine = 0;
	for (struct tcp_conn *o = r->tcp; o; o = o->next)
		mine += !strcmp(o->sandbox, a.id);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	struct tcp_conn *c = a.found && mine < NET_DNS_TCP_PER_SANDBOX ? calloc(1, sizeof(*c)) : NULL;
	if (c) {
		*c = (struct tcp_conn){ .next = r->tcp, .r = r, .fd = fd, .from = from };
		snprintf(c->sandbox, sizeof(c->sandbox), "%s", a.id);
		if (pthread_create(&t, &attr, tcp_main, c) == 0) {
			r->tcp = c;
			r->tcp_open++;
			fd = -1;
		} else {
			free(c);
		}
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&r->tcp_lock);
	if (fd >= 0)
		close(fd);
}

static void *dns_main(void *arg)
{
	struct dns *r = arg;
	struct epoll_event evs[16];
	for (;;) {
		int n = epoll_wait(r->epfd, evs, 16, 1000);
		for (int i = 0; i < n; i++) {
			void *at = evs[i].data.ptr; /* one of r's sockets, or a question waiting upstream */
			if (at == &r->wakefd)
				return NULL;
			if (at == &r->sfd)
				on_question(r);
			else if (at == &r->tfd)
				on_connection(r);
			else
				on_answer(r, at);
		}
		sweep(r);
	}
}

int dns_start(struct daemon *d)
{
	struct sockaddr_in up, at = { .sin_family = AF_INET, .sin_port = htons((uint16_t)d->cfg.dns_port),
				      .sin_addr.s_addr = htonl(INADDR_ANY) };
	if (upstream(d, &up) < 0) {
		log_warn("no upstream resolver (--dns-upstream, or a nameserver in /etc/resolv.conf): sandboxes' "
			 "questions are refused");
		up.sin_port = 0;
	}
	struct dns *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->d = d;
	r->upstream = up.sin_port != 0;
	r->up = up;
	pthread_mutex_init(&r->tcp_lock, NULL);
	pthread_cond_init(&r->tcp_gone, NULL);
	r->sfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	r->tfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int rc = 0, one = 1;
	if (r->tfd >= 0)
		setsockopt(r->tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (r->sfd < 0 || r->tfd < 0 || r->epfd < 0 || r->wakefd < 0 ||
	    bind(r->sfd, (struct sockaddr *)&at, sizeof(at)) < 0 || bind(r->tfd, (struct sockaddr *)&at, sizeof(at)) < 0 ||
	    listen(r->tfd, NET_DNS_BACKLOG) < 0)
		rc = -errno;
	int *fds[] = { &r->sfd, &r->tfd, &r->wakefd };
	for (int i = 0; rc == 0 && i < 3; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = fds[i] };
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, *fds[i], &ev) < 0)
			rc = -errno;
	}
	if (rc == 0)
		rc = -pthread_create(&r->thread, NULL, dns_main, r);
	if (rc < 0) {
		log_error("cannot start the sandboxes' resolver on port %d: %s", d->cfg.dns_port, strerror(-rc));
		for (int i = 0; i < 3; i++)
			if (*fds[i] >= 0)
				close(*fds[i]);
		if (r->epfd >= 0)
			close(r->epfd);
		free(r);
		return rc;
	}
	d->dns = r;
	char ups[32] = "none";
	if (up.sin_port)
		snprintf(ups, sizeof(ups), "%s:%d", inet_ntoa(up.sin_addr), ntohs(up.sin_port));
	log_info("sandboxes' resolver on port %d, asking %s", d->cfg.dns_port, ups);
	return 0;
}

void dns_stop(struct daemon *d)
{
	struct dns *r = d->dns;
	if (!r)
		return;
	uint64_t one = 1;
	ssize_t w = write(r->wakefd, &one, sizeof(one));
	(void)w;
	pthread_join(r->thread, NULL);
	/* the connections' threads end once their sockets do */
	pthread_mutex_lock(&r->tcp_lock);
	for (struct tcp_conn *c = r->tcp; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (r->tcp_open > 0)
		pthread_cond_wait(&r->tcp_gone, &r->tcp_lock);
	pthread_mutex_unlock(&r->tcp_lock);
	close(r->tfd);
	close(r->sfd);
	while (r->pend)
		forget(r, r->pend);
	close(r->wakefd);
	close(r->epfd);
	free(r);
	d->dns = NULL;
}

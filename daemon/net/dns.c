/*
 * daemon/net/dns.c - spaced's resolver (see dns.h).
 *
 * A question is answered at once (REFUSED) when the sandbox's policy refuses the name, or
 * sent upstream under an id of the resolver's own, remembered with the sandbox and the
 * asker's id in a table of NET_DNS_PENDING_TOTAL entries. The upstream's answer is matched by
 * that id and its question, the addresses pinned first when the name was allowed by name (so
 * that a connection right after the answer finds them reachable), then sent back under the
 * asker's id. A question unanswered upstream within NET_DNS_TIMEOUT_MS is forgotten: the
 * asker's own resolver library asks again.
 */
#include "daemon/net/dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/net/net.h"
#include "daemon/net/policy.h"

#define NET_DNS_PENDING_TOTAL 1024 /* questions waiting upstream, all sandboxes together */

struct pending {
	bool used;
	bool pin;                 /* the name was allowed by name: pin the answer's addresses */
	uint16_t up_id, asker_id;
	struct sockaddr_in asker; /* the sandbox's slot address and port */
	char sandbox[SANDBOX_ID_LEN + 1];
	char name[256];
	int64_t deadline;
};

struct dns {
	struct daemon *d;
	pthread_t thread;
	int sfd, ufd, epfd, wakefd;
	bool upstream;            /* one is known: else every question is refused */
	struct pending pend[NET_DNS_PENDING_TOTAL];
};

/* The upstream resolver: --dns-upstream, else the first IPv4 nameserver of /etc/resolv.conf. */
static int upstream(struct daemon *d, struct sockaddr_in *out)
{
	char addr[64] = "";
	int port = 53;
	if (d->dns_upstream[0]) {
		snprintf(addr, sizeof(addr), "%s", d->dns_upstream);
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
		a.slot = sb->net_slot;
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
	if (!parsed || a.verdict == NET_NAME_REFUSE || !r->upstream) {
		refuse(r, msg, (size_t)n, &from);
		return;
	}
	int mine = 0, free_at = -1;
	int64_t now = mono_ms();
	for (int i = 0; i < NET_DNS_PENDING_TOTAL; i++) {
		struct pending *p = &r->pend[i];
		if (p->used && now > p->deadline)
			p->used = false; /* unanswered: the asker asks again */
		if (p->used && !strcmp(p->sandbox, a.id))
			mine++;
		if (!p->used && free_at < 0)
			free_at = i;
	}
	if (mine >= NET_DNS_PENDING_MAX || free_at < 0) {
		refuse(r, msg, (size_t)n, &from); /* a flood is one sandbox's own problem */
		return;
	}
	struct pending *p = &r->pend[free_at];
	uint16_t id;
	bool taken;
	do { /* an id no other question waiting upstream has */
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			return;
		taken = false;
		for (int i = 0; i < NET_DNS_PENDING_TOTAL && !taken; i++)
			taken = r->pend[i].used && r->pend[i].up_id == id;
	} while (taken);
	*p = (struct pending){ .used = true, .pin = a.verdict == NET_NAME_PIN, .up_id = id,
			       .asker_id = (uint16_t)(msg[0] << 8 | msg[1]), .asker = from,
			       .deadline = now + NET_DNS_TIMEOUT_MS };
	snprintf(p->sandbox, sizeof(p->sandbox), "%s", a.id);
	snprintf(p->name, sizeof(p->name), "%s", name);
	msg[0] = (uint8_t)(id >> 8);
	msg[1] = (uint8_t)id;
	if (send(r->ufd, msg, (size_t)n, MSG_DONTWAIT) != n)
		p->used = false;
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
	if (net_pin(ps->d, ps->sandbox, addr, s, &e) < 0 && e.status != 404)
		log_warn("sandbox %s: cannot pin an answer of its resolver: %s", ps->sandbox, e.msg);
}

static void on_answer(struct dns *r)
{
	uint8_t msg[NET_DNS_MSG_MAX];
	ssize_t n = recv(r->ufd, msg, sizeof(msg), MSG_DONTWAIT);
	if (n < 12)
		return;
	uint16_t id = (uint16_t)(msg[0] << 8 | msg[1]);
	for (int i = 0; i < NET_DNS_PENDING_TOTAL; i++) {
		struct pending *p = &r->pend[i];
		if (!p->used || p->up_id != id)
			continue;
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
		p->used = false;
		if (p->pin) {
			struct pins ps = { .d = r->d, .sandbox = p->sandbox };
			dns_answers_a(msg, (size_t)n, pin_one, &ps);
		}
		msg[0] = (uint8_t)(p->asker_id >> 8);
		msg[1] = (uint8_t)p->asker_id;
		reply(r, msg, (size_t)n, &p->asker);
		return;
	}
}

static void *dns_main(void *arg)
{
	struct dns *r = arg;
	struct epoll_event evs[16];
	for (;;) {
		int n = epoll_wait(r->epfd, evs, 16, 1000);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == r->wakefd)
				return NULL;
			if (fd == r->sfd)
				on_question(r);
			else if (fd == r->ufd)
				on_answer(r);
		}
	}
}

int dns_start(struct daemon *d)
{
	struct sockaddr_in up, at = { .sin_family = AF_INET, .sin_port = htons((uint16_t)d->dns_port),
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
	r->sfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	r->ufd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int rc = 0;
	if (r->sfd < 0 || r->ufd < 0 || r->epfd < 0 || r->wakefd < 0 ||
	    bind(r->sfd, (struct sockaddr *)&at, sizeof(at)) < 0 ||
	    (up.sin_port && connect(r->ufd, (struct sockaddr *)&up, sizeof(up)) < 0))
		rc = -errno;
	int fds[] = { r->sfd, r->ufd, r->wakefd };
	for (int i = 0; rc == 0 && i < 3; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
			rc = -errno;
	}
	if (rc == 0)
		rc = -pthread_create(&r->thread, NULL, dns_main, r);
	if (rc < 0) {
		log_error("cannot start the sandboxes' resolver on port %d: %s", d->dns_port, strerror(-rc));
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (r->epfd >= 0)
			close(r->epfd);
		free(r);
		return rc;
	}
	d->dns = r;
	char ups[32] = "none";
	if (up.sin_port)
		snprintf(ups, sizeof(ups), "%s:%d", inet_ntoa(up.sin_addr), ntohs(up.sin_port));
	log_info("sandboxes' resolver on port %d, asking %s", d->dns_port, ups);
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
	close(r->sfd);
	close(r->ufd);
	close(r->wakefd);
	close(r->epfd);
	free(r);
	d->dns = NULL;
}

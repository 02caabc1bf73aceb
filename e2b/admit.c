/*
 * e2b/admit.c - who may hold the front's connections (gateway.h; docs/e2b.md, "How it is
 * built"). A connection is unauthenticated until a request on it has shown a valid key or a
 * sandbox's access token on its head (control_admit, envd_admit); until then it is closed after
 * GW_UNAUTH_IDLE_S of silence, and the front takes no more than GW_MAX_UNAUTH_PER_IP such
 * connections from one address and GW_MAX_UNAUTH in all: one without a credential holds a
 * thread for seconds, never the front. Once authenticated, GW_IDLE_S applies.
 *
 * libmicrohttpd accepts in one thread and tells of a connection there (the accept policy, then
 * MHD_CONNECTION_NOTIFY_STARTED) before the connection's own thread runs, so counting at the
 * start and checking at the policy never lets more in than the limits.
 */
#include "e2b/gateway.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* A connection the front holds: its client's address and whether it authenticated. */
struct gw_conn {
	struct gw_conn *prev, *next;
	unsigned char addr[16]; /* IPv4 in the first 4 bytes, else IPv6 */
	bool authed;
};

void admit_init(struct gw_admit *a)
{
	pthread_mutex_init(&a->lock, NULL);
	a->conns = NULL;
	a->unauth = 0;
}

static void addr_key(const struct sockaddr *sa, unsigned char key[16])
{
	memset(key, 0, 16);
	if (sa && sa->sa_family == AF_INET)
		memcpy(key, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa && sa->sa_family == AF_INET6)
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

/* Unauthenticated connections from key. [a->lock] */
static unsigned unauth_from(const struct gw_admit *a, const unsigned char key[16])
{
	unsigned n = 0;
	for (const struct gw_conn *c = a->conns; c; c = c->next)
		n += !c->authed && memcmp(c->addr, key, 16) == 0;
	return n;
}

enum MHD_Result admit_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct gw_admit *a = &((struct gw *)cls)->admit;
	unsigned char key[16];
	(void)addrlen;
	addr_key(addr, key);
	pthread_mutex_lock(&a->lock);
	bool ok = a->unauth < GW_MAX_UNAUTH && unauth_from(a, key) < GW_MAX_UNAUTH_PER_IP;
	pthread_mutex_unlock(&a->lock);
	return ok ? MHD_YES : MHD_NO;
}

void admit_notify(void *cls, struct MHD_Connection *conn, void **socket_context, enum MHD_ConnectionNotificationCode code)
{
	struct gw_admit *a = &((struct gw *)cls)->admit;
	struct gw_conn *c = *socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (!(c = calloc(1, sizeof(*c))))
			return; /* counted nowhere: it can only authenticate, never hold more */
		addr_key(ci ? ci->client_addr : NULL, c->addr);
		pthread_mutex_lock(&a->lock);
		c->next = a->conns;
		if (a->conns)
			a->conns->prev = c;
		a->conns = c;
		a->unauth++;
		pthread_mutex_unlock(&a->lock);
		*socket_context = c;
		return;
	}
	if (!c)
		return;
	pthread_mutex_lock(&a->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	a->unauth -= !c->authed;
	pthread_mutex_unlock(&a->lock);
	free(c);
	*socket_context = NULL;
}

void admit_authenticated(struct req *r)
{
	struct gw_admit *a = &r->gw->admit;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct gw_conn *c = ci ? ci->socket_context : NULL;
	if (!c || c->authed)
		return;
	pthread_mutex_lock(&a->lock);
	c->authed = true;
	a->unauth--;
	pthread_mutex_unlock(&a->lock);
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)GW_IDLE_S);
}

/*
 * daemon/net/proxy_int.h - what the files of the port proxy share: a connection, its states
 * and its two flows, and what proxy_flow.c does with their bytes. The proxy's interface is
 * proxy.h.
 */
#ifndef SPACE_DAEMON_NET_PROXY_INT_H
#define SPACE_DAEMON_NET_PROXY_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"
#include "daemon/net/proxy.h"
#include "daemon/net/proxy_http.h"

enum pstate { P_HEAD, P_WAKE, P_CONNECT, P_RELAY, P_PIPE };

/* PIPE: how far the client's bytes were read as requests. */
enum rstate {
	R_HEAD,    /* the next request's head */
	R_BODY,    /* its body (struct proxy_body) */
	R_UPGRADE, /* an Upgrade request went on: nothing more is read until its answer's status */
	R_TUNNEL,  /* it switched protocols: bytes pass unread */
	R_REFUSED, /* a request was refused: its answer (owed) waits for the sandbox's side to end */
};

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
	enum rstate rstate;
	struct end client, up;
	struct flow c2u, u2c;
	char in[PROXY_HEAD_MAX]; /* the client's bytes not yet read as requests */
	size_t in_len;
	bool in_eof;              /* the client ended its side */
	struct proxy_body body;   /* R_BODY */
	bool upgrade;             /* the request whose body passes asked for an Upgrade */
	struct proxy_status status; /* R_UPGRADE: its answer's status */
	char *owed;               /* R_REFUSED: the whole answer, sent once the sandbox's side ends */
	size_t owed_len;
	int64_t deadline; /* of the state it is in (the proxy's main loop) */
	char id[SANDBOX_ID_LEN + 1]; /* the sandbox it goes to (its first request's) */
	int port;         /* ... and port */
	bool relayed;     /* through the agent's relay (a server bound to loopback only) */
	char reach[16];   /* the sandbox's address */
	struct in_addr peer; /* the client's address */
	bool dropped;     /* closed; freed once the round of events that may still name it is over */
	struct pconn *next_dropped;
};

/* proxy_flow.c */

/* Room at the end of f for more bytes (what was sent is moved out of the way first). */
size_t proxy_flow_room(struct flow *f);
/* Moves the first n bytes of the client's (read) into c2u, which has room for them; without
 * copy they are only dropped from in. */
void proxy_take_in(struct pconn *c, size_t n, bool copy);
/* Request h (at the start of in, admitted) goes on without the token: -ENOSPC until c2u has room. */
int proxy_pass_head(struct pconn *c, const struct proxy_head *h);
/* Whether the client's side is read now (PIPE). */
bool proxy_reading_client(const struct pconn *c);
/* Reads what src has into f while it has room: the bytes read (the last of f's), 0 when none
 * came, -1 when the connection is broken; f->eof at its end. */
ssize_t proxy_flow_read(struct flow *f, int src);
/* Sends what f holds to dst as far as it takes it: the bytes sent, or -1 when broken. */
ssize_t proxy_flow_write(struct flow *f, int dst);

#endif

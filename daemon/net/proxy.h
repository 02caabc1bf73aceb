/*
 * daemon/net/proxy.h - the port proxy: http://<port>-<id>.<domain>:<proxy port>/ reaches TCP
 * port <port> of sandbox <id> (docs/network.md).
 *
 * spaced --proxy-listen ADDR:PORT [--proxy-domain DOMAIN] starts it: one thread, one epoll
 * set, every connection a pair of sockets. It reads the first request's head of a connection
 * (at most PROXY_HEAD_MAX bytes), takes the sandbox and port from its Host, checks the
 * sandbox's traffic token (header X-Space-Token or E2B's E2b-Traffic-Access-Token, or the
 * cookie space_token, which a one-time query parameter ?space_token= sets with a redirect)
 * unless the sandbox has public ports,
 * connects to the sandbox's address (its edge's end, net_host_reach) and from then on carries
 * bytes both ways unchanged: keep-alive requests, streamed responses and WebSocket upgrades
 * pass through as they are. A refused token, like an unknown sandbox, is 401 (none given) or
 * 403 (wrong), with the same body: nothing is said about whether the sandbox exists.
 */
#ifndef SPACE_DAEMON_PROXY_H
#define SPACE_DAEMON_PROXY_H

#include "daemon/daemon.h"

#define PROXY_HEAD_MAX 16384      /* bytes of a connection's first request head */
#define PROXY_CONNS_MAX 4096      /* client connections at once; more are answered 503 */
#define PROXY_HEAD_TIMEOUT_MS 30000 /* for the first request's head to arrive */
#define PROXY_BUF 65536           /* bytes held in each direction of a connection */
/* A connection to a paused or suspended sandbox whose auto_resume is on resumes it and waits
 * for it to run, at most PROXY_WAKE_MS (then 504), looking every PROXY_WAKE_POLL_MS. */
#define PROXY_WAKE_MS 120000
#define PROXY_WAKE_POLL_MS 50

/* Starts the proxy on d->proxy_listen (nothing when it is ""). 0 or -errno (logged). */
int proxy_start(struct daemon *d);

/* Stops it: closes the listener and every connection, joins the thread. */
void proxy_stop(struct daemon *d);

/* The sandbox id and port a Host header names under domain ("8000-<id>.<domain>[:port]"),
 * case-insensitively. 0, or -EINVAL when it names none. Pure: for the unit test and fuzzer. */
int proxy_parse_host(const char *host, size_t len, const char *domain, char id[SANDBOX_ID_LEN + 1], int *port);

#endif

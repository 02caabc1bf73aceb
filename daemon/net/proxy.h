/*
 * daemon/net/proxy.h - the port proxy: http://<port>-<id>.<domain>:<proxy port>/ reaches TCP
 * port <port> of sandbox <id> (docs/network.md).
 *
 * spaced --proxy-listen ADDR:PORT [--proxy-domain DOMAIN] starts it: one thread, one epoll
 * set, every connection a pair of sockets. It reads every request of a connection
 * (proxy_http.h): takes the sandbox and port from the first one's Host, and checks each one's
 * Host (the same port of the same sandbox) and the sandbox's traffic token (header
 * X-Space-Token or E2B's E2b-Traffic-Access-Token, or the cookie space_token, which a one-time
 * query parameter ?space_token= sets with a redirect) unless the sandbox has public ports,
 * and removes the token before passing the request on; the body passes unchanged. It connects
 * to the sandbox's address (its edge's end, net_host_reach) for the first request; a request
 * refused after it is answered once the sandbox's answers so far have all come, and ends the
 * connection. After a 101 to an Upgrade request, bytes are carried both ways unchanged.
 * A refused token, like an unknown sandbox, is 401 (none given) or 403 (wrong), with the same
 * body: nothing is said about whether the sandbox exists.
 */
#ifndef SPACE_DAEMON_PROXY_H
#define SPACE_DAEMON_PROXY_H

#include "daemon/daemon.h"
#include "daemon/net/proxy_http.h"

#define PROXY_CONNS_MAX 1024        /* client connections at once; more are answered 503 */
#define PROXY_CONNS_PER_ADDR 128    /* ... from one client address; more are answered 503 */
#define PROXY_BUF 32768             /* bytes held in each direction of a connection */
#define PROXY_HEAD_TIMEOUT_MS 30000 /* for the first request's head to arrive (or the idle
				       timeout, when shorter) */
#define PROXY_CONNECT_TIMEOUT_MS 10000 /* for the sandbox's port to answer (then 504) */
/* A connection on which no byte moves either way for the idle timeout is closed: between
 * requests, in a request, and over an upgraded connection. spaced --proxy-idle-timeout. */
#define PROXY_IDLE_TIMEOUT_S 300
#define PROXY_IDLE_TIMEOUT_MAX_S 86400
/* A connection to a paused or suspended sandbox whose auto_resume is on resumes it and waits
 * for it to run, at most PROXY_WAKE_MS (then 504), looking every PROXY_WAKE_POLL_MS. */
#define PROXY_WAKE_MS 120000
#define PROXY_WAKE_POLL_MS 50

/* Starts the proxy on d->cfg.proxy_listen (nothing when it is ""). 0 or -errno (logged). */
int proxy_start(struct daemon *d);

/* Stops it: closes the listener and every connection, joins the thread. */
void proxy_stop(struct daemon *d);

/* The sandbox id and port a Host header names under domain ("8000-<id>.<domain>[:port]"),
 * case-insensitively. 0, or -EINVAL when it names none. Pure: for the unit test and fuzzer. */
int proxy_parse_host(const char *host, size_t len, const char *domain, char id[SANDBOX_ID_LEN + 1], int *port);

#endif

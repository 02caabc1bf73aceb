/*
 * daemon/api/http.h - spaced's HTTP listeners (Unix socket always, TCP with a
 * bearer token when --listen is given, over TLS with --tls-cert/--tls-key).
 */
#ifndef SPACE_DAEMON_HTTP_H
#define SPACE_DAEMON_HTTP_H

#include "lib/host/err.h"
#include "daemon/daemon.h"

#define HTTP_TLS_MAX_PEM (1 << 20) /* bytes of a --tls-cert or --tls-key file */
/* On the Unix socket: a token whose tenant the request acts as, seeing and touching only that
 * tenant's sandboxes as a TCP request with the token would (the E2B front's requests). */
#define SPACE_TENANT_TOKEN "Space-Tenant-Token"

/* Checks --tls-cert/--tls-key (both or neither, and only with --listen) and reads their PEM
 * text into d, so that a mistake is told at start, before anything slow. Returns 0 (also
 * without TLS) or -errno with e saying why. Call before http_start. */
int http_tls_load(struct daemon *d, struct err *e);
/* Opens the listeners and starts serving: the Unix socket plain, TCP with TLS when loaded.
 * Returns 0 or -errno. */
int http_start(struct daemon *d);
/* Listens on --e2b-listen and starts the E2B front (space-e2b) on that socket, asking spaced
 * on its Unix socket; it ends with spaced. Called by http_start. Returns 0 or -errno. */
int e2b_start(struct daemon *d);
/* Once a second: an E2B front that ended is started again on its socket (at most once every
 * E2B_RESTART_MS). */
#define E2B_RESTART_MS 2000
void e2b_tick(struct daemon *d);
/* The HTTP status an error of this kind is answered with (ERR_NONE: 200). */
unsigned http_status(enum err_kind kind);
/* Stops accepting connections and removes the socket. */
void http_stop(struct daemon *d);

#endif

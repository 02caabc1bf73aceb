/*
 * daemon/api/http.h - spaced's HTTP listeners (Unix socket always, TCP with a
 * bearer token when --listen is given).
 */
#ifndef SPACE_DAEMON_HTTP_H
#define SPACE_DAEMON_HTTP_H

#include "daemon/daemon.h"

/* Opens the listeners and starts serving. Returns 0 or -errno. */
int http_start(struct daemon *d);
/* Stops accepting connections and removes the socket. */
void http_stop(struct daemon *d);

#endif

/*
 * e2b/ports.h - sandbox-plane requests for a port other than envd's (ports.c): carried to that
 * port inside the sandbox through spaced's port proxy.
 */
#ifndef SPACE_E2B_PORTS_H
#define SPACE_E2B_PORTS_H

#include <stdbool.h>

#include "e2b/gateway.h"

/* Whether r names (E2b-Sandbox-Port) a port other than envd's, GW_ENVD_PORT. */
bool ports_other(struct req *r);
/* Answers r, a request for such a port of sandbox sbid, with the answer of the server on it
 * (status, content type and body as they arrive), or 502 {"code", "message", "sandboxId"} when
 * it cannot be carried there (no port proxy, the proxy not reached). Its body must be whole. */
enum MHD_Result ports_handle(struct req *r, const char *sbid);

#endif

/*
 * e2b/route.h - the E2B front's route tables: a request's method and path matched against a
 * table of (method, path pattern, handler), first match wins, in one place (route_find).
 *
 * A pattern is a path whose segments are literal text or a parameter: "{name}" takes one
 * whole segment, non-empty and without '/', of at most the route's max bytes (0: any length
 * the path holds); "{name*}", last in a pattern, takes the rest of the path (empty, or with
 * '/' in it). Parameters are taken as they are in the path (not percent-decoded), in the
 * order the pattern names them, into the route_args the handler is given. A route's method
 * NULL is any method. Nothing here answers a request: the caller answers the path that no
 * route takes (gw_route: 404 "no route").
 */
#ifndef SPACE_E2B_ROUTE_H
#define SPACE_E2B_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#define ROUTE_PARAMS_MAX 2 /* parameters in one pattern, at most */
#define ROUTE_PATH_MAX 1024 /* bytes of a path routed, with its NUL (a longer one matches nothing) */

struct req;
struct client;

/* What a handler is given: the parameters its pattern took, and the plane's own context. */
struct route_args {
	const char *param[ROUTE_PARAMS_MAX]; /* into buf, NUL-terminated */
	char buf[ROUTE_PATH_MAX + ROUTE_PARAMS_MAX];
	struct client *c;                    /* control plane: spaced, asked as the request's tenant */
	const char *sbid;                    /* sandbox plane: the request's sandbox (checked) */
};

typedef enum MHD_Result (*route_fn)(struct req *r, const struct route_args *a);

struct route {
	const char *method;  /* "GET", ...; NULL: any */
	const char *pattern; /* "/sandboxes/{id}/pause" */
	route_fn fn;
	size_t max;          /* bytes of a "{name}" parameter, at most; 0: no bound but the path's */
};

/* Whether path matches pattern (parameters of at most max bytes), with the parameters into
 * a->param (a's c and sbid untouched); a's parameters are undefined when it does not. */
bool route_match(const char *pattern, size_t max, const char *path, struct route_args *a);
/* The first of the n routes of table that takes method and path, its parameters into a; NULL
 * when none does. */
const struct route *route_find(const struct route *table, size_t n, const char *method, const char *path,
			       struct route_args *a);

#endif

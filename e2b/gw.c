/*
 * e2b/gw.c - what every handler of the E2B front uses (gateway.h): a request's headers,
 * arguments and user, its answers (JSON, a page, an error in E2B's shape or from spaced's),
 * the client of spaced that acts as the request's tenant, and the clocks and paths the
 * handlers share.
 */
#include "e2b/gateway.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2b/connect.h"

const char *gw_header(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *gw_arg(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *gw_user(struct req *r, char *dst, size_t n)
{
	const char *arg = gw_arg(r, "username");
	if (arg && *arg && strlen(arg) < n)
		return strcpy(dst, arg);
	const char *h = gw_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	uint8_t *raw = NULL;
	size_t len = 0;
	if (!h || strncmp(h, "Basic ", 6) != 0 || connect_bytes(h + 6, &raw, &len) < 0)
		return NULL;
	size_t user = 0;
	while (user < len && raw[user] != ':')
		user++;
	const char *out = NULL;
	if (user > 0 && user < n && memchr(raw, '\0', user) == NULL) {
		memcpy(dst, raw, user);
		dst[user] = '\0';
		out = dst;
	}
	free(raw);
	return out;
}

/* Answers with body as JSON (stolen), and an X-Next-Token of next unless NULL. */
static enum MHD_Result answer_json(struct req *r, unsigned status, json_t *body, const char *next)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	size_t n = text ? strlen(text) : 0;
	struct MHD_Response *resp = MHD_create_response_from_buffer(n, text ? text : "", text ? MHD_RESPMEM_MUST_FREE
											 : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	if (text)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (next)
		MHD_add_response_header(resp, "X-Next-Token", next);
	enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result gw_json(struct req *r, unsigned status, json_t *body)
{
	return answer_json(r, status, body, NULL);
}

enum MHD_Result gw_json_paged(struct req *r, json_t *page, const char *next)
{
	return answer_json(r, 200, page, next);
}

enum MHD_Result gw_error(struct req *r, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gw_json(r, status, json_pack("{s:i, s:s}", "code", (int)status, "message", msg));
}

enum MHD_Result gw_error_from(struct req *r, const struct client_err *e)
{
	if (e->kind != CLIENT_ERR_API)
		return gw_error(r, 502, "spaced cannot be reached: %s", e->message);
	unsigned st = (unsigned)e->status;
	if (st >= 500 && st != 502 && st != 503 && st != 507)
		st = 500;
	return gw_error(r, st, "%s", e->message);
}

enum MHD_Result gw_connect_error(struct req *r, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gw_json(r, (unsigned)connect_http_status(code), json_pack("{s:s, s:s}", "code", code, "message", msg));
}

struct client *gw_as_tenant(struct gw *gw, const char *key, struct client *c, char *hdr, size_t n)
{
	if (!key || !*key)
		return NULL;
	/* the Python SDK wants keys to look like E2B's: e2b_<rest> is the token sp_<rest> */
	if (strncmp(key, "e2b_", 4) == 0)
		snprintf(hdr, n, "Space-Tenant-Token: sp_%s", key + 4);
	else
		snprintf(hdr, n, "Space-Tenant-Token: %s", key);
	*c = gw->up;
	c->auth = hdr;
	return c;
}

int64_t gw_mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

long gw_timeout_s(struct req *r)
{
	const char *h = gw_header(r, "Connect-Timeout-Ms");
	char *end;
	long ms = h ? strtol(h, &end, 10) : 0;
	return h && !*end && ms > 0 ? (ms + 999) / 1000 : 0;
}

bool gw_sandbox_path(char *dst, size_t n, const char *id, const char *rest)
{
	size_t len = strlen(id);
	if (len == 0 || len > 12 || strspn(id, "0123456789abcdef") != len)
		return false;
	return (size_t)snprintf(dst, n, "/v1/sandboxes/%s%s", id, rest) < n;
}

enum MHD_Result gw_no_route(struct req *r)
{
	return gw_error(r, 404, "no route %s %s", r->method, r->url);
}

enum MHD_Result gw_route(struct req *r, const struct route *table, size_t n, struct route_args *a)
{
	const struct route *rt = route_find(table, n, r->method, r->url, a);
	return rt ? rt->fn(r, a) : gw_no_route(r);
}

json_t *gw_unary(struct req *r, enum MHD_Result *rc)
{
	char why[200];
	json_t *msg = connect_unary_request(buf_head(&r->body), buf_avail(&r->body), why, sizeof(why));
	if (!msg)
		*rc = gw_connect_error(r, "invalid_argument", "%s", why);
	return msg;
}

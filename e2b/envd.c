/*
 * e2b/envd.c - E2B's sandbox plane on spaced's API (docs/e2b.md, "sandbox plane"): the
 * request names its sandbox in E2b-Sandbox-Id and proves it may use it with the sandbox's
 * access token in X-Access-Token; a sandbox that is not there or not running is 502, as the
 * SDKs expect of a sandbox that is gone.
 */
#include "e2b/gateway.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/connect.h"
#include "e2b/process.h"

/* Constant-time comparison of two NUL-terminated strings. */
static bool same_secret(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned char diff = (unsigned char)(na != nb);
	for (size_t i = 0; i < na && i < nb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* The sandbox of the request, checked: its spaced record (new reference), or NULL with the
 * answer queued in *rc. */
static json_t *checked_sandbox(struct req *r, const char *sbid, enum MHD_Result *rc)
{
	char path[64];
	json_t *sb = NULL;
	struct client_err e = { 0 };
	const char *token = gw_header(r, "X-Access-Token");
	if (!gw_sandbox_path(path, sizeof(path), sbid, "") || client_request(&r->gw->up, "GET", path, NULL, &sb, &e) < 0) {
		*rc = e.kind == CLIENT_ERR_API && e.status != 404 ? gw_error_from(r, &e)
			: gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message", "sandbox is not running",
						    "sandboxId", sbid));
		return NULL;
	}
	const char *have = json_string_value(json_object_get(sb, "access_token"));
	if (!token || !have || !same_secret(token, have)) {
		json_decref(sb);
		*rc = gw_error(r, 401, "X-Access-Token is not this sandbox's access token");
		return NULL;
	}
	const char *st = json_string_value(json_object_get(sb, "state"));
	if (!st || (strcmp(st, "running") != 0 && strcmp(st, "resuming") != 0 && strcmp(st, "paused") != 0 &&
		    strcmp(st, "suspended") != 0 && strcmp(st, "suspending") != 0 && strcmp(st, "pausing") != 0)) {
		json_decref(sb);
		*rc = gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message", "sandbox is not running",
						"sandboxId", sbid));
		return NULL;
	}
	return sb;
}

bool envd_upload(struct req *r, const char *data, size_t n)
{
	return false;
}

enum MHD_Result envd_handle(struct req *r, const char *sbid)
{
	enum MHD_Result rc = MHD_NO;
	const char *port = gw_header(r, "E2b-Sandbox-Port");
	if (port && strcmp(port, "49983") != 0)
		return gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message",
						 "only the sandbox's own port (49983) is served here", "sandboxId", sbid));
	json_t *sb = checked_sandbox(r, sbid, &rc);
	if (!sb)
		return rc;
	const char *st = json_string_value(json_object_get(sb, "state"));
	bool running = strcmp(st, "running") == 0;
	json_decref(sb);
	if (strcmp(r->url, "/health") == 0)
		return running ? gw_json(r, 204, NULL)
			       : gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message",
							   "sandbox is paused", "sandboxId", sbid));
	if (strcmp(r->method, "POST") == 0 && strncmp(r->url, "/process.Process/", 17) == 0)
		return process_handle(r, sbid, r->url + 17);
	return gw_connect_error(r, "unimplemented", "%s is not offered by space's E2B front yet", r->url);
}

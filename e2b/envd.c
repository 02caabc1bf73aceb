/*
 * e2b/envd.c - E2B's sandbox plane on spaced's API (docs/e2b.md, "sandbox plane"): the
 * request names its sandbox in E2b-Sandbox-Id and proves it may use it with the sandbox's
 * access token in X-Access-Token; a sandbox that is not there or not running is 502, as the
 * SDKs expect of a sandbox that is gone. A paused one created with autoResume is resumed by
 * the request (spaced's transparent resume); one created without stays paused, and is 502.
 * A request for another of the sandbox's ports (E2b-Sandbox-Port) goes to it through spaced's
 * port proxy (ports.h), which decides who may use it, as for getHost(port) traffic.
 */
#include "e2b/gateway.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/connect.h"
#include "e2b/files.h"
#include "e2b/ports.h"
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

/* Checks that the request may use sandbox sbid: 0 with its spaced record (new reference) in
 * *out, or the E2B status that says why not with msg filled. */
static unsigned check(struct req *r, const char *sbid, json_t **out, char *msg, size_t n)
{
	char path[64];
	json_t *sb = NULL;
	struct client_err e = { 0 };
	const char *token = gw_header(r, "X-Access-Token");
	const char *port = gw_header(r, "E2b-Sandbox-Port");
	if (port && strcmp(port, "49983") != 0) {
		snprintf(msg, n, "only the sandbox's own port (49983) is served here");
		return 502;
	}
	if (!gw_sandbox_path(path, sizeof(path), sbid, "") || client_request(&r->gw->up, "GET", path, NULL, &sb, &e) < 0) {
		snprintf(msg, n, "%s", e.kind == CLIENT_ERR_API && e.status != 404 ? e.message : "sandbox is not running");
		return 502;
	}
	const char *have = json_string_value(json_object_get(sb, "access_token"));
	const char *st = json_string_value(json_object_get(sb, "state")) ?: "";
	unsigned status = 0;
	if (!token || !have || !same_secret(token, have)) {
		snprintf(msg, n, "X-Access-Token is not this sandbox's access token");
		status = 401;
	} else if (strcmp(st, "running") != 0 && strcmp(st, "resuming") != 0 &&
		   !(json_is_true(json_object_get(sb, "auto_resume")) && control_state(st))) {
		/* paused: a request resumes it only when it was created with autoResume */
		snprintf(msg, n, "sandbox is not running");
		status = 502;
	}
	if (status)
		json_decref(sb);
	else
		*out = sb;
	return status;
}

static enum MHD_Result refuse(struct req *r, const char *sbid, unsigned status, const char *msg)
{
	if (status == 502)
		return gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message", msg, "sandboxId", sbid));
	return gw_error(r, status, "%s", msg);
}

bool envd_upload(struct req *r, const char *data, size_t n)
{
	const char *sbid = gw_header(r, "E2b-Sandbox-Id");
	if (strcmp(r->method, "POST") != 0 || strcmp(r->url, "/files") != 0 || ports_other(r))
		return false;
	if (!r->checked) { /* nothing is taken for a sandbox the request may not use */
		json_t *sb = NULL;
		char msg[300];
		r->checked = true;
		r->refused = check(r, sbid, &sb, msg, sizeof(msg)) != 0;
		json_decref(sb);
	}
	return r->refused || files_upload(r, sbid, data, n); /* refused: dropped, the answer says why */
}

enum MHD_Result envd_handle(struct req *r, const char *sbid)
{
	if (ports_other(r))
		return ports_handle(r, sbid);
	json_t *sb = NULL;
	char msg[300];
	unsigned status = check(r, sbid, &sb, msg, sizeof(msg));
	if (status)
		return refuse(r, sbid, status, msg);
	bool running = strcmp(json_string_value(json_object_get(sb, "state")), "running") == 0;
	json_decref(sb);
	bool get = strcmp(r->method, "GET") == 0, post = strcmp(r->method, "POST") == 0;
	if (strcmp(r->url, "/health") == 0)
		return running ? gw_json(r, 204, NULL) : refuse(r, sbid, 502, "sandbox is paused");
	if (get && strcmp(r->url, "/files") == 0)
		return files_download(r, sbid);
	if (post && strcmp(r->url, "/files") == 0)
		return files_upload_end(r, sbid);
	if (post && strncmp(r->url, "/process.Process/", 17) == 0)
		return process_handle(r, sbid, r->url + 17);
	if (post && strncmp(r->url, "/filesystem.Filesystem/", 23) == 0)
		return filesystem_handle(r, sbid, r->url + 23);
	return gw_error(r, 404, "no route %s %s", r->method, r->url);
}

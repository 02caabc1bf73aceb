/*
 * e2b/envd.c - E2B's sandbox plane on spaced's API (docs/e2b.md, "sandbox plane"): the
 * request names its sandbox in E2b-Sandbox-Id and proves it may use it with the sandbox's
 * access token in X-Access-Token, checked on the request's head, before any of its body is
 * read. A sandbox that is not there, not running, or not with this token is 502, as the SDKs
 * expect of a sandbox that is gone; the first two read the same, so ids cannot be probed. A
 * paused one created with autoResume is resumed by the request (spaced's transparent resume);
 * one created without stays paused, and is 502.
 * A request for another of the sandbox's ports (E2b-Sandbox-Port) goes to it through spaced's
 * port proxy (ports.h), once its traffic token (E2b-Traffic-Access-Token, unless the ports
 * are public) is checked here the same way.
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
#include "e2b/shape.h"
#include "e2b/watch.h"

bool envd_same_secret(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned char diff = (unsigned char)(na != nb);
	for (size_t i = 0; i < na && i < nb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* The one answer for a sandbox the request may not use: not there, or not with this token.
 * Both read the same, so that ids cannot be probed. */
#define REFUSED "sandbox is not running, or the token given is not its own"

/* Checks that the request may use sandbox sbid: 0 with *running set, or the E2B status that says
 * why not with msg filled. */
static unsigned check(struct req *r, const char *sbid, bool *running, char *msg, size_t n)
{
	char path[64];
	json_t *sb = NULL;
	struct client_err e = { 0 };
	bool other_port = ports_other(r); /* its token is the traffic token, as the proxy's */
	const char *token = gw_header(r, other_port ? "E2b-Traffic-Access-Token" : "X-Access-Token");
	if (gw_sandbox_path(path, sizeof(path), sbid, "") &&
	    client_request(&r->gw->up, "GET", path, NULL, &sb, &e) < 0 && e.kind == CLIENT_ERR_API && e.status != 404) {
		snprintf(msg, n, "%s", e.message); /* spaced's own trouble, the same for any id */
		return 502;
	}
	const char *have = json_string_value(json_object_get(sb, other_port ? "traffic_token" : "access_token"));
	const char *st = json_string_value(json_object_get(sb, "state")) ?: "";
	bool open = other_port && json_is_true(json_object_get(sb, "public_ports"));
	if (r->signed_sbid[0] && strcmp(r->signed_sbid, sbid) == 0)
		open = true; /* its access token made the request's signature (signed.c) */
	unsigned status = 0;
	if (!sb || (!open && (!token || !have || !envd_same_secret(token, have)))) {
		snprintf(msg, n, REFUSED);
		status = 502;
	} else if (strcmp(st, "running") != 0 && strcmp(st, "resuming") != 0 &&
		   !(json_is_true(json_object_get(sb, "auto_resume")) && shape_state(st))) {
		/* paused: a request resumes it only when it was created with autoResume */
		snprintf(msg, n, "sandbox is not running");
		status = 502;
	}
	*running = strcmp(st, "running") == 0;
	json_decref(sb);
	return status;
}

static enum MHD_Result refuse(struct req *r, const char *sbid, unsigned status, const char *msg)
{
	if (status == 502)
		return gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message", msg, "sandboxId", sbid));
	return gw_error(r, status, "%s", msg);
}

bool envd_admit(struct req *r, const char *sbid, enum MHD_Result *rc)
{
	char msg[300];
	unsigned status = check(r, sbid, &r->running, msg, sizeof(msg));
	if (status) {
		*rc = refuse(r, sbid, status, msg);
		return false;
	}
	admit_authenticated(r);
	return true;
}

bool envd_upload(struct req *r, const char *sbid, const char *data, size_t n)
{
	if (strcmp(r->method, "POST") != 0 || strcmp(r->url, "/files") != 0 || ports_other(r))
		return false;
	return files_upload(r, sbid, data, n); /* its sandbox was checked on the head (envd_admit) */
}

static enum MHD_Result health(struct req *r, const struct route_args *a)
{
	return r->running ? gw_json(r, 204, NULL) : refuse(r, a->sbid, 502, "sandbox is paused");
}

#define PROC "/process.Process/"
#define FS "/filesystem.Filesystem/"

/* The sandbox plane's routes, first match wins (route.h). */
static const struct route routes[] = {
	{ NULL, "/health", health, 0 },
	{ "GET", "/files", files_download, 0 },
	{ "POST", "/files", files_upload_end, 0 },
	{ "POST", PROC "Start", process_start, 0 },
	{ "POST", PROC "Connect", process_connect, 0 },
	{ "POST", PROC "List", process_list, 0 },
	{ "POST", PROC "SendInput", process_send_input, 0 },
	{ "POST", PROC "CloseStdin", process_close_stdin, 0 },
	{ "POST", PROC "SendSignal", process_send_signal, 0 },
	{ "POST", PROC "Update", process_update, 0 },
	{ "POST", PROC "{method*}", process_unknown, 0 },
	{ "POST", FS "WatchDir", watch_dir, 0 },
	{ "POST", FS "CreateWatcher", watchers_create, 0 },
	{ "POST", FS "GetWatcherEvents", watchers_events, 0 },
	{ "POST", FS "RemoveWatcher", watchers_remove, 0 },
	{ "POST", FS "Stat", files_stat, 0 },
	{ "POST", FS "ListDir", files_list_dir, 0 },
	{ "POST", FS "MakeDir", files_make_dir, 0 },
	{ "POST", FS "Move", files_move, 0 },
	{ "POST", FS "Remove", files_remove, 0 },
	{ "POST", FS "{method*}", files_unknown, 0 },
};

enum MHD_Result envd_handle(struct req *r, const char *sbid)
{
	if (ports_other(r))
		return ports_handle(r, sbid);
	struct route_args a = { .sbid = sbid };
	return gw_route(r, routes, sizeof(routes) / sizeof(routes[0]), &a);
}

/*
 * e2b/snapshots.c - E2B's fork and snapshots on spaced's (docs/e2b.md, "Fork and snapshots").
 *
 * sandbox.fork() is spaced's fork (POST /v1/sandboxes/{id}/fork), each fork then given E2B's
 * deadline; createSnapshot is spaced's snapshot, listSnapshots its list, deleteSnapshot
 * (E2B's DELETE /templates/{id}: a snapshot is a template there) its delete, and a create whose
 * templateID is a snapshot's id starts from it (control.c). A snapshot's E2B id is spaced's
 * ("s-" and 12 hex digits); its names are its name when it has one. All is asked as the key's
 * tenant, so a tenant sees, forks and deletes only its own.
 */
#include "e2b/gateway.h"
#include "e2b/shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNAPSHOT_ID_CHARS 14 /* "s-" and 12 hex digits, as spaced makes them */
#define CURSOR_MAX 128       /* a page's cursor: a snapshot's created_at and id */

bool snapshots_is_id(const char *s)
{
	return s && strlen(s) == SNAPSHOT_ID_CHARS && strncmp(s, "s-", 2) == 0 &&
	       strspn(s + 2, "0123456789abcdef") == SNAPSHOT_ID_CHARS - 2;
}

/* One fork's entry, SandboxForkResult: the sandbox once its deadline is E2B's, else the error
 * (and the fork, which would outlive what was asked, is removed). */
static json_t *fork_result(struct req *r, struct client *c, const json_t *sb, long timeout)
{
	char path[96];
	struct client_err e = { 0 };
	const char *id = json_string_value(json_object_get(sb, "id"));
	json_t *t = json_pack("{s:i}", "lifetime", (int)timeout);
	int rc = gw_sandbox_path(path, sizeof(path), id, "/timeout") ? client_request(c, "POST", path, t, NULL, &e) : -1;
	json_decref(t);
	if (rc == 0)
		return json_pack("{s:o}", "sandbox", shape_sandbox(r, sb));
	if (gw_sandbox_path(path, sizeof(path), id, "")) {
		struct client_err gone = { 0 };
		client_request(c, "DELETE", path, NULL, NULL, &gone);
	}
	return json_pack("{s:{s:i, s:s}}", "error", "code", e.kind == CLIENT_ERR_API ? e.status : 500, "message",
			 e.message[0] ? e.message : "the fork could not be given its timeout");
}

/* spaced's answer to POST /v1/sandboxes/{id}<rest> with ask (stolen), or NULL with the answer
 * queued in *rc (a sandbox spaced does not show the tenant is not found). */
static json_t *post_sandbox(struct req *r, struct client *c, const char *id, const char *rest, json_t *ask,
			    enum MHD_Result *rc)
{
	char path[96];
	json_t *got = NULL;
	struct client_err e = { 0 };
	int a = gw_sandbox_path(path, sizeof(path), id, rest) ? client_request(c, "POST", path, ask, &got, &e) : -1;
	json_decref(ask);
	if (a == 0)
		return got;
	*rc = e.status == 404 || !e.kind ? gw_error(r, 404, "sandbox %s not found", id) : gw_error_from(r, &e);
	return NULL;
}

enum MHD_Result snapshots_fork(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	json_t *b = shape_body(r);
	long timeout = b ? shape_timeout(b, GW_FORK_TIMEOUT_S) : -1;
	const json_t *n = b ? json_object_get(b, "count") : NULL;
	bool bad_count = n && !json_is_null(n) && !json_is_integer(n);
	json_t *ask = json_pack("{s:I}", "count", n && json_is_integer(n) ? json_integer_value(n) : (json_int_t)1);
	const char *bad = !b ? "the body is not a JSON object" : bad_count ? "count must be a whole number"
			  : timeout < 0 ? "timeout must be whole seconds, 1..86400" : NULL;
	json_decref(b);
	if (bad) {
		json_decref(ask);
		return gw_error(r, 400, "%s", bad);
	}
	enum MHD_Result rc = MHD_NO;
	json_t *got = post_sandbox(r, c, id, "/fork", ask, &rc);
	if (!got)
		return rc;
	size_t i;
	json_t *sb, *out = json_array();
	json_array_foreach(json_object_get(got, "sandboxes"), i, sb)
		json_array_append_new(out, fork_result(r, c, sb, timeout));
	json_decref(got);
	return gw_json(r, 201, out);
}

/* E2B's SnapshotInfo of one of spaced's snapshots. */
static json_t *snapshot_info(const json_t *s)
{
	const char *name = json_string_value(json_object_get(s, "name"));
	json_t *names = json_array();
	if (name && *name)
		json_array_append_new(names, json_string(name));
	return json_pack("{s:s?, s:o}", "snapshotID", json_string_value(json_object_get(s, "id")), "names", names);
}

enum MHD_Result snapshots_take(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	json_t *b = shape_body(r);
	const json_t *name = b ? json_object_get(b, "name") : NULL;
	if (!b || (name && !json_is_string(name) && !json_is_null(name))) {
		json_decref(b);
		return gw_error(r, 400, b ? "name must be a string" : "the body is not a JSON object");
	}
	json_t *ask = json_is_string(name) ? json_pack("{s:O}", "name", name) : json_object();
	json_decref(b);
	enum MHD_Result rc = MHD_NO;
	json_t *s = post_sandbox(r, c, id, "/snapshot", ask, &rc);
	if (!s)
		return rc;
	json_t *out = snapshot_info(s);
	json_decref(s);
	return gw_json(r, 201, out);
}

/* The cursor of snapshot s: its created_at and id. */
static void cursor_of(const json_t *s, char *dst, size_t n)
{
	snprintf(dst, n, "%s_%s", json_string_value(json_object_get(s, "created_at")),
		 json_string_value(json_object_get(s, "id")));
}

/* Whether snapshot s passes listSnapshots' filters: its source sandbox, its name or id. */
static bool wanted(const json_t *s, const char *sandbox, const char *name)
{
	const char *src = json_string_value(json_object_get(s, "sandbox_id"));
	const char *have = json_string_value(json_object_get(s, "name"));
	if (sandbox && (!src || strcmp(src, sandbox) != 0))
		return false;
	return !name || (have && strcmp(have, name) == 0) || strcmp(json_string_value(json_object_get(s, "id")), name) == 0;
}

static int newest_first(const void *a, const void *b)
{
	char x[CURSOR_MAX], y[CURSOR_MAX];
	cursor_of(*(json_t *const *)a, x, sizeof(x));
	cursor_of(*(json_t *const *)b, y, sizeof(y));
	return strcmp(y, x);
}

/* Newest first (by the second, then by id: the order of the cursors, so a page starts after its
 * cursor even when the snapshot it names was deleted meanwhile). */
enum MHD_Result snapshots_list(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *limit_s = gw_arg(r, "limit"), *next = gw_arg(r, "nextToken"), *end = NULL;
	long limit = limit_s ? strtol(limit_s, (char **)&end, 10) : GW_SNAPSHOTS_PAGE;
	if ((end && (*end || end == limit_s)) || limit < 1 || limit > GW_SNAPSHOTS_PAGE_MAX)
		return gw_error(r, 400, "limit must be 1..%d", GW_SNAPSHOTS_PAGE_MAX);
	json_t *all = NULL;
	struct client_err e = { 0 };
	if (client_request(c, "GET", "/v1/snapshots", NULL, &all, &e) < 0)
		return gw_error_from(r, &e);
	json_t *snaps = json_object_get(all, "snapshots"), *s, *page = json_array();
	size_t i, n = 0;
	json_t **v = calloc(json_array_size(snaps) + 1, sizeof(*v));
	json_array_foreach(snaps, i, s) {
		if (v && wanted(s, gw_arg(r, "sandboxID"), gw_arg(r, "name")))
			v[n++] = s;
	}
	qsort(v, n, sizeof(*v), newest_first);
	char cur[CURSOR_MAX] = "", k[CURSOR_MAX];
	bool more = false;
	for (i = 0; i < n && !more; i++) {
		cursor_of(v[i], k, sizeof(k));
		if (next && *next && strcmp(k, next) >= 0) /* at or before the cursor */
			continue;
		more = (long)json_array_size(page) == limit;
		if (!more) {
			json_array_append_new(page, snapshot_info(v[i]));
			snprintf(cur, sizeof(cur), "%s", k);
		}
	}
	free(v);
	json_decref(all);
	if (!v)
		return json_decref(page), gw_error(r, 500, "out of memory");
	return gw_json_paged(r, page, more ? cur : NULL);
}

enum MHD_Result snapshots_delete(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *sid = a->param[0];
	char path[64];
	struct client_err e = { 0 };
	/* only snapshots are deleted here: templates are the operator's */
	if (!snapshots_is_id(sid))
		return gw_error(r, 404, "no snapshot %s", sid);
	snprintf(path, sizeof(path), "/v1/snapshots/%s", sid);
	if (client_request(c, "DELETE", path, NULL, NULL, &e) < 0)
		return e.status == 404 ? gw_error(r, 404, "no snapshot %s", sid) : gw_error_from(r, &e);
	return gw_json(r, 204, NULL);
}

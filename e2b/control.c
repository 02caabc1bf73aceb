/*
 * e2b/control.c - E2B's control plane on spaced's API (docs/e2b.md, "control plane").
 *
 * An E2B sandbox's timeout is a deadline that activity does not move: spaced's lifetime,
 * with no idle timeout. Its action is kill, or suspend when the create asked autoPause; E2B's
 * pause is spaced's suspend (it keeps memory and files on disk, and does not expire). How
 * states and templates are named to E2B is shape.c's. Requests are routed by the table at
 * the end of this file (route.h), which names the handlers of builds.c, snapshots.c,
 * templates.c and metrics.c beside this file's.
 */
#include "e2b/gateway.h"
#include "e2b/builds.h"
#include "e2b/query.h"
#include "e2b/shape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAR_FUTURE "9999-12-31T23:59:59Z" /* endAt of a sandbox without a deadline */
#define LIST_MAX 1000                     /* the most sandboxes one page may hold */
#define E2B_ALL_TRAFFIC "0.0.0.0/0"         /* the SDKs' ALL_TRAFFIC: every address */
#define REFRESH_MAX_S 3600                /* a refresh's duration, at most (E2B's API's bound) */

/* A ListedSandbox (detail adds what GET of one gives), or NULL for a sandbox E2B does not see. */
static json_t *listed_obj(const struct req *r, const json_t *sb, bool detail)
{
	const char *state = shape_state(json_string_value(json_object_get(sb, "state")));
	if (!state)
		return NULL;
	const char *tpl = shape_e2b_template(json_string_value(json_object_get(sb, "template")));
	const char *end = json_string_value(json_object_get(sb, "expires_at"));
	json_t *o = json_pack("{s:s?, s:s, s:s, s:s, s:s?, s:s, s:s, s:O, s:O, s:O, s:s, s:O?, s:[]}", "sandboxID",
			      json_string_value(json_object_get(sb, "id")), "templateID", tpl, "alias", tpl, "clientID",
			      "space", "startedAt", json_string_value(json_object_get(sb, "created_at")), "endAt",
			      end ? end : FAR_FUTURE, "state", state, "cpuCount", json_object_get(sb, "cpus"), "memoryMB",
			      json_object_get(sb, "memory_mb"), "diskSizeMB", json_object_get(sb, "disk_mb"),
			      "envdVersion", GW_ENVD_VERSION, "metadata", json_object_get(sb, "metadata"), "volumeMounts");
	if (o && detail) {
		const char *action = json_string_value(json_object_get(sb, "timeout_action"));
		const json_t *net = json_object_get(sb, "network");
		const char *egress = json_string_value(json_object_get(net, "egress"));
		json_object_set_new(o, "envdAccessToken", json_incref(json_object_get(sb, "access_token")));
		json_object_set_new(o, "domain", shape_domain(r));
		json_object_set_new(o, "allowInternetAccess", json_boolean(egress && strcmp(egress, "none") != 0));
		json_t *n = json_pack("{s:b}", "allowPublicTraffic", json_is_true(json_object_get(sb, "public_ports")));
		if (egress && strcmp(egress, "allow") == 0) { /* as E2B says it: all denied, but these */
			json_object_set_new(n, "allowOut", json_incref(json_object_get(net, "allow")));
			json_object_set_new(n, "denyOut", json_pack("[s]", E2B_ALL_TRAFFIC));
		} else if (json_array_size(json_object_get(net, "deny")) > 0)
			json_object_set_new(n, "denyOut", json_incref(json_object_get(net, "deny")));
		json_object_set_new(o, "network", n);
		json_object_set_new(o, "lifecycle", json_pack("{s:s, s:b}", "onTimeout",
							       action && strcmp(action, "kill") == 0 ? "kill" : "pause",
							       "autoResume", json_is_true(json_object_get(sb, "auto_resume"))));
	}
	return o;
}

/* A list of E2B's egress rules (allowOut, denyOut): absent (NULL) or an array of strings;
 * false when it is neither. */
static bool rules_of(const json_t *net, const char *name, const json_t **out)
{
	const json_t *v = json_object_get(net, name), *x;
	size_t i;
	*out = json_is_null(v) ? NULL : v;
	if (!*out)
		return true;
	if (!json_is_array(v))
		return false;
	json_array_foreach(v, i, x) {
		if (!json_is_string(x))
			return false;
	}
	return true;
}

static bool holds(const json_t *list, const char *s)
{
	size_t i;
	const json_t *x;
	json_array_foreach(list, i, x) {
		if (strcmp(json_string_value(x), s) == 0)
			return true;
	}
	return false;
}

/*
 * space's egress policy for E2B's allow_internet_access (aia) and network rules (net: the
 * create's "network", or an updateNetwork's body), into *out: NULL for spaced's default (a
 * create that restricts nothing), else a policy for spaced (docs/network.md). E2B's allowOut
 * wins over its denyOut, so with all traffic denied (allowInternetAccess false, or 0.0.0.0/0 in
 * denyOut) the allowed entries are the only ones reachable: egress "allow" with them, or "none";
 * otherwise denyOut is taken from "open". -1 with msg for what space cannot honour: allowOut
 * as exceptions to a partial denyOut, and E2B's header rules and egress proxy.
 */
static int egress_policy(const json_t *aia, const json_t *net, bool update, json_t **out, char *msg, size_t n)
{
	static const char *const refused[] = { "rules", "egressProxy" };
	const json_t *allow, *deny;
	*out = NULL;
	if (aia && !json_is_boolean(aia) && !json_is_null(aia)) {
		snprintf(msg, n, "allow_internet_access must be true or false");
		return -1;
	}
	if (net && !json_is_object(net) && !json_is_null(net)) {
		snprintf(msg, n, "network must be an object");
		return -1;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (!json_is_null(json_object_get(net, refused[i])) && json_object_get(net, refused[i])) {
			snprintf(msg, n, "network.%s is not offered by space's E2B front (docs/e2b.md); the sandbox "
				 "was not made or changed", refused[i]);
			return -1;
		}
	}
	if (!rules_of(net, "allowOut", &allow) || !rules_of(net, "denyOut", &deny)) {
		snprintf(msg, n, "network.allowOut and network.denyOut must be lists of addresses, ranges or host names");
		return -1;
	}
	bool allowing = json_array_size(allow) > 0, denying = json_array_size(deny) > 0;
	if (json_is_false(aia) || (deny && holds(deny, E2B_ALL_TRAFFIC))) {
		*out = allowing ? json_pack("{s:s, s:O, s:[]}", "egress", "allow", "allow", allow, "deny")
				: json_pack("{s:s, s:[], s:[]}", "egress", "none", "allow", "deny");
		return 0;
	}
	if (allowing && denying) {
		snprintf(msg, n, "network.allowOut as exceptions to network.denyOut is offered only when all other "
			 "traffic is denied (denyOut holds %s, or allowInternetAccess is false)", E2B_ALL_TRAFFIC);
		return -1;
	}
	if (denying)
		*out = update ? json_pack("{s:s, s:O}", "egress", "open", "deny", deny) : json_pack("{s:O}", "deny", deny);
	else if (update)
		*out = json_pack("{s:s, s:[]}", "egress", "open", "deny");
	return 0;
}

/* Why a create's body asks for what space does not have (a message), or NULL. */
static const char *not_offered(const json_t *b)
{
	const json_t *vols = json_object_get(b, "volumeMounts"), *iam = json_object_get(b, "iam");
	const json_t *net = json_object_get(b, "network");
	if (json_array_size(vols) > 0)
		return "volumeMounts: space has no volumes (a sandbox's files are its own disk; docs/e2b.md)";
	if (json_object_size(json_object_get(iam, "tokens")) > 0)
		return "iam tokens are not offered by space";
	if (json_is_false(json_object_get(b, "autoPauseMemory")))
		return "onTimeout pause without keepMemory is not offered: space's pause keeps memory (docs/e2b.md)";
	if (json_object_get(net, "maskRequestHost") || json_object_get(net, "httpsPorts"))
		return "network.maskRequestHost and network.httpsPorts are not offered by space's port proxy";
	return NULL;
}

static enum MHD_Result create(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	json_t *b = shape_body(r);
	if (!b)
		return gw_error(r, 400, "the body is not a JSON object");
	const char *why_not = not_offered(b);
	if (why_not) {
		json_decref(b);
		return gw_error(r, 400, "%s", why_not);
	}
	long timeout = shape_timeout(b, GW_DEFAULT_TIMEOUT_S);
	const json_t *meta = json_object_get(b, "metadata"), *env = json_object_get(b, "envVars");
	const char *given = json_string_value(json_object_get(b, "templateID"));
	char name[256] = "";
	const char *tpl = given && snprintf(name, sizeof(name), "%s", given) < (int)sizeof(name) ? name : NULL;
	bool pause = json_is_true(json_object_get(b, "autoPause"));
	/* E2B's defaults: a paused sandbox stays so until connect(); its ports are public */
	bool resume = json_is_true(json_object_get(json_object_get(b, "autoResume"), "enabled"));
	bool public = !json_is_false(json_object_get(json_object_get(b, "network"), "allowPublicTraffic"));
	json_t *egress = NULL;
	char why[300];
	if (timeout < 0 || (given && !tpl)) {
		json_decref(b);
		return gw_error(r, 400, timeout < 0 ? "timeout must be whole seconds, 1..86400" : "templateID is too long");
	}
	if (egress_policy(json_object_get(b, "allow_internet_access"), json_object_get(b, "network"), false, &egress, why,
			  sizeof(why)) < 0) {
		json_decref(b);
		return gw_error(r, 400, "%s", why);
	}
	if (tpl && !snapshots_is_id(tpl) && !builds_may_use(r, c, shape_template(tpl))) {
		json_decref(b);
		json_decref(egress);
		return gw_error(r, 404, "template %s not found", tpl);
	}
	json_t *ask = json_pack("{s:i, s:i, s:s, s:b, s:b}", "timeout", 0, "lifetime", (int)timeout, "timeout_action",
				pause ? "suspend" : "kill", "auto_resume", resume, "public_ports", public);
	/* a snapshot's id stands for it, as in E2B, where a snapshot is a template */
	json_object_set_new(ask, snapshots_is_id(tpl) ? "snapshot" : "template", json_string(snapshots_is_id(tpl) ? tpl
										 : shape_template(tpl)));
	if (json_is_object(meta))
		json_object_set(ask, "metadata", (json_t *)meta);
	if (json_is_object(env))
		json_object_set(ask, "env", (json_t *)env);
	if (egress)
		json_object_set_new(ask, "network", egress);
	json_decref(b);
	json_t *sb = NULL;
	struct client_err e = { 0 };
	int rc = client_request(c, "POST", "/v1/sandboxes", ask, &sb, &e);
	json_decref(ask);
	if (rc < 0)
		return gw_error_from(r, &e);
	json_t *out = shape_sandbox(r, sb);
	if (tpl) /* the name the client used: its alias */
		json_object_set_new(out, "templateID", json_string(tpl)), json_object_set_new(out, "alias", json_string(tpl));
	json_decref(sb);
	return gw_json(r, 201, out);
}

/* spaced's sandbox id (as c sees it) into *sb; or an answer already queued (*rc). */
static json_t *get_sandbox(struct req *r, struct client *c, const char *id, enum MHD_Result *rc)
{
	char path[64];
	json_t *sb = NULL;
	struct client_err e = { 0 };
	if (!gw_sandbox_path(path, sizeof(path), id, "")) {
		*rc = gw_error(r, 404, "sandbox %s not found", id);
		return NULL;
	}
	if (client_request(c, "GET", path, NULL, &sb, &e) < 0) {
		*rc = e.status == 404 ? gw_error(r, 404, "sandbox %s not found", id) : gw_error_from(r, &e);
		return NULL;
	}
	if (!shape_state(json_string_value(json_object_get(sb, "state")))) {
		json_decref(sb);
		*rc = gw_error(r, 404, "sandbox %s not found", id);
		return NULL;
	}
	return sb;
}

/* Asks spaced to act on sandbox id (POST rest with body); 0, or an answer queued in *rc. */
static int act(struct req *r, struct client *c, const char *id, const char *rest, json_t *body, enum MHD_Result *rc)
{
	char path[96];
	struct client_err e = { 0 };
	gw_sandbox_path(path, sizeof(path), id, rest);
	if (client_request(c, "POST", path, body, NULL, &e) == 0)
		return 0;
	*rc = e.status == 404 ? gw_error(r, 404, "sandbox %s not found", id) : gw_error_from(r, &e);
	return -1;
}

/* The seconds left until an RFC 3339 time (UTC, as spaced writes it), or 0 when past or NULL. */
static long seconds_until(const char *t)
{
	struct tm tm = { 0 };
	if (!t || !strptime(t, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	long left = (long)(timegm(&tm) - time(NULL));
	return left > 0 ? left : 0;
}

/* Whether sandbox id is paused, and the seconds left until its deadline: 0, or -1 with an
 * answer queued in *rc. */
static int standing(struct req *r, struct client *c, const char *id, enum MHD_Result *rc, bool *paused, long *left)
{
	json_t *sb = get_sandbox(r, c, id, rc);
	if (!sb)
		return -1;
	*paused = strcmp(shape_state(json_string_value(json_object_get(sb, "state"))), "paused") == 0;
	*left = seconds_until(json_string_value(json_object_get(sb, "expires_at")));
	json_decref(sb);
	return 0;
}

/* connect (and the older resume): a running sandbox's deadline only moves later; a paused
 * one is resumed with the deadline from now. */
static enum MHD_Result connect_to(struct req *r, struct client *c, const char *id, bool resume_only)
{
	json_t *b = shape_body(r);
	long timeout = b ? shape_timeout(b, GW_DEFAULT_TIMEOUT_S) : -1;
	json_decref(b);
	if (timeout < 0)
		return gw_error(r, 400, "timeout must be whole seconds, 1..86400");
	enum MHD_Result rc = MHD_NO;
	bool paused;
	long left;
	if (standing(r, c, id, &rc, &paused, &left) < 0)
		return rc;
	if (!paused && resume_only)
		return gw_error(r, 409, "sandbox %s is not paused", id);
	if (paused && act(r, c, id, "/resume", NULL, &rc) < 0)
		return rc;
	json_t *t = json_pack("{s:i}", "lifetime", (int)(paused || timeout > left ? timeout : left));
	int a = act(r, c, id, "/timeout", t, &rc);
	json_decref(t);
	if (a < 0)
		return rc;
	json_t *sb = get_sandbox(r, c, id, &rc);
	if (!sb)
		return rc;
	json_t *out = shape_sandbox(r, sb);
	json_decref(sb);
	return gw_json(r, paused ? 201 : 200, out);
}

/* E2B's refresh (POST /sandboxes/{id}/refreshes {"duration": S}): a running sandbox lives at
 * least S more seconds (0..REFRESH_MAX_S; GW_DEFAULT_TIMEOUT_S when absent); its deadline
 * never moves earlier. A paused one is not running: 404, as in E2B. */
static enum MHD_Result refresh(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	json_t *b = shape_body(r);
	const json_t *d = json_object_get(b, "duration");
	long duration = d ? (json_is_integer(d) ? (long)json_integer_value(d) : -1) : GW_DEFAULT_TIMEOUT_S;
	json_decref(b);
	if (!b || duration < 0 || duration > REFRESH_MAX_S)
		return gw_error(r, 400, "duration must be whole seconds, 0..%d", REFRESH_MAX_S);
	enum MHD_Result rc = MHD_NO;
	bool paused;
	long left;
	if (standing(r, c, id, &rc, &paused, &left) < 0)
		return rc;
	if (paused)
		return gw_error(r, 404, "sandbox %s is not running", id);
	if (duration <= left)
		return gw_json(r, 204, NULL);
	json_t *t = json_pack("{s:i}", "lifetime", (int)duration);
	int done = act(r, c, id, "/timeout", t, &rc);
	json_decref(t);
	return done < 0 ? rc : gw_json(r, 204, NULL);
}

/* updateNetwork: the sandbox's egress policy replaced by what the body maps to. */
static enum MHD_Result update_network(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	json_t *b = shape_body(r), *policy = NULL;
	char why[300], path[96];
	int rc = b ? egress_policy(json_object_get(b, "allow_internet_access"), b, true, &policy, why, sizeof(why)) : -1;
	json_decref(b);
	if (rc < 0)
		return gw_error(r, 400, "%s", b ? why : "the body is not a JSON object");
	enum MHD_Result answer = MHD_NO;
	json_t *sb = get_sandbox(r, c, id, &answer);
	if (!sb) {
		json_decref(policy);
		return answer;
	}
	json_decref(sb);
	struct client_err e = { 0 };
	gw_sandbox_path(path, sizeof(path), id, "/network");
	rc = client_request(c, "PATCH", path, policy, NULL, &e);
	json_decref(policy);
	if (rc < 0)
		return e.status == 404 ? gw_error(r, 404, "sandbox %s not found", id) : gw_error_from(r, &e);
	return gw_json(r, 204, NULL);
}

static enum MHD_Result pause_sandbox(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	json_t *b = shape_body(r);
	bool no_memory = json_is_false(json_object_get(b, "memory"));
	json_decref(b);
	if (no_memory)
		return gw_error(r, 400, "a pause without memory (a cold boot on resume) is not offered: space's pause "
				"(its suspend) keeps memory and files");
	enum MHD_Result rc = MHD_NO;
	json_t *sb = get_sandbox(r, c, id, &rc);
	if (!sb)
		return rc;
	bool paused = strcmp(shape_state(json_string_value(json_object_get(sb, "state"))), "paused") == 0;
	json_decref(sb);
	if (paused)
		return gw_error(r, 409, "sandbox %s is already paused", id);
	if (act(r, c, id, "/suspend", NULL, &rc) < 0)
		return rc;
	return gw_json(r, 204, NULL);
}

static bool matches(const json_t *sb, const json_t *filter, const char *states, const char *tpl,
		    const char *after, const char *e2b_st)
{
	const char *k;
	json_t *v;
	const json_t *meta = json_object_get(sb, "metadata");
	json_object_foreach((json_t *)filter, k, v) {
		const char *have = json_string_value(json_object_get(meta, k));
		if (!have || strcmp(have, json_string_value(v)) != 0)
			return false;
	}
	if (states) {
		size_t n = strlen(e2b_st);
		bool in = false;
		for (const char *p = states; *p && !in; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0))
			in = strncmp(p, e2b_st, n) == 0 && (p[n] == ',' || p[n] == '\0');
		if (!in)
			return false;
	}
	if (tpl && strcmp(tpl, shape_e2b_template(json_string_value(json_object_get(sb, "template")))) != 0)
		return false;
	const char *started = json_string_value(json_object_get(sb, "created_at"));
	return !after || (started && strcmp(started, after) > 0);
}

/* The cursor of item x: its startedAt and id, which orders the list (times are all as long). */
static void cursor_of(const json_t *x, char *dst, size_t n)
{
	snprintf(dst, n, "%s_%s", json_string_value(json_object_get(x, "startedAt")),
		 json_string_value(json_object_get(x, "sandboxID")));
}

static int oldest_first(const void *a, const void *b)
{
	char x[128], y[128];
	cursor_of(*(json_t *const *)a, x, sizeof(x));
	cursor_of(*(json_t *const *)b, y, sizeof(y));
	return strcmp(x, y);
}

static int newest_first(const void *a, const void *b)
{
	return oldest_first(b, a);
}

/* The sandboxes of all (spaced's list) E2B's list shows under the query of r (v2: its states,
 * else the running ones), into an array. */
static json_t *listed(struct req *r, const json_t *all, const json_t *filter, bool v2)
{
	const char *states = v2 ? gw_arg(r, "state") : "running";
	size_t i;
	json_t *sb, *items = json_array();
	json_array_foreach(json_object_get(all, "sandboxes"), i, sb) {
		json_t *o = listed_obj(r, sb, false);
		if (o && matches(sb, filter, states, gw_arg(r, "template"), gw_arg(r, "startedAfter"),
				 json_string_value(json_object_get(o, "state"))))
			json_array_append(items, o);
		json_decref(o);
	}
	return items;
}

/* GET /sandboxes (the running ones) and /v2/sandboxes (?state=), a page at a time. */
static enum MHD_Result list(struct req *r, const struct route_args *a)
{
	json_t *filter = query_metadata(gw_arg(r, "metadata"));
	const char *limit_s = gw_arg(r, "limit");
	const char *next = gw_arg(r, "nextToken"), *order = gw_arg(r, "order");
	long limit = limit_s ? strtol(limit_s, NULL, 10) : LIST_MAX;
	if (!filter || limit < 1 || limit > LIST_MAX) {
		json_decref(filter);
		return gw_error(r, 400, !filter ? "metadata must be key=value pairs joined by &" : "limit must be 1..%d", LIST_MAX);
	}
	json_t *all = NULL;
	struct client_err e = { 0 };
	if (client_request(a->c, "GET", "/v1/sandboxes", NULL, &all, &e) < 0) {
		json_decref(filter);
		return gw_error_from(r, &e);
	}
	json_t *items = listed(r, all, filter, r->url[1] == 'v');
	json_decref(all);
	json_decref(filter);
	size_t i, n = json_array_size(items);
	json_t **v = calloc(n ? n : 1, sizeof(*v));
	for (i = 0; i < n; i++)
		v[i] = json_array_get(items, i);
	bool asc = order && strcmp(order, "asc") == 0;
	qsort(v, n, sizeof(*v), asc ? oldest_first : newest_first);
	json_t *page = json_array();
	char cur[128] = "";
	bool more = false;
	for (i = 0; i < n; i++) {
		char k[128];
		cursor_of(v[i], k, sizeof(k));
		/* after the cursor, in this order */
		if (next && *next && (asc ? strcmp(k, next) <= 0 : strcmp(k, next) >= 0))
			continue;
		if ((long)json_array_size(page) == limit) {
			more = true;
			break;
		}
		json_array_append(page, v[i]);
		snprintf(cur, sizeof(cur), "%s", k);
	}
	free(v);
	json_decref(items);
	return gw_json_paged(r, page, more ? cur : NULL);
}

static enum MHD_Result reconnect(struct req *r, const struct route_args *a)
{
	return connect_to(r, a->c, a->param[0], false);
}

static enum MHD_Result resume(struct req *r, const struct route_args *a)
{
	return connect_to(r, a->c, a->param[0], true);
}

static enum MHD_Result get_one(struct req *r, const struct route_args *a)
{
	enum MHD_Result rc = MHD_NO;
	json_t *sb = get_sandbox(r, a->c, a->param[0], &rc);
	if (!sb)
		return rc;
	rc = gw_json(r, 200, listed_obj(r, sb, true));
	json_decref(sb);
	return rc;
}

static enum MHD_Result kill(struct req *r, const struct route_args *a)
{
	const char *id = a->param[0];
	char path[64];
	struct client_err e = { 0 };
	if (!gw_sandbox_path(path, sizeof(path), id, "") || client_request(a->c, "DELETE", path, NULL, NULL, &e) < 0)
		return e.status == 404 || !e.kind ? gw_error(r, 404, "sandbox %s not found", id) : gw_error_from(r, &e);
	return gw_json(r, 204, NULL);
}

static enum MHD_Result set_timeout(struct req *r, const struct route_args *a)
{
	enum MHD_Result rc = MHD_NO;
	json_t *b = shape_body(r);
	long t = b ? shape_timeout(b, -1) : -1;
	json_decref(b);
	if (t < 0)
		return gw_error(r, 400, "timeout must be whole seconds, 1..86400");
	if (!(b = get_sandbox(r, a->c, a->param[0], &rc)))
		return rc;
	json_decref(b);
	json_t *body = json_pack("{s:i}", "lifetime", (int)t);
	int done = act(r, a->c, a->param[0], "/timeout", body, &rc);
	json_decref(body);
	return done < 0 ? rc : gw_json(r, 204, NULL);
}

static enum MHD_Result no_logs(struct req *r, const struct route_args *a)
{
	return gw_error(r, 501, "sandbox logs are not offered: space keeps no log of a sandbox's own (its "
			"commands' output comes with each command; docs/e2b.md)");
}

static enum MHD_Result no_tags(struct req *r, const struct route_args *a)
{
	return gw_error(r, 403, "template tags are not assigned or removed through E2B's API on space: a tag is a "
			"template of its own (NAME:TAG), and spaced gives a template no second name; build with the "
			"tag instead (Template.build(t, 'NAME:TAG') or {tags}; docs/e2b.md)");
}

/* Any other call on a sandbox. */
static enum MHD_Result not_offered_here(struct req *r, const struct route_args *a)
{
	return gw_error(r, 501, "%s %s is not offered by space's E2B front (docs/e2b.md)", r->method, r->url);
}

bool control_admit(struct req *r, enum MHD_Result *rc)
{
	if (strcmp(r->url, "/health") == 0)
		return true; /* E2B's API's health needs no key (and authenticates nothing) */
	struct client tenant;
	char hdr[300];
	struct client_err e = { 0 };
	struct client *c = gw_as_tenant(r->gw, gw_header(r, "X-API-KEY"), &tenant, hdr, sizeof(hdr));
	if (!c) {
		*rc = gw_error(r, 401, "an API key is required (X-API-KEY: a space token)");
		return false;
	}
	if (client_request(c, "GET", "/v1/health", NULL, NULL, &e) < 0) {
		*rc = e.kind == CLIENT_ERR_API && e.status == 401 ? gw_error(r, 401, "X-API-KEY is not a valid key")
								   : gw_error_from(r, &e);
		return false;
	}
	admit_authenticated(r);
	return true;
}

#define ID_MAX (GW_TEMPLATE_ID_MAX - 1) /* bytes of an id in a path, at most: a longer one is no route */

/* The control plane's routes, first match wins (route.h); the template builds' take their
 * template and build ids at any length (builds.c checks them). */
static const struct route routes[] = {
	{ "POST", "/v2/sandboxes", create, ID_MAX },
	{ "POST", "/sandboxes", create, ID_MAX },
	{ "GET", "/v2/sandboxes", list, ID_MAX },
	{ "GET", "/sandboxes", list, ID_MAX },
	{ "GET", "/sandboxes/metrics", metrics_many, ID_MAX },
	{ "GET", "/snapshots", snapshots_list, ID_MAX },
	{ "POST", "/v3/templates", builds_request, 0 },
	{ "GET", "/templates/{tpl}/files/{hash}", builds_file_link, 0 },
	{ "PUT", "/templates/{tpl}/files/{hash}", builds_upload_end, 0 },
	{ "POST", "/v2/templates/{tpl}/builds/{build}", builds_trigger, 0 },
	{ "GET", "/templates/{tpl}/builds/{build}/status", builds_status, 0 },
	{ "POST", "/templates/tags", no_tags, ID_MAX },
	{ "DELETE", "/templates/tags", no_tags, ID_MAX },
	{ "GET", "/templates/aliases/{alias}", templates_alias, ID_MAX },
	{ "GET", "/templates/{id}/tags", templates_tags, ID_MAX },
	{ "DELETE", "/templates/{id}", snapshots_delete, ID_MAX },
	{ "POST", "/v2/sandboxes/{id}/connect", reconnect, ID_MAX },
	{ "GET", "/v2/sandboxes/{id}/logs", no_logs, ID_MAX },
	{ "GET", "/sandboxes/{id}/logs", no_logs, ID_MAX },
	{ "GET", "/sandboxes/{id}", get_one, ID_MAX },
	{ "DELETE", "/sandboxes/{id}", kill, ID_MAX },
	{ "POST", "/sandboxes/{id}/timeout", set_timeout, ID_MAX },
	{ "POST", "/sandboxes/{id}/pause", pause_sandbox, ID_MAX },
	{ "POST", "/sandboxes/{id}/refreshes", refresh, ID_MAX },
	{ "POST", "/sandboxes/{id}/connect", reconnect, ID_MAX },
	{ "POST", "/sandboxes/{id}/resume", resume, ID_MAX },
	{ "GET", "/sandboxes/{id}/metrics", metrics_one, ID_MAX },
	{ "PUT", "/sandboxes/{id}/network", update_network, ID_MAX },
	{ "POST", "/sandboxes/{id}/fork", snapshots_fork, ID_MAX },
	{ "POST", "/sandboxes/{id}/snapshots", snapshots_take, ID_MAX },
	{ NULL, "/sandboxes/{id}", not_offered_here, ID_MAX },
	{ NULL, "/sandboxes/{id}/{rest*}", not_offered_here, ID_MAX },
};

enum MHD_Result control_handle(struct req *r)
{
	if (strcmp(r->url, "/health") == 0)
		return gw_json(r, 200, json_pack("{s:s}", "message", "Health check successful"));
	struct client tenant;
	char hdr[300];
	struct route_args a = { .c = gw_as_tenant(r->gw, gw_header(r, "X-API-KEY"), &tenant, hdr, sizeof(hdr)) };
	if (!a.c)
		return gw_error(r, 401, "an API key is required (X-API-KEY: a space token)");
	return gw_route(r, routes, sizeof(routes) / sizeof(routes[0]), &a);
}

/*
 * e2b/metrics.c - E2B's getMetrics on spaced's samples (GET /v1/sandboxes/{id}/metrics,
 * docs/api.md): the same measures under E2B's names, SandboxMetric
 * {timestamp, timestampUnix, cpuUsedPct, cpuCount, memUsed, memTotal, memCache, diskUsed,
 * diskTotal}. A sandbox E2B does not show (being made, failed) is not found, as elsewhere.
 */
#include "e2b/gateway.h"
#include "e2b/shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* E2B's SandboxMetric of one of spaced's samples. */
static json_t *metric_of(const json_t *s)
{
	const char *when = json_string_value(json_object_get(s, "timestamp"));
	struct tm tm = { 0 };
	json_int_t unix_s = when && strptime(when, "%Y-%m-%dT%H:%M:%S", &tm) ? (json_int_t)timegm(&tm) : 0;
	return json_pack("{s:s?, s:I, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "timestamp", when, "timestampUnix", unix_s,
			 "cpuUsedPct", json_object_get(s, "cpu_used_pct"), "cpuCount", json_object_get(s, "cpu_count"),
			 "memUsed", json_object_get(s, "mem_used_bytes"), "memTotal", json_object_get(s, "mem_total_bytes"),
			 "memCache", json_object_get(s, "mem_cache_bytes"), "diskUsed", json_object_get(s, "disk_used_bytes"),
			 "diskTotal", json_object_get(s, "disk_total_bytes"));
}

/* Appends "<sep>name=<escaped value>" to query (room n); false when it does not fit. */
static bool add_arg(char *query, size_t n, const char *name, const char *value)
{
	if (!value)
		return true;
	char *v = client_escape(value);
	size_t used = strlen(query);
	int w = v ? snprintf(query + used, n - used, "%s%s=%s", strchr(query, '?') ? "&" : "?", name, v) : -1;
	free(v);
	return w >= 0 && (size_t)w < n - used;
}

/* spaced's samples of sandbox id in [start, end] (either NULL: no bound) into *out: 0; 404 for
 * a sandbox E2B does not show; 400 for a bound too long to be one; else -1 with e filled. */
static int samples(struct client *c, const char *id, const char *start, const char *end, json_t **out,
		   struct client_err *e)
{
	char path[192], query[128] = "/metrics";
	if (!add_arg(query, sizeof(query), "start", start) || !add_arg(query, sizeof(query), "end", end))
		return 400;
	json_t *m = NULL;
	if (!gw_sandbox_path(path, sizeof(path), id, query))
		return 404;
	if (client_request(c, "GET", path, NULL, &m, e) < 0)
		return e->kind == CLIENT_ERR_API && e->status == 404 ? 404 : -1;
	if (!shape_state(json_string_value(json_object_get(m, "state")))) {
		json_decref(m);
		return 404;
	}
	*out = m;
	return 0;
}

enum MHD_Result metrics_one(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	json_t *m = NULL;
	struct client_err e = { 0 };
	int st = samples(c, id, gw_arg(r, "start"), gw_arg(r, "end"), &m, &e);
	if (st == 404)
		return gw_error(r, 404, "sandbox %s not found", id);
	if (st == 400)
		return gw_error(r, 400, "start and end are Unix seconds");
	if (st)
		return gw_error_from(r, &e);
	json_t *out = json_array(), *s;
	size_t i;
	json_array_foreach(json_object_get(m, "metrics"), i, s)
		json_array_append_new(out, metric_of(s));
	json_decref(m);
	return gw_json(r, 200, out);
}

enum MHD_Result metrics_many(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *ids = gw_arg(r, "sandbox_ids");
	if (!ids || !*ids)
		return gw_error(r, 400, "sandbox_ids is required: sandbox ids joined by commas");
	size_t n = 1;
	for (const char *p = ids; *p; p++)
		n += *p == ',';
	if (n > GW_METRICS_IDS_MAX)
		return gw_error(r, 400, "sandbox_ids names %zu sandboxes; at most %d", n, GW_METRICS_IDS_MAX);
	json_t *all = json_object();
	char *copy = strdup(ids), *save = NULL;
	for (char *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
		json_t *m = NULL;
		struct client_err e = { 0 };
		/* a sandbox that is not there (or not the key's) is left out, as one with no samples */
		if (samples(c, id, NULL, NULL, &m, &e) != 0)
			continue;
		json_t *list = json_object_get(m, "metrics");
		if (json_array_size(list))
			json_object_set_new(all, id, metric_of(json_array_get(list, json_array_size(list) - 1)));
		json_decref(m);
	}
	free(copy);
	return gw_json(r, 200, json_pack("{s:o}", "sandboxes", all));
}

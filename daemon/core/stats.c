/*
 * daemon/core/stats.c - spaced's own counters and histograms (see stats.h): relaxed atomics,
 * and their series in the exposition format, named as docs/metrics.md lists them.
 */
#include "daemon/core/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/expo.h"

/* Upper bounds of the buckets, in seconds. */
static const double op_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300 };
static const double build_bounds[] = { 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600 };
static const double lock_bounds[] = { 0.00001, 0.0001, 0.001, 0.01, 0.1, 1 };
#define OP_BUCKETS (sizeof(op_bounds) / sizeof(op_bounds[0]))
#define BUILD_BUCKETS (sizeof(build_bounds) / sizeof(build_bounds[0]))
#define LOCK_BUCKETS (sizeof(lock_bounds) / sizeof(lock_bounds[0]))
#define MAX_BUCKETS OP_BUCKETS

static const char *const op_names[STATS_OPS] = {
	[STATS_CREATE] = "create", [STATS_DELETE] = "delete",     [STATS_PAUSE] = "pause",
	[STATS_RESUME] = "resume", [STATS_SUSPEND] = "suspend",   [STATS_SNAPSHOT] = "snapshot",
	[STATS_FORK] = "fork",     [STATS_EXEC] = "exec",
};

/* The failure reasons: the API's error codes (docs/api.md), and "other" last for any other. */
static const char *const reasons[] = {
	"invalid_argument", "isolation_unavailable", "unauthorized", "permission_denied", "not_found",
	"method_not_allowed", "conflict", "too_large", "exec_failed", "not_ready", "too_many",
	"internal", "sandbox_failed", "not_implemented", "no_space", "unavailable", "other",
};
#define REASONS (sizeof(reasons) / sizeof(reasons[0]))

/* Observations per bucket (the last: above every bound) and their sum in nanoseconds. */
struct hist {
	uint64_t per_bucket[MAX_BUCKETS + 1];
	uint64_t sum_ns;
};

struct stats {
	uint64_t counters[STATS_COUNTERS];
	struct hist ops[STATS_OPS];
	uint64_t failures[STATS_OPS][REASONS];
	struct hist build, lock;
};

struct stats *stats_new(void)
{
	return calloc(1, sizeof(struct stats));
}

void stats_free(struct stats *st)
{
	free(st);
}

static void add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

static uint64_t get(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void observe(struct hist *h, const double *bounds, size_t nbounds, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	double s = (double)ns / 1e9;
	size_t i = 0;
	while (i < nbounds && s > bounds[i])
		i++;
	add(&h->per_bucket[i], 1);
	add(&h->sum_ns, (uint64_t)ns);
}

void stats_add(struct stats *st, enum stats_counter c, uint64_t n)
{
	if (st && c < STATS_COUNTERS)
		add(&st->counters[c], n);
}

void stats_op_done(struct stats *st, enum stats_op op, const char *code, int64_t ns)
{
	if (!st || op >= STATS_OPS)
		return;
	observe(&st->ops[op], op_bounds, OP_BUCKETS, ns);
	if (!code)
		return;
	size_t r = 0;
	while (r < REASONS - 1 && strcmp(reasons[r], code) != 0)
		r++;
	add(&st->failures[op][r], 1);
}

void stats_build_done(struct stats *st, bool ok, int64_t ns)
{
	if (!st)
		return;
	observe(&st->build, build_bounds, BUILD_BUCKETS, ns);
	if (!ok)
		add(&st->counters[STATS_BUILDS_FAILED], 1);
}

void stats_lock_held(struct stats *st, int64_t ns)
{
	if (st)
		observe(&st->lock, lock_bounds, LOCK_BUCKETS, ns);
}

static int write_hist(struct buf *b, const char *name, const char *const *labels, const struct hist *h,
		      const double *bounds, size_t nbounds)
{
	uint64_t per[MAX_BUCKETS + 1];
	for (size_t i = 0; i <= nbounds; i++)
		per[i] = get(&h->per_bucket[i]);
	return expo_histogram(b, name, labels, bounds, nbounds, per, (double)get(&h->sum_ns) / 1e9);
}

/* One counter family of one series without labels. */
static int write_counter(struct buf *b, const char *name, const char *help, uint64_t v)
{
	int rc = expo_family(b, name, "counter", help);
	return rc ? rc : expo_sample(b, name, NULL, (double)v);
}

/* A counter family of two series told apart by one label. */
static int write_pair(struct buf *b, const char *name, const char *help, const char *label, const char *v1,
		      uint64_t n1, const char *v2, uint64_t n2)
{
	int rc = expo_family(b, name, "counter", help);
	if (rc == 0)
		rc = expo_sample(b, name, (const char *const[]){ label, v1, NULL }, (double)n1);
	return rc ? rc : expo_sample(b, name, (const char *const[]){ label, v2, NULL }, (double)n2);
}

static int write_ops(struct stats *st, struct buf *b)
{
	int rc = expo_family(b, "space_operation_seconds", "histogram",
			     "Time from request to answer of API operations on sandboxes, failed ones included.");
	for (int op = 0; op < STATS_OPS && rc == 0; op++)
		rc = write_hist(b, "space_operation_seconds", (const char *const[]){ "op", op_names[op], NULL },
				&st->ops[op], op_bounds, OP_BUCKETS);
	if (rc == 0)
		rc = expo_family(b, "space_operation_failures_total", "counter",
				 "API operations on sandboxes that failed, by the error code of their answer.");
	for (int op = 0; op < STATS_OPS && rc == 0; op++)
		for (size_t r = 0; r < REASONS && rc == 0; r++)
			rc = expo_sample(b, "space_operation_failures_total",
					 (const char *const[]){ "op", op_names[op], "reason", reasons[r], NULL },
					 (double)get(&st->failures[op][r]));
	return rc;
}

int stats_write(struct stats *st, struct buf *b)
{
	if (!st)
		return -EINVAL;
	const uint64_t *c = st->counters;
	int rc = write_ops(st, b);
	if (rc == 0)
		rc = write_counter(b, "space_exec_output_bytes_total",
				   "Bytes of command output (stdout and stderr) sent to clients.",
				   get(&c[STATS_EXEC_OUTPUT_BYTES]));
	if (rc == 0)
		rc = write_pair(b, "space_file_bytes_total", "Bytes of sandbox files sent to or taken from clients.",
				"direction", "read", get(&c[STATS_FILE_READ_BYTES]), "write",
				get(&c[STATS_FILE_WRITE_BYTES]));
	if (rc == 0)
		rc = write_counter(b, "space_agent_reconnects_total",
				   "Agents that said hello again on a sandbox (after a restart of spaced, a resume, a "
				   "dropped connection).",
				   get(&c[STATS_AGENT_RECONNECTS]));
	if (rc == 0)
		rc = write_pair(b, "space_pool_claims_total",
				"Creates while warm pools are kept: served by a pooled sandbox (hit) or not (miss).",
				"result", "hit", get(&c[STATS_POOL_HITS]), "miss", get(&c[STATS_POOL_MISSES]));
	if (rc == 0)
		rc = write_counter(b, "space_template_builds_total", "Template builds started.",
				   get(&c[STATS_BUILDS_STARTED]));
	if (rc == 0)
		rc = write_counter(b, "space_template_build_failures_total",
				   "Template builds that ended without a template.", get(&c[STATS_BUILDS_FAILED]));
	if (rc == 0)
		rc = expo_family(b, "space_template_build_seconds", "histogram", "Time template builds took.");
	if (rc == 0)
		rc = write_hist(b, "space_template_build_seconds", NULL, &st->build, build_bounds, BUILD_BUCKETS);
	if (rc == 0)
		rc = write_counter(b, "space_proxy_connections_total", "Connections the port proxy accepted.",
				   get(&c[STATS_PROXY_CONNECTIONS]));
	if (rc == 0)
		rc = write_pair(b, "space_proxy_refusals_total",
				"Port proxy refusals: connections over its limits (busy), requests it answered with "
				"an error (request).",
				"reason", "busy", get(&c[STATS_PROXY_REFUSED_BUSY]), "request",
				get(&c[STATS_PROXY_REFUSED_REQUEST]));
	if (rc == 0)
		rc = write_counter(b, "space_dns_queries_total", "Questions sandboxes asked the sandbox DNS.",
				   get(&c[STATS_DNS_QUERIES]));
	if (rc == 0)
		rc = write_counter(b, "space_dns_refusals_total", "Questions the sandbox DNS answered REFUSED.",
				   get(&c[STATS_DNS_REFUSED]));
	if (rc == 0)
		rc = expo_family(b, "space_lock_hold_seconds", "histogram",
				 "How long spaced's main lock (d->lock) was held each time.");
	if (rc == 0)
		rc = write_hist(b, "space_lock_hold_seconds", NULL, &st->lock, lock_bounds, LOCK_BUCKETS);
	return rc;
}

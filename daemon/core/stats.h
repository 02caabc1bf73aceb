/*
 * daemon/core/stats.h - spaced's own counters and histograms, for GET /metrics.
 *
 * What spaced did since it started, host-wide (per-sandbox figures are core/metrics.h): requests
 * that create, delete, pause, resume, suspend, snapshot or fork a sandbox or run a command, with
 * how long each took and why a failed one failed; bytes streamed and transferred; agent
 * reconnections; warm-pool hits and misses; template builds; the port proxy's connections and
 * refusals; the sandbox DNS's questions and refusals; how long d->lock is held.
 *
 * Every recording function may be called from any thread, with or without d->lock: the counts
 * are atomics (relaxed: each count is exact, a scrape may see one count of a histogram ahead of
 * another). Each takes a NULL stats and then does nothing, so code that runs without a daemon's
 * stats (unit tests) need not care. docs/metrics.md names every series stats_write writes.
 */
#ifndef SPACE_DAEMON_CORE_STATS_H
#define SPACE_DAEMON_CORE_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/buf.h"

/* The operations timed, each the requests of one route (the "op" label). */
enum stats_op {
	STATS_CREATE,
	STATS_DELETE,
	STATS_PAUSE,
	STATS_RESUME,
	STATS_SUSPEND,
	STATS_SNAPSHOT,
	STATS_FORK,
	STATS_EXEC,
	STATS_OPS
};

/* Plain counters. */
enum stats_counter {
	STATS_EXEC_OUTPUT_BYTES,   /* output of commands streamed or returned to clients */
	STATS_FILE_READ_BYTES,     /* file bytes sent to clients (downloads) */
	STATS_FILE_WRITE_BYTES,    /* file bytes taken from clients (uploads) */
	STATS_AGENT_RECONNECTS,    /* an agent's hello on a sandbox whose agent had said hello before */
	STATS_POOL_HITS,           /* creates served by a pooled sandbox */
	STATS_POOL_MISSES,         /* creates of a template with a pool that found no pooled sandbox */
	STATS_BUILDS_STARTED,      /* template builds whose builder was started */
	STATS_BUILDS_FAILED,       /* ... and ended without a template */
	STATS_PROXY_CONNECTIONS,   /* connections the port proxy accepted */
	STATS_PROXY_REFUSED_BUSY,  /* ... turned away at once: the proxy's connection limits */
	STATS_PROXY_REFUSED_REQUEST, /* requests it answered itself with a 4xx or 5xx */
	STATS_DNS_QUERIES,         /* questions from sandboxes to the sandbox DNS */
	STATS_DNS_REFUSED,         /* ... answered REFUSED */
	STATS_COUNTERS
};

struct stats;

/* A zeroed set, or NULL when memory is short. stats_free(NULL) is nothing. */
struct stats *stats_new(void);
void stats_free(struct stats *st);

/* Adds n to counter c. */
void stats_add(struct stats *st, enum stats_counter c, uint64_t n);

/* Operation op ended after ns nanoseconds: code NULL when it succeeded, else its error code
 * ("not_found", "too_many" ...: docs/api.md's table; another counts as "other"). */
void stats_op_done(struct stats *st, enum stats_op op, const char *code, int64_t ns);

/* A template build ended after ns nanoseconds, with a template (ok) or without. */
void stats_build_done(struct stats *st, bool ok, int64_t ns);

/* d->lock was held for ns nanoseconds. */
void stats_lock_held(struct stats *st, int64_t ns);

/* Appends every counter and histogram, in the text exposition format (base/expo.h). 0 or
 * -ENOMEM. */
int stats_write(struct stats *st, struct buf *b);

#endif

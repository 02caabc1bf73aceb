/*
 * daemon/core/pool.h - the warm pool: sandboxes started ahead of the creates that take them.
 *
 * spaced --pool TEMPLATE=N[,cpus=C][,memory_mb=M][,disk_mb=D][,isolation=KIND], or a template's
 * own setting (LABEL space.pool=N: config "pool", the default size and kind), keeps N
 * sandboxes of that template and size running, made as any other (the template's start
 * command run and ready), owned by no one and shown to no one. A create that matches one
 * (template, kind, cpus, memory, disk; not from a snapshot, not without a network) claims it
 * instead of making a sandbox: the claim gives it the create's owner, metadata, timeouts,
 * environment (H_ENV: every process started afterwards has it), network policy and a new
 * access token, records it, and answers; the pool makes another in the background. A pooled
 * sandbox is taken once and never goes back: nothing of one user is ever another's.
 *
 * Priority: a pooled sandbox runs with POOL_CPU_SHARES (cgroup v1 cpu.shares, a running
 * sandbox has 1024), from its boot until its claim, so filling the pool gives way to the
 * sandboxes in use. A fill that fails waits POOL_RETRY_MS, doubling up to POOL_RETRY_MAX_MS.
 * One fill per pool runs at a time.
 *
 * A pooled sandbox is recorded with metadata POOL_KEY (its template), which only spaced sets
 * (the API refuses "space." keys from tenants). The next spaced deletes what the last one
 * left in the pool (pool_sweep) and fills it afresh.
 */
#ifndef SPACE_DAEMON_CORE_POOL_H
#define SPACE_DAEMON_CORE_POOL_H

#include <stdint.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define POOL_MAX 8                /* --pool entries */
#define POOL_MAX_SIZE 64          /* sandboxes one entry keeps */
#define POOL_CPU_SHARES 64        /* a pooled sandbox's cpu.shares (a running one's: 1024) */
#define POOL_RETRY_MS 5000
#define POOL_RETRY_MAX_MS 300000
#define POOL_KEY "space.pool"

struct sb_config;
struct op;

struct pool {
	char template[64];
	char isolation[ISOLATION_NAME_MAX + 1]; /* "" : the daemon's default kind */
	int cpus, memory_mb, disk_mb;
	int size;             /* [L] */
	bool from_template;   /* its size is the template's setting: a new record of it changes it */
	int filling;          /* [L] fills in flight (0 or 1) */
	int64_t retry_ms;     /* [L] no fill before this (mono_ms) */
	int64_t backoff_ms;   /* [L] the wait after the next failure */
	uint64_t claims;      /* [L] creates it served */
	uint64_t fills;       /* [L] sandboxes it made */
	uint64_t failures;    /* [L] fills that failed */
	char last_error[160]; /* [L] the last failure's message */
};

/* Adds the pool an --pool argument describes to d. 0, or -EINVAL with why filled. */
int pool_parse(struct daemon *d, const char *spec, char *why, size_t n);

/* At start, before the API: deletes the sandboxes the last spaced kept in its pools. Takes
 * d->lock. */
void pool_sweep(struct daemon *d);

/* Once a second, from the I/O thread: starts a fill where a pool is short. [L] */
void pool_tick(struct daemon *d);

/* Claims a pooled sandbox matching cfg for op, which a job answers (201 with the sandbox, or
 * the error). 1 when claimed, 0 when no pooled sandbox matches (create one), -errno with e.
 * [L] */
int pool_claim(struct daemon *d, const struct sb_config *cfg, struct op *op, struct err *e);

/* Template name's own setting (its config's "pool"; 0 or absent: none) becomes its pool of the
 * default size and kind, or that pool's new size; pooled sandboxes beyond it are removed. --pool
 * entries are the operator's and stay as given. 0, or -ENOMEM (said in the log). [L] */
int pool_template(struct daemon *d, const char *name, int size);

/* At start: the pools of every recorded template with a setting of its own. Takes d->lock. */
void pool_templates(struct daemon *d);

/* How many of d's pooled sandboxes are of template name (claimed or not yet). [L] */
int pool_members(struct daemon *d, const char *name);

/* [{"template", "isolation", "cpus", "memory_mb", "disk_mb", "size", "ready", "filling",
 * "claims", "fills", "failures", "last_error"}...]: GET /v1/version's "pools". [L] */
json_t *pool_json(struct daemon *d);

#endif

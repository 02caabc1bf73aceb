/*
 * daemon/core/system.h - the machine's cache as the operator sees it: its usage
 * (GET /v1/system/df), a prune (POST /v1/system/prune), and the bound spaced keeps it
 * under (--cache-max-mb): after a template is recorded and when spaced starts, the
 * prunable kinds (cache_prune.h) are pruned down to the bound, least recently used first.
 * The walks take seconds on a large cache, so each runs as a job, off the lock.
 */
#ifndef SPACE_DAEMON_SYSTEM_H
#define SPACE_DAEMON_SYSTEM_H

#include "daemon/daemon.h"
#include "lib/host/err.h"

struct op;

#define CACHE_MAX_MB_DEFAULT 20480        /* --cache-max-mb: 20 GiB of step roots and booted images */
#define CACHE_MAX_MB_MAX (1LL << 30)      /* its largest: 1 PiB; 0 is no bound */

/* Answers op with the cache's usage, from a job. 0 (op answered later) or -errno with e. [L] */
int system_df(struct daemon *d, struct op *op, struct err *e);

/* Prunes down to keep bytes (0: every entry not in use) and answers op with what was done,
 * from a job. 0 or -errno with e. [L] */
int system_prune(struct daemon *d, long long keep, struct op *op, struct err *e);

/* Prunes down to --cache-max-mb in a job of its own, unless there is no bound or one runs. [L] */
void system_trim(struct daemon *d);

#endif

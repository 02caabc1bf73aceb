/*
 * daemon/core/system.c - see system.h.
 */
#include "daemon/core/system.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "daemon/base/log.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/store/cache_prune.h"

static void df_job(struct job *j)
{
	json_t *kinds = cache_usage(j->d->cfg.cache_dir);
	daemon_lock(j->d);
	if (kinds)
		j->op->json = json_pack("{s:s, s:I, s:o}", "cache_dir", j->d->cfg.cache_dir, "max_bytes",
					(json_int_t)j->d->cfg.cache_max_bytes, "kinds", kinds);
	else
		err_set(&j->op->err, ERR_INTERNAL, errno, "cannot read the cache at %s", j->d->cfg.cache_dir);
	op_finish(j->op);
	daemon_unlock(j->d);
}

int system_df(struct daemon *d, struct op *op, struct err *e)
{
	struct job j = { .fn = df_job, .op = op };
	return job_start(d, &j, e);
}

static json_t *pruned_json(const struct cache_pruned *p)
{
	return json_pack("{s:i, s:I, s:i, s:I}", "removed", p->removed, "freed_bytes", (json_int_t)p->freed, "busy",
			 p->busy, "kept_bytes", (json_int_t)p->kept);
}

static void prune_job(struct job *j)
{
	struct cache_pruned p;
	long long keep = j->prune.keep;
	int rc = cache_prune(j->d->cfg.cache_dir, keep, true, &p);
	if (rc == 0 && p.removed)
		log_info("cache %s pruned to %lld bytes: %d entries, %lld bytes removed", j->d->cfg.cache_dir, keep,
			 p.removed, p.freed);
	daemon_lock(j->d);
	if (rc < 0)
		err_set(&j->op->err, ERR_INTERNAL, -rc, "cannot prune the cache at %s: %s", j->d->cfg.cache_dir,
			strerror(-rc));
	else
		j->op->json = pruned_json(&p);
	op_finish(j->op);
	daemon_unlock(j->d);
}

int system_prune(struct daemon *d, long long keep, struct op *op, struct err *e)
{
	struct job j = { .fn = prune_job, .op = op, .prune.keep = keep };
	return job_start(d, &j, e);
}

static void trim_job(struct job *j)
{
	struct cache_pruned p;
	int rc = cache_prune(j->d->cfg.cache_dir, j->d->cfg.cache_max_bytes, false, &p);
	if (rc == -EBUSY)
		; /* another spaced on the machine prunes it now */
	else if (rc < 0)
		log_warn("cache %s: cannot keep it under --cache-max-mb: %s", j->d->cfg.cache_dir, strerror(-rc));
	else if (p.removed || p.kept > j->d->cfg.cache_max_bytes)
		log_info("cache %s kept under %lld MiB: %d entries (%lld bytes) removed, %lld bytes left, %d in use",
			 j->d->cfg.cache_dir, j->d->cfg.cache_max_bytes >> 20, p.removed, p.freed, p.kept, p.busy);
	daemon_lock(j->d);
	j->d->cache_trimming = false;
	daemon_unlock(j->d);
}

void system_trim(struct daemon *d)
{
	if (d->cfg.cache_max_bytes <= 0 || d->cache_trimming)
		return;
	struct job j = { .fn = trim_job };
	struct err e = { 0 };
	d->cache_trimming = true;
	if (job_start(d, &j, &e) < 0) {
		d->cache_trimming = false;
		log_warn("cache %s: no trim: %s", d->cfg.cache_dir, e.msg);
	}
}

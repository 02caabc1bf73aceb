/*
 * daemon/core/pool.c - the warm pool (pool.h).
 */
#include "daemon/core/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/core/isolation.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"
#include "daemon/core/quota.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/stats.h"
#include "daemon/driver/disk.h"
#include "daemon/driver/driver.h"
#include "daemon/net/net.h"
#include "daemon/store/store.h"
#include "daemon/store/template.h"

/* A whole number in lo..hi from s, or -1. */
static long number(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);
	return *s && !*end && v >= lo && v <= hi ? v : -1;
}

int pool_parse(struct daemon *d, const char *spec, char *why, size_t n)
{
	if (d->npools == POOL_MAX) {
		snprintf(why, n, "at most %d --pool entries", POOL_MAX);
		return -EINVAL;
	}
	struct pool p = { .cpus = DEFAULT_CPUS, .memory_mb = DEFAULT_MEMORY_MB, .disk_mb = DISK_DEFAULT_MB };
	char copy[256];
	if (snprintf(copy, sizeof(copy), "%s", spec) >= (int)sizeof(copy)) {
		snprintf(why, n, "--pool %.40s...: too long", spec);
		return -EINVAL;
	}
	char *save, *item = strtok_r(copy, ",", &save), *eq = item ? strchr(item, '=') : NULL;
	if (!eq) {
		snprintf(why, n, "--pool wants TEMPLATE=N[,cpus=C][,memory_mb=M][,disk_mb=D][,isolation=KIND], not %s", spec);
		return -EINVAL;
	}
	*eq = '\0';
	if (!template_name_ok(item) && !template_is_build_step(item) && strcmp(item, TEMPLATE_DEFAULT) != 0) {
		snprintf(why, n, "--pool %s: not a template name", item);
		return -EINVAL;
	}
	snprintf(p.template, sizeof(p.template), "%s", item);
	template_name_canon(p.template);
	if ((p.size = (int)number(eq + 1, 1, POOL_MAX_SIZE)) < 0) {
		snprintf(why, n, "--pool %s=%s: the size is 1..%d sandboxes", item, eq + 1, POOL_MAX_SIZE);
		return -EINVAL;
	}
	while ((item = strtok_r(NULL, ",", &save))) {
		char *v = strchr(item, '=');
		long x = -1;
		if (v)
			*v++ = '\0';
		if (v && strcmp(item, "cpus") == 0 && (x = number(v, 1, MAX_CPUS)) > 0)
			p.cpus = (int)x;
		else if (v && strcmp(item, "memory_mb") == 0 && (x = number(v, MIN_MEMORY_MB, MAX_MEMORY_MB)) > 0)
			p.memory_mb = (int)x;
		else if (v && strcmp(item, "disk_mb") == 0 && (x = number(v, DISK_MIN_MB, DISK_MAX_MB)) > 0)
			p.disk_mb = (int)x;
		else if (v && strcmp(item, "isolation") == 0 && strlen(v) < sizeof(p.isolation))
			snprintf(p.isolation, sizeof(p.isolation), "%s", v);
		else {
			snprintf(why, n,
				 "--pool %s: %s%s%s is not one of cpus=1..%d, memory_mb=%d..%d, disk_mb=%d..%d, isolation=KIND",
				 p.template, item, v ? "=" : "", v ? v : "", MAX_CPUS, MIN_MEMORY_MB, MAX_MEMORY_MB,
				 DISK_MIN_MB, DISK_MAX_MB);
			return -EINVAL;
		}
	}
	for (int i = 0; i < d->npools; i++) {
		struct pool *o = &d->pools[i];
		if (!strcmp(o->template, p.template) && !strcmp(o->isolation, p.isolation) && o->cpus == p.cpus &&
		    o->memory_mb == p.memory_mb && o->disk_mb == p.disk_mb) {
			snprintf(why, n, "--pool %s: that template and size has a pool already", spec);
			return -EINVAL;
		}
	}
	struct pool *more = realloc(d->pools, sizeof(*more) * (size_t)(d->npools + 1));
	if (!more) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	d->pools = more;
	d->pools[d->npools++] = p;
	return 0;
}

void pool_sweep(struct daemon *d)
{
	sandbox_delete_marked(d, POOL_KEY, "of the last spaced's warm pool");
}

/* The kind a pool's sandboxes are of. [L] */
static const char *kind_of(struct daemon *d, const struct pool *p)
{
	return p->isolation[0] ? p->isolation : d->isolation->kind;
}

/* A fill of p failed with e: said, and the next waits longer. [L] */
static void failed(struct pool *p, const struct err *e)
{
	p->failures++;
	snprintf(p->last_error, sizeof(p->last_error), "%s", e->msg);
	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : POOL_RETRY_MS;
	if (p->backoff_ms > POOL_RETRY_MAX_MS)
		p->backoff_ms = POOL_RETRY_MAX_MS;
	p->retry_ms = mono_ms() + p->backoff_ms;
	log_warn("warm pool of %s: a sandbox could not be made (next try in %lld s): %s", p->template,
		 (long long)(p->backoff_ms / 1000), e->msg);
}

static void fill_job(struct job *j)
{
	struct daemon *d = j->d;
	struct err e = { 0 };
	int rc = sandbox_build(d, j->sb, j->create.rootfs, NULL, &e);
	daemon_lock(d);
	struct pool *p = &d->pools[j->create.pool];
	p->filling--;
	if (rc == 0) {
		p->fills++;
		p->backoff_ms = 0;
	} else {
		failed(p, &e);
	}
	daemon_unlock(d);
}

/* Starts making one sandbox for pool i. [L] */
/* Whether sb waits in pool i. */
static bool in_pool(const struct sandbox *sb, int i)
{
	return sb->pooled == SB_POOL_WARM && sb->pool_index == i;
}

static void fill(struct daemon *d, int i)
{
	struct pool *p = &d->pools[i];
	json_t *meta = json_pack("{s:s}", POOL_KEY, p->template), *env = json_object();
	struct sb_config cfg = { .cpus = p->cpus, .memory_mb = p->memory_mb, .disk_mb = p->disk_mb,
				 .env = env, .metadata = meta };
	snprintf(cfg.template, sizeof(cfg.template), "%s", p->template);
	struct job j = { .fn = fill_job, .create.pool = i };
	struct err e = { 0 };
	const struct driver_slot *k = isolation_pick(d, p->isolation[0] ? p->isolation : NULL, &e);
	int rc = k ? 0 : -EINVAL;
	cfg.isolation = k ? k->kind : NULL;
	if (rc == 0)
		rc = quota_create(d, 0, &e);
	if (rc == 0 && !(j.sb = sandbox_new(d, &cfg, j.create.rootfs, sizeof(j.create.rootfs), &e)))
		rc = -EINVAL;
	if (rc == 0) {
		j.sb->pooled = SB_POOL_WARM;
		j.sb->pool_index = i;
		j.sb->cpu_shares = POOL_CPU_SHARES;
		p->filling++;
		if ((rc = job_start(d, &j, &e)) < 0) {
			p->filling--;
			sandbox_forget(d, j.sb);
		}
	}
	if (rc < 0)
		failed(p, &e);
	json_decref(meta);
	json_decref(env);
}

/* Pool i's sandboxes: made or being made, not claimed. [L] */
static int count(struct daemon *d, int i, int *ready)
{
	int n = 0;
	*ready = 0;
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		if (!in_pool(sb, i) || sb->state == SB_DELETING)
			continue;
		n++;
		*ready += sb->state == SB_RUNNING && peer_ready(sb);
	}
	return n;
}

void pool_tick(struct daemon *d)
{
	if (!d->serving)
		return; /* the start's sweeps would take a sandbox being made for one of theirs */
	int64_t now = mono_ms();
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		/* one that failed, or stopped, while it waited is replaced */
		if (sb->pooled == SB_POOL_WARM && sb->state != SB_RUNNING && sb->state != SB_CREATING && sb->state != SB_DELETING) {
			struct err e = { 0 };
			log_warn("sandbox %s of the warm pool is %s (%s): removed", sb->id, sb_state_name(sb->state), sb->reason);
			if (sandbox_delete(d, sb, NULL, &e) < 0)
				log_warn("sandbox %s: %s", sb->id, e.msg);
		}
	}
	for (int i = 0; i < d->npools; i++) {
		struct pool *p = &d->pools[i];
		int ready, n = count(d, i, &ready);
		if (p->filling == 0 && now >= p->retry_ms && n < p->size)
			fill(d, i);
		for (struct sandbox *sb = d->sandboxes; sb && n > p->size; sb = sb->next) {
			struct err e = { 0 }; /* the pool shrank: what it holds beyond its size goes */
			if (in_pool(sb, i) && sb->state == SB_RUNNING && sandbox_delete(d, sb, NULL, &e) == 0)
				n--;
		}
	}
}

int pool_template(struct daemon *d, const char *name, int size)
{
	for (int i = 0; i < d->npools; i++) {
		struct pool *p = &d->pools[i];
		if (p->from_template && strcmp(p->template, name) == 0) {
			p->size = size;
			return 0;
		}
	}
	if (size <= 0)
		return 0;
	struct pool *more = realloc(d->pools, sizeof(*more) * (size_t)(d->npools + 1));
	if (!more) {
		log_warn("template %s: no memory for its warm pool", name);
		return -ENOMEM;
	}
	d->pools = more;
	d->pools[d->npools++] = (struct pool){ .cpus = DEFAULT_CPUS, .memory_mb = DEFAULT_MEMORY_MB,
					       .disk_mb = DISK_DEFAULT_MB, .size = size, .from_template = true };
	snprintf(d->pools[d->npools - 1].template, sizeof(d->pools[0].template), "%s", name);
	return 0;
}

void pool_templates(struct daemon *d)
{
	json_t *all = store_list_templates(d->store), *t;
	size_t i;
	daemon_lock(d);
	json_array_foreach(all, i, t) {
		json_int_t n = json_integer_value(json_object_get(json_object_get(t, "config"), "pool"));
		if (n > 0 && n <= POOL_MAX_SIZE)
			pool_template(d, json_string_value(json_object_get(t, "name")), (int)n);
	}
	daemon_unlock(d);
	json_decref(all);
}

int pool_members(struct daemon *d, const char *name)
{
	int n = 0;
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		n += sb->pooled != SB_POOL_NONE && strcmp(sb->conf.template, name) == 0;
	return n;
}

json_t *pool_json(struct daemon *d)
{
	json_t *a = json_array();
	for (int i = 0; i < d->npools; i++) {
		struct pool *p = &d->pools[i];
		int ready;
		count(d, i, &ready);
		json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:s?}",
						   "template", p->template, "isolation", kind_of(d, p), "cpus", p->cpus,
						   "memory_mb", p->memory_mb, "disk_mb", p->disk_mb, "size", p->size,
						   "ready", ready, "filling", p->filling, "claims", (json_int_t)p->claims,
						   "fills", (json_int_t)p->fills, "failures", (json_int_t)p->failures,
						   "last_error", p->last_error[0] ? p->last_error : NULL));
	}
	return a;
}

/* The create's environment as "NAME=VALUE\0" strings, into b. */
static int env_strings(const json_t *env, struct buf *b)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)env, k, v) {
		if (buf_put(b, k, strlen(k)) < 0 || buf_put(b, "=", 1) < 0 ||
		    buf_put(b, json_string_value(v), json_string_length(v) + 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void claim_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	struct err e = { 0 };
	const json_t *env = json_object_get(j->claim.settings, "env"), *net = json_object_get(j->claim.settings, "network");
	int rc = 0;
	daemon_lock(d);
	if (json_object_size(env)) {
		struct buf b = { 0 };
		rc = env_strings(env, &b) < 0 ? err_set(&e, ERR_INTERNAL, ENOMEM, "out of memory") : 0;
		if (rc == 0 && sizeof(struct frame) + buf_avail(&b) > SP_MAX_PAYLOAD)
			rc = err_set(&e, ERR_TOO_LARGE, E2BIG, "env is too large for the sandbox's agent");
		if (rc == 0)
			rc = peer_request(d, sb, "taking the create's environment", SP_H_ENV, buf_head(&b), buf_avail(&b),
					  NULL, 0, AGENT_HELLO_TIMEOUT_MS, &e);
		buf_free(&b);
	}
	bool renet = rc == 0 && json_is_object(net) && !json_equal((json_t *)net, sb->network);
	daemon_unlock(d);
	if (renet && (rc = net_apply_policy(d, sb, net, &e)) == 0) {
		daemon_lock(d);
		json_decref(sb->network);
		sb->network = json_incref((json_t *)net);
		daemon_unlock(d);
	}
	/* what the create asked for is on disk before it is answered */
	if (rc == 0 && (rc = store_put_sandbox(d->store, sb)) < 0)
		err_set(&e, ERR_INTERNAL, -rc, "cannot record sandbox %s: %s", sb->id, strerror(-rc));
	if (rc == 0) {
		const struct driver_slot *dv = sandbox_driver(d, sb);
		struct err we = { 0 };
		sb->cpu_shares = 0;
		if (dv && driver_weigh(dv, sb, &we) < 0)
			log_warn("sandbox %s: its CPU share stays the pool's: %s", sb->id, we.msg);
	}
	daemon_lock(d);
	if (rc == 0) {
		sb->pooled = SB_POOL_NONE;
		sandbox_touch(sb);
		j->op->answer = ANSWER_CREATED;
		j->op->json = sandbox_json(sb);
		op_finish(j->op);
	} else {
		log_warn("sandbox %s: a claim from the warm pool failed: %s", sb->id, e.msg);
		op_fail(j->op, &e);
		struct err de = { 0 };
		if (sandbox_delete(d, sb, NULL, &de) < 0)
			log_warn("sandbox %s: %s", sb->id, de.msg);
	}
	daemon_unlock(d);
	json_decref(j->claim.settings);
}

int pool_claim(struct daemon *d, const struct sb_config *cfg, struct op *op, struct err *e)
{
	if (cfg->snapshot || cfg->no_network)
		return 0;
	const char *kind = cfg->isolation ? cfg->isolation : d->isolation->kind;
	struct sandbox *sb = NULL;
	for (struct sandbox *s = d->sandboxes; s && !sb; s = s->next) {
		if (s->pooled != SB_POOL_WARM || s->state != SB_RUNNING || !peer_ready(s))
			continue;
		const struct pool *p = &d->pools[s->pool_index];
		if (!strcmp(p->template, cfg->template) && !strcmp(kind_of(d, p), kind) && p->cpus == cfg->cpus &&
		    p->memory_mb == cfg->memory_mb && p->disk_mb == cfg->disk_mb)
			sb = s;
	}
	if (!sb && d->npools)
		stats_add(d->stats, STATS_POOL_MISSES, 1);
	if (!sb)
		return 0;
	if (sandbox_room(d, cfg->tenant, e) < 0)
		return -EAGAIN;
	struct job j = { .fn = claim_job, .op = op, .sb = sb };
	j.claim.settings = json_pack("{s:O, s:O?}", "env", cfg->env, "network", (json_t *)cfg->network);
	if (!j.claim.settings)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	int rc = sandbox_claim(d, sb, cfg, e);
	if (rc == 0 && (rc = job_start(d, &j, e)) < 0)
		sandbox_delete(d, sb, NULL, &(struct err){ 0 });
	if (rc < 0) {
		json_decref(j.claim.settings);
		return rc;
	}
	d->pools[sb->pool_index].claims++;
	stats_add(d->stats, STATS_POOL_HITS, 1);
	sb->pooled = SB_POOL_CLAIMED; /* hidden until the claim is recorded */
	return 1;
}

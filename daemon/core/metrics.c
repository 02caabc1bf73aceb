/*
 * daemon/core/metrics.c - the sandboxes' samples (see metrics.h): the ring each sandbox keeps,
 * its JSON, and the job that takes a sample of every running sandbox.
 */
#include "daemon/core/metrics.h"

#include <stdlib.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/core/quota.h"
#include "daemon/core/sandbox.h"
#include "daemon/driver/driver.h"

void metrics_add(struct metrics_history *h, const struct metrics_sample *s)
{
	h->s[h->head] = *s;
	h->head = (h->head + 1) % METRICS_HISTORY;
	if (h->n < METRICS_HISTORY)
		h->n++;
}

json_t *metrics_json(const struct sandbox *sb, int64_t from_ms, int64_t to_ms)
{
	json_t *a = json_array();
	const struct metrics_history *h = sb->metrics;
	for (unsigned i = 0; h && i < h->n; i++) {
		const struct metrics_sample *s = &h->s[(h->head + METRICS_HISTORY - h->n + i) % METRICS_HISTORY];
		if (s->at_ms < from_ms || s->at_ms > to_ms)
			continue;
		char when[32];
		clock_format(when, sizeof(when), s->at_ms);
		json_array_append_new(a, json_pack("{s:s, s:f, s:i, s:I, s:I, s:I, s:I, s:I}", "timestamp", when,
						   "cpu_used_pct", s->cpu_pct, "cpu_count", sb->conf.cpus, "mem_used_bytes",
						   (json_int_t)s->mem_used, "mem_total_bytes",
						   (json_int_t)sb->conf.memory_mb << 20, "mem_cache_bytes",
						   (json_int_t)s->mem_cache, "disk_used_bytes", (json_int_t)s->disk_used,
						   "disk_total_bytes", (json_int_t)sb->conf.disk_mb << 20));
	}
	return a;
}

/* What the host counts of sb now; -1 when its runtime cannot be read (it just stopped). */
static int measure(struct daemon *d, struct sandbox *sb, struct driver_stats *st, uint64_t *disk)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);
	if (!dv || driver_stats(dv, sb, st) < 0)
		return -1;
	*disk = quota_layer_bytes(d, sb);
	return 0;
}

/* Records what was read of sb at mono ms `mono` (wall `wall`) into its history. [L] */
static void record(struct sandbox *sb, const struct driver_stats *st, uint64_t disk, int64_t mono, int64_t wall)
{
	if (!sb->metrics && !(sb->metrics = calloc(1, sizeof(*sb->metrics))))
		return;
	struct metrics_history *h = sb->metrics;
	struct metrics_sample s = { .at_ms = wall, .mem_used = st->memory_bytes, .mem_cache = st->cache_bytes,
				    .disk_used = disk };
	/* a rate from the last reading if it was the previous round's (not one from before a
	 * pause or suspend) and the clock of the runtime did not start again (a restore) */
	int64_t span = mono - h->cpu_mono_ms;
	if (h->cpu_mono_ms && span > 0 && span <= 3 * METRICS_INTERVAL_MS && st->cpu_ns >= h->cpu_ns && sb->conf.cpus > 0) {
		s.cpu_pct = (double)(st->cpu_ns - h->cpu_ns) / ((double)span * 1e6 * sb->conf.cpus) * 100.0;
		if (s.cpu_pct > 100.0)
			s.cpu_pct = 100.0;
	}
	h->cpu_ns = st->cpu_ns;
	h->cpu_mono_ms = st->cpu_ns ? mono : 0;
	metrics_add(h, &s);
}

static void sample_all(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *todo[SPACE_MAX_SANDBOXES];
	size_t n = 0;
	daemon_lock(d);
	for (struct sandbox *sb = d->sandboxes; sb && n < SPACE_MAX_SANDBOXES; sb = sb->next)
		if (sb->state == SB_RUNNING && sb->pooled != SB_POOL_WARM) {
			sb->refs++; /* not freed while this job reads it */
			todo[n++] = sb;
		}
	daemon_unlock(d);
	for (size_t i = 0; i < n; i++) {
		struct driver_stats st = { 0 };
		uint64_t disk = 0;
		int ok = measure(d, todo[i], &st, &disk);
		int64_t mono = mono_ms(), wall = now_ms();
		daemon_lock(d);
		if (ok == 0 && todo[i]->state == SB_RUNNING && !todo[i]->dead)
			record(todo[i], &st, disk, mono, wall);
		todo[i]->refs--;
		daemon_unlock(d);
	}
	daemon_lock(d);
	d->metrics_busy = false;
	daemon_unlock(d);
}

void metrics_tick(struct daemon *d)
{
	int64_t now = mono_ms();
	if (!d->serving || d->metrics_busy || (d->metrics_at_ms && now - d->metrics_at_ms < METRICS_INTERVAL_MS))
		return;
	struct job tmpl = { .fn = sample_all };
	struct err e = { 0 };
	if (job_start(d, &tmpl, &e) < 0) {
		log_warn("metrics: %s", e.msg);
		return;
	}
	d->metrics_busy = true;
	d->metrics_at_ms = now;
}

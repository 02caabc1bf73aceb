/*
 * daemon/core/metrics.h - what each sandbox uses of its CPUs, memory and disk, sampled from
 * the host every METRICS_INTERVAL_MS and kept, the last METRICS_HISTORY samples a sandbox.
 *
 * A sample is what the host counts (driver stats, core/quota.h's layer bytes): CPU time of the
 * sandbox's runtime as a share of its cpus over the interval, its memory (a gVisor sandbox's
 * cgroup, page cache of its files included and also given apart; a microVM's QEMU process),
 * and the used blocks of its disk. Only running sandboxes are sampled: a paused or suspended
 * one keeps the samples of when it ran. The first sample after a start or resume has no CPU
 * rate yet (0): a rate needs two readings. Samples live in spaced's memory only.
 *
 * One job at a time takes the samples, reading without d->lock and recording with it.
 */
#ifndef SPACE_DAEMON_CORE_METRICS_H
#define SPACE_DAEMON_CORE_METRICS_H

#include <stdint.h>
#include <jansson.h>

#include "daemon/daemon.h"

#define METRICS_INTERVAL_MS 5000 /* between two samples of a running sandbox */
#define METRICS_HISTORY 120      /* samples kept per sandbox: its last 10 minutes of running */
#define METRICS_ALL 0, INT64_MAX /* metrics_json's range of every sample */

struct metrics_sample {
	int64_t at_ms;           /* wall clock */
	double cpu_pct;          /* 0..100: of all its cpus */
	uint64_t mem_used, mem_cache, disk_used; /* bytes */
};

/* A sandbox's samples, oldest first from (head - n) (sb->metrics; freed with free()). */
struct metrics_history {
	struct metrics_sample s[METRICS_HISTORY];
	unsigned head, n;
	uint64_t cpu_ns;         /* the last reading of its CPU time... */
	int64_t cpu_mono_ms;     /* ...and when (0: none yet, no rate) */
};

/* Adds s to h, dropping the oldest sample once h holds METRICS_HISTORY. */
void metrics_add(struct metrics_history *h, const struct metrics_sample *s);

/* The samples of sb taken from from_ms to to_ms (wall clock ms, inclusive; METRICS_ALL for both:
 * every one), oldest first, as a JSON array of {"timestamp", "cpu_used_pct", "cpu_count", "mem_used_bytes",
 * "mem_total_bytes", "mem_cache_bytes", "disk_used_bytes", "disk_total_bytes"}. [L] */
json_t *metrics_json(const struct sandbox *sb, int64_t from_ms, int64_t to_ms);

/* Starts the sampling job when METRICS_INTERVAL_MS passed since the last one started and it
 * has ended. From the I/O thread's tick. [L] */
void metrics_tick(struct daemon *d);

#endif

/*
 * agent/oom.h - the sandbox's memory limit, counted in memory used, not
 * address space reserved.
 *
 * Processes inside may reserve as much address space as Linux allows. The
 * agent reads what the sandbox's kernel says is in use (/proc/meminfo; not
 * MemAvailable, which gVisor reports as 0 after a restore) and acts when the
 * memory held (AnonPages + Shmem: anonymous memory and tmpfs files, which
 * nothing can give back) comes within the margin below the limit
 * (SPACE_MEMORY_MB), or when that plus the file pages processes map (Cached:
 * their programs, libraries, mmapped files) passes the limit by file_extra. A
 * Linux memory cgroup counts those file pages too but drops them before it
 * kills; gVisor cannot drop them, so they get room above the limit instead,
 * still below the host's backstop. Then it kills the process with the most
 * resident memory (SIGKILL), never PID 1. The started process it belongs to
 * hears of it (A_OOM on its channel; its exit says SP_EXIT_OOM when it was
 * the victim itself). Then it waits for the victim to be gone, and for its
 * memory to be counted free, before it kills again, unless the use grows on
 * past where it was at the kill: one overshoot costs one process, and several
 * processes allocating together are stopped one after the other.
 *
 * The next reading comes when memory growing at OOM_RATE_MIB_S could first
 * reach the point where the watcher acts, at least OOM_FAST_MS and at most
 * OOM_SLOW_MS later: an idle sandbox far below its limit is read twice a
 * second, one near it every 20 ms. What grows faster than OOM_RATE_MIB_S
 * overshoots by at most a reading's worth before it is killed, and the host's
 * backstop sits well above the limit for that (daemon/driver). A sandbox over its limit with no process to kill (the
 * memory held by tmpfs files) is left to that backstop.
 */
#ifndef SPACE_AGENT_OOM_H
#define SPACE_AGENT_OOM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;

/* The watcher acts at the limit less a margin of 1/16 of it, between 16 and 64 MiB: room for
 * the runtime's own memory, so a sandbox near its limit still fits the host cgroup when it is
 * restored (which happens before the host raises its backstop above the limit). */
#define OOM_MARGIN_MIN (16ull << 20)
#define OOM_MARGIN_MAX (64ull << 20)
/* Mapped file pages may take the sandbox 1/8 + OOM_FILE_EXTRA above its limit (128 MiB for
 * 512), halfway to the host backstop's 1/4 + 128 MiB. */
#define OOM_FILE_EXTRA (64ull << 20)
#define OOM_RATE_MIB_S 2048u      /* fastest growth assumed: two cores each touching fresh pages
                                     at about 1 GiB/s, as measured inside gVisor here */
#define OOM_SLOW_MS 500u          /* longest time between readings */
#define OOM_FAST_MS 20u           /* shortest */
#define OOM_GONE_MS 3000u         /* longest wait for a victim to go before the next judgement */
#define OOM_SETTLE_MS 500u        /* then at most this for the kernel to count its memory free
                                     (gVisor returns it about 100 ms after the exit) */

struct oom {
	uint64_t limit;           /* bytes; 0: no limit to watch */
	uint64_t margin;          /* bytes below it at which held memory makes the watcher act */
	uint64_t file_extra;      /* bytes above it at which held + mapped file pages do */
	uint64_t next_ms;         /* when the next reading is due */
	pid_t victim;             /* killed and not yet gone, 0: none */
	uint64_t victim_ms;       /* when it was killed */
	uint64_t settle_until;    /* no kill before this while the victim's memory is returned */
	uint64_t used_at_kill;    /* the use that made the last kill: growth past it kills again */
	uint64_t kills;
	int idle_logged;          /* said once that nothing could be killed */
	uint64_t kernel_kills;    /* the kernel's own OOM kills seen so far (/proc/vmstat oom_kill) */
};

/* Reads the limit from SPACE_MEMORY_MB (none when unset). */
void oom_init(struct agent *a);
void oom_tick(struct agent *a, uint64_t now);
uint64_t oom_deadline(const struct agent *a);

/* A process of ours died of SIGKILL: whether the kernel's own OOM killer killed something since
 * the last look (a microVM's kernel has one; gVisor's does not, and its count stays 0). */
bool oom_kernel_killed(struct agent *a);

/* The sandbox's memory, bytes (SPACE_MEMORY_MB, else the kernel's MemTotal): the limit a kernel
 * OOM kill is reported at. */
uint64_t oom_sandbox_memory(void);

#endif

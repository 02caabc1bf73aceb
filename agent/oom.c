/*
 * agent/oom.c - see oom.h.
 */
#include "oom.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define OWNER_HOPS 64 /* parents walked up looking for a started process */

/* Reads path into buf (NUL-terminated); the length or -errno. */
static ssize_t read_text(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t len = 0, r;
	while ((size_t)len < n - 1 && (r = read(fd, buf + len, n - 1 - (size_t)len)) > 0)
		len += r;
	close(fd);
	buf[len] = '\0';
	return len;
}

static uint64_t meminfo_kib(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* /proc/meminfo, kept open: a read at offset 0 makes it anew, one system call a reading */
static int meminfo_fd = -1;

/* What the sandbox's kernel counts in use: held (anonymous memory and tmpfs files, which
 * nothing can give back) and mapped (held plus the file pages processes map). */
struct use {
	uint64_t held, mapped;
};

static int read_use(struct use *u)
{
	char text[4096];
	if (meminfo_fd < 0 && (meminfo_fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	ssize_t n = pread(meminfo_fd, text, sizeof(text) - 1, 0);
	if (n <= 0) {
		int err = n < 0 ? errno : EPROTO;
		close(meminfo_fd);
		meminfo_fd = -1;
		return -err;
	}
	text[n] = '\0';
	/* not MemTotal - MemAvailable: gVisor reports no memory free at all after a restore */
	if (!strstr(text, "AnonPages:") || !strstr(text, "\nCached:") || !strstr(text, "Shmem:"))
		return -EPROTO;
	uint64_t anon = meminfo_kib(text, "AnonPages:"), cached = meminfo_kib(text, "\nCached:");
	u->held = (anon + meminfo_kib(text, "\nShmem:")) << 10;
	u->mapped = (anon + cached) << 10;
	return 0;
}

/* How far u is from where the watcher acts (0: there), and the use that is nearest. */
static uint64_t headroom(const struct agent *a, const struct use *u, uint64_t *nearest)
{
	uint64_t held_at = a->oom.limit - a->oom.margin, mapped_at = a->oom.limit + a->oom.file_extra;
	uint64_t h = u->held >= held_at ? 0 : held_at - u->held;
	uint64_t m = u->mapped >= mapped_at ? 0 : mapped_at - u->mapped;
	*nearest = m < h ? u->mapped : u->held;
	return m < h ? m : h;
}

void oom_init(struct agent *a)
{
	const char *v = getenv("SPACE_MEMORY_MB"), *watch = getenv("SPACE_MEMORY_WATCH");
	if (watch && strcmp(watch, "off") == 0) /* spaced under the backstop's tests */
		v = NULL;
	unsigned long long mb = v ? strtoull(v, NULL, 10) : 0;
	uint64_t limit = (uint64_t)mb << 20, margin = limit / 16;
	margin = margin < OOM_MARGIN_MIN ? OOM_MARGIN_MIN : margin > OOM_MARGIN_MAX ? OOM_MARGIN_MAX : margin;
	a->oom = (struct oom){ .limit = mb && limit > margin ? limit : 0, .margin = margin,
			       .file_extra = limit / 8 + OOM_FILE_EXTRA };
	oom_kernel_killed(a); /* the count so far: kills before the agent started are not ours */
}

/* The state letter, parent and session of pid from /proc/<pid>/stat; false when it is gone. */
static bool stat_of(pid_t pid, char *state, pid_t *ppid, pid_t *sid)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_text(path, text, sizeof(text)) <= 0)
		return false;
	const char *p = strrchr(text, ')'); /* the command may hold spaces and parentheses */
	int pp = 0, pgrp = 0, s = 0;
	if (!p || sscanf(p + 1, " %c %d %d %d", state, &pp, &pgrp, &s) != 4)
		return false;
	*ppid = pp;
	*sid = s;
	return true;
}

static uint64_t rss_of(pid_t pid)
{
	char path[64], text[256];
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	unsigned long long size = 0, resident = 0;
	if (read_text(path, text, sizeof(text)) <= 0 || sscanf(text, "%llu %llu", &size, &resident) != 2)
		return 0;
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The process with the most resident memory, other than PID 1 and the agent; 0 if none. */
static pid_t largest(pid_t skip, uint64_t *rss)
{
	DIR *d = opendir("/proc");
	pid_t best = 0, self = getpid();
	*rss = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 1 || pid == self || pid == skip)
			continue;
		uint64_t r = rss_of((pid_t)pid);
		if (r > *rss) {
			*rss = r;
			best = (pid_t)pid;
		}
	}
	closedir(d);
	return best;
}

/* The started process that victim belongs to: itself, the leader of its session, or its
 * nearest started ancestor; 0 for none. */
static pid_t owner_of(struct agent *a, pid_t victim)
{
	char state;
	pid_t ppid, sid;
	if (proc_started(a, (uint32_t)victim))
		return victim;
	if (!stat_of(victim, &state, &ppid, &sid))
		return 0;
	if (sid > 0 && proc_started(a, (uint32_t)sid))
		return sid;
	for (int hop = 0; hop < OWNER_HOPS && ppid > 1; hop++) {
		if (proc_started(a, (uint32_t)ppid))
			return ppid;
		if (!stat_of(ppid, &state, &ppid, &sid))
			break;
	}
	return 0;
}

static void cmdline_of(pid_t pid, char *buf, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	ssize_t len = read_text(path, buf, n);
	for (ssize_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (len > 0 && buf[len - 1] == ' ')
		buf[--len] = '\0';
	if (len <= 0)
		snprintf(buf, n, "?");
}

static void kill_largest(struct agent *a, uint64_t used, uint64_t now)
{
	uint64_t rss;
	pid_t victim = largest(a->oom.victim, &rss); /* the last one, if still dying, is going */
	if (!victim) {
		if (!a->oom.idle_logged)
			agent_log("memory: %llu MiB of %llu in use and no process to stop",
				  (unsigned long long)(used >> 20), (unsigned long long)(a->oom.limit >> 20));
		a->oom.idle_logged = 1;
		return;
	}
	char cmd[AGENT_CMDLINE_MAX];
	cmdline_of(victim, cmd, sizeof(cmd));
	pid_t owner = owner_of(a, victim);
	if (kill(victim, SIGKILL) < 0)
		return; /* gone already: judged again at the next reading */
	a->oom.victim = victim;
	a->oom.used_at_kill = used;
	a->oom.victim_ms = now;
	a->oom.kills++;
	agent_log("memory: %llu MiB of %llu in use; killed pid %d (%s, %llu MiB resident)",
		  (unsigned long long)(used >> 20), (unsigned long long)(a->oom.limit >> 20), (int)victim, cmd,
		  (unsigned long long)(rss >> 20));
	if (owner)
		proc_oom(a, (uint32_t)owner, (uint32_t)victim, rss, used, a->oom.limit, cmd);
}

/* Whether the last victim still holds its memory: alive, or dying but not yet a zombie. */
static bool victim_stays(struct agent *a, uint64_t now)
{
	char state;
	pid_t ppid, sid;
	if (!a->oom.victim)
		return false;
	if (now - a->oom.victim_ms < OOM_GONE_MS && stat_of(a->oom.victim, &state, &ppid, &sid) && state != 'Z' &&
	    state != 'X')
		return true;
	a->oom.victim = 0;
	a->oom.settle_until = now + OOM_SETTLE_MS;
	return false;
}

/* How long memory growing at OOM_RATE_MIB_S takes to cover room, within [OOM_FAST_MS,
 * OOM_SLOW_MS]. */
static uint64_t next_reading_ms(uint64_t room)
{
	uint64_t ms = room / (((uint64_t)OOM_RATE_MIB_S << 20) / 1000);
	return ms < OOM_FAST_MS ? OOM_FAST_MS : ms > OOM_SLOW_MS ? OOM_SLOW_MS : ms;
}

void oom_tick(struct agent *a, uint64_t now)
{
	if (!a->oom.limit || now < a->oom.next_ms)
		return;
	struct use u = { 0 };
	uint64_t used = 0, room = 0;
	bool waiting = victim_stays(a, now);
	int rc = read_use(&u);
	if (rc == 0)
		room = headroom(a, &u, &used);
	a->oom.next_ms = now + (waiting || rc < 0 ? OOM_FAST_MS : next_reading_ms(room));
	if (rc < 0)
		return;
	if (room > 0) {
		a->oom.idle_logged = 0;
		a->oom.settle_until = 0;
		return;
	}
	/* the last victim's memory is on its way back: no second kill, unless the use grows on
	 * past where it was at the kill (others allocate faster than the victim gives back) */
	if ((waiting || now < a->oom.settle_until) && used <= a->oom.used_at_kill)
		return;
	kill_largest(a, used, now);
}

uint64_t oom_deadline(const struct agent *a)
{
	return a->oom.limit ? a->oom.next_ms : UINT64_MAX;
}

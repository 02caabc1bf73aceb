/*
 * daemon/driver/driver_gvisor_cg.c - a gVisor sandbox's host cgroups (the ones runsc makes,
 * under space/<id>): its memory backstop raised once it runs or ahead of a restore, what they
 * count (memory, page cache, CPU time), why its processes ended (an OOM kill, the pids limit),
 * and their removal.
 */
#include "daemon/driver/driver_gvisor_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/log.h"

/*
 * The host's memory backstop. runsc sizes the sandbox's kernel (MemTotal inside) from the
 * cgroup's limit, so the spec asks for the sandbox's own memory; once the sandbox runs, the
 * limit is raised to BACKSTOP_MB above it. The agent's watcher keeps what is used inside below
 * the sandbox's memory (agent/oom.c), and the backstop only catches what outruns it: an
 * allocation faster than the watcher's readings, or the runtime's own memory.
 */
#define BACKSTOP_MB(mb) ((mb) + (mb) / 4 + 128)

/* Raises the host limit of a sandbox that runs. One that cannot be raised leaves the sandbox
 * under its nominal limit (the watcher inside still acts first), so it is said, not failed:
 * the sandbox is up, and a start or resume that reported failure would misstate that. */
void gv_raise_backstop(struct sandbox *sb)
{
	char p[256], val[32];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/memory/space/%s/memory.limit_in_bytes", sb->id);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)BACKSTOP_MB((uint64_t)sb->conf.memory_mb) << 20);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	ssize_t w = fd < 0 ? -1 : write(fd, val, strlen(val));
	int rc = w == (ssize_t)strlen(val) ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		log_warn("sandbox %s: cannot raise its host memory limit (%s): %s; it stays at %d MiB", sb->id, p,
			 strerror(-rc), sb->conf.memory_mb);
}

void gv_remove_cgroups(const char *id)
{
	static const char *ctl[] = { "cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids",
				     "systemd", "unified" };
	for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++) {
		char p[256];
		snprintf(p, sizeof(p), "/sys/fs/cgroup/%s/space/%s", ctl[i], id);
		rmdir(p);
	}
}

/* The memory cgroup made ahead of a restore, at the backstop: runsc takes a cgroup that exists
 * as it is, and a restore loads the sandbox's whole memory beside the sentry's own, which at
 * the nominal limit (what the spec says, sizing the kernel inside) can be killed mid-load
 * when the sandbox was near its limit. */
void gv_backstop_ahead(struct sandbox *sb)
{
	char p[256];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/memory/space/%s", sb->id);
	if (mkdir(p, 0755) == 0 || errno == EEXIST)
		gv_raise_backstop(sb);
}

/* A cgroup file's text into buf (NUL-terminated); false when it cannot be read. */
static bool cgroup_read(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t got = read(fd, buf, n - 1);
	close(fd);
	if (got <= 0)
		return false;
	buf[got] = '\0';
	return true;
}

/* The value after `key ` in a cgroup file of `key value` lines, or -1. */
static long long cgroup_field(const char *path, const char *key)
{
	char buf[4096];
	if (!cgroup_read(path, buf, sizeof(buf)))
		return -1;
	size_t k = strlen(key);
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, k) == 0 && line[k] == ' ')
			return atoll(line + k + 1);
	return -1;
}

/* The number a cgroup file of one line holds, or -1. */
static long long cgroup_value(const char *path)
{
	char val[64];
	return cgroup_read(path, val, sizeof(val)) ? atoll(val) : -1;
}

/* What the sandbox's host cgroups count: its memory (the page cache of its files included,
 * which is the file part of memory.stat) and the CPU time of runsc's processes. */
int gv_stats(struct driver *drv, struct sandbox *sb, struct driver_stats *out)
{
	char p[256];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/memory/space/%s/memory.usage_in_bytes", sb->id);
	long long mem = cgroup_value(p);
	if (mem < 0)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->memory_bytes = (uint64_t)mem;
	snprintf(p, sizeof(p), "/sys/fs/cgroup/memory/space/%s/memory.stat", sb->id);
	long long active = cgroup_field(p, "total_active_file"), inactive = cgroup_field(p, "total_inactive_file");
	out->cache_bytes = (uint64_t)(active > 0 ? active : 0) + (uint64_t)(inactive > 0 ? inactive : 0);
	snprintf(p, sizeof(p), "/sys/fs/cgroup/cpuacct/space/%s/cpuacct.usage", sb->id);
	long long cpu = cgroup_value(p);
	out->cpu_ns = cpu > 0 ? (uint64_t)cpu : 0;
	return 0;
}

void gv_exit_reason(struct driver *drv, struct sandbox *sb, char *buf, size_t n)
{
	char p[256];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/memory/space/%s/memory.oom_control", sb->id);
	if (cgroup_field(p, "oom_kill") > 0) {
		snprintf(buf, n, "oom");
		return;
	}
	snprintf(p, sizeof(p), "/sys/fs/cgroup/pids/space/%s/pids.events", sb->id);
	if (cgroup_field(p, "max") > 0) {
		snprintf(buf, n, "pids");
		return;
	}
	snprintf(buf, n, "exited");
}

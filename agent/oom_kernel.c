/*
 * agent/oom_kernel.c - what the sandbox's kernel says of memory, for the process table
 * (proc.c) as much as for the watcher (oom.c): whether its own OOM killer killed something
 * (/proc/vmstat) and how much memory the sandbox has (oom.h).
 */
#include "oom.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* The value of `key` in a file of `key value` lines (/proc/vmstat, /proc/meminfo), or 0. */
static uint64_t proc_value(const char *path, const char *key)
{
	char text[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	size_t k = strlen(key);
	for (char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, key, k) == 0 && (line[k] == ' ' || line[k] == ':'))
			return strtoull(line + k + 1 + strspn(line + k + 1, " "), NULL, 10);
	return 0;
}

bool oom_kernel_killed(struct agent *a)
{
	uint64_t now = proc_value("/proc/vmstat", "oom_kill");
	bool grew = now > a->oom.kernel_kills;
	a->oom.kernel_kills = now;
	return grew;
}

uint64_t oom_sandbox_memory(void)
{
	const char *v = getenv("SPACE_MEMORY_MB");
	unsigned long long mb = v ? strtoull(v, NULL, 10) : 0;
	return mb ? (uint64_t)mb << 20 : proc_value("/proc/meminfo", "MemTotal") * 1024;
}

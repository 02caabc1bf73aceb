/*
 * agent/probe.c - see probe.h.
 */
#include "probe.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PROC_MAGIC 0x9fa0 /* statfs f_type of procfs */

int probe_pid1_state(void)
{
	struct statfs fs;
	if (statfs("/proc", &fs) < 0 || fs.f_type != PROC_MAGIC)
		return 1;
	int fd = open("/proc/1/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	const char *s = strstr(buf, "\nState:");
	if (!s)
		return 1;
	s += strlen("\nState:");
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '\n')
		return 1;
	printf("%c\n", *s);
	return 0;
}

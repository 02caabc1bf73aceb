/*
 * agent/agent.c - what every module of space-agent shares (agent.h): its log on stderr, its
 * two clocks (monotonic for deadlines, the wall clock for what the host shows) and the poll
 * set one loop iteration fills.
 */
#include "agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

uint64_t agent_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t agent_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void agent_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	dprintf(STDERR_FILENO, "space-agent: %s\n", line);
}

void pollset_add(struct pollset *ps, int fd, short events, watch_fn *fn, void *obj)
{
	if (ps->n >= AGENT_MAX_FDS)
		return;
	ps->fds[ps->n] = (struct pollfd){ .fd = fd, .events = events };
	ps->fn[ps->n] = fn;
	ps->obj[ps->n] = obj;
	ps->n++;
}

/*
 * daemon/base/clock.c - see clock.h.
 */
#include "daemon/base/clock.h"

#include <time.h>

static int64_t read_ms(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_ms(void)
{
	return read_ms(CLOCK_REALTIME);
}

int64_t mono_ms(void)
{
	return read_ms(CLOCK_MONOTONIC);
}

int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void clock_format(char *out, size_t n, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

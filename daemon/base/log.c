/*
 * daemon/base/log.c - timestamped log lines on stderr (see log.h).
 */
#include "daemon/base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

void log_msg(const char *level, const char *fmt, ...)
{
	char line[1024], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s.%03ldZ %s %s\n", ts, now.tv_nsec / 1000000, level, line);
}

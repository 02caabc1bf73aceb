/*
 * daemon/base/log.c - log lines on stderr (see log.h): timestamped, or with sd-daemon(3)'s
 * priority prefix when stderr is the journal's stream.
 */
#include "daemon/base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
static bool journal; /* stderr is the stream JOURNAL_STREAM names (set once, then only read) */

/* systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it connected stdout and stderr
 * to; stderr is that stream only if it is still that file (a shell may have redirected it). */
static void journal_check(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (v && sscanf(v, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0)
		journal = (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* sd-daemon's priority of a level: <3> error, <4> warning, <6> info (as syslog's). */
static int priority(const char *level)
{
	if (strcmp(level, "error") == 0)
		return 3;
	if (strcmp(level, "warn") == 0)
		return 4;
	return 6;
}

void log_msg(const char *level, const char *fmt, ...)
{
	char line[1024], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;

	pthread_once(&journal_once, journal_check);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (journal) { /* the journal stamps each line itself */
		fprintf(stderr, "<%d>%s %s\n", priority(level), level, line);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %s %s\n", ts, now.tv_nsec / 1000000, level, line);
}

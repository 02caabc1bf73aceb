/*
 * daemon/base/clock.h - the two clocks spaced reads: wall time for what users
 * see (created_at, idle deadlines kept across restarts) and a monotonic clock
 * for every wait and timeout.
 */
#ifndef SPACE_DAEMON_BASE_CLOCK_H
#define SPACE_DAEMON_BASE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t now_ms(void);
/* Milliseconds of CLOCK_MONOTONIC. */
int64_t mono_ms(void);
/* Nanoseconds of CLOCK_MONOTONIC. */
int64_t mono_ns(void);
/* Wall-clock ms as RFC 3339 UTC to the second ("2026-12-02T10:00:00Z") into out. */
void clock_format(char *out, size_t n, int64_t ms);

#endif

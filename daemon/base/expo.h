/*
 * daemon/base/expo.h - writing Prometheus' text exposition format, version 0.0.4.
 *
 * A family is announced once (expo_family: its # HELP and # TYPE lines), then its samples
 * follow: expo_sample for a counter's or a gauge's value, expo_histogram for a histogram's
 * cumulative buckets, the +Inf bucket, _sum and _count. Labels are given as a NULL-ended array
 * of name, value pairs; names are the caller's constants (they must match
 * [a-zA-Z_][a-zA-Z0-9_]*), values are escaped here (backslash, double quote, line feed).
 * Every function appends to b and returns 0 or -ENOMEM; nothing here keeps state.
 */
#ifndef SPACE_DAEMON_BASE_EXPO_H
#define SPACE_DAEMON_BASE_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

/* The Content-Type of an answer written with these functions. */
#define EXPO_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* "# HELP name help" and "# TYPE name type" (type: "counter", "gauge" or "histogram"). */
int expo_family(struct buf *b, const char *name, const char *type, const char *help);

/* One sample: name{labels} value. labels: NULL or a NULL-ended array of name, value. */
int expo_sample(struct buf *b, const char *name, const char *const *labels, double value);

/*
 * One histogram with labels: per_bucket[i] observations fell in (bounds[i-1], bounds[i]] for i <
 * nbounds, per_bucket[nbounds] above the last bound; bounds ascend. Written as name_bucket with
 * le="bound" (cumulative counts), le="+Inf", then name_sum (sum) and name_count.
 */
int expo_histogram(struct buf *b, const char *name, const char *const *labels, const double *bounds,
		   size_t nbounds, const uint64_t *per_bucket, double sum);

#endif

/*
 * tests/unit/daemon/base/test_expo.c - the text exposition format (base/expo.c) and the
 * counters written in it (core/stats.c): cumulative buckets, +Inf, _sum and _count, label
 * escaping, numbers as Prometheus reads them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/expo.h"
#include "daemon/core/stats.h"

/* b's text, NUL-ended (b keeps it). */
static const char *text(struct buf *b)
{
	buf_put(b, "", 1);
	b->len--;
	return (const char *)buf_head(b);
}

static void test_family_and_sample(void **state)
{
	(void)state;
	struct buf b = { 0 };
	assert_int_equal(expo_family(&b, "space_x_total", "counter", "Things."), 0);
	assert_int_equal(expo_sample(&b, "space_x_total", NULL, 3), 0);
	assert_int_equal(expo_sample(&b, "space_x_total", (const char *const[]){ "op", "create", "reason", "too_many", NULL },
				     0.25), 0);
	assert_string_equal(text(&b), "# HELP space_x_total Things.\n"
				      "# TYPE space_x_total counter\n"
				      "space_x_total 3\n"
				      "space_x_total{op=\"create\",reason=\"too_many\"} 0.25\n");
	buf_free(&b);
}

static void test_label_values_are_escaped(void **state)
{
	(void)state;
	struct buf b = { 0 };
	assert_int_equal(expo_sample(&b, "m", (const char *const[]){ "l", "a\\b\"c\nd", NULL }, 1), 0);
	assert_string_equal(text(&b), "m{l=\"a\\\\b\\\"c\\nd\"} 1\n");
	buf_free(&b);
}

static void test_numbers(void **state)
{
	(void)state;
	struct buf b = { 0 };
	expo_sample(&b, "a", NULL, 1.0 / 0.0);
	expo_sample(&b, "b", NULL, -1.0 / 0.0);
	expo_sample(&b, "c", NULL, 0.0 / 0.0);
	expo_sample(&b, "d", NULL, 0.1);
	expo_sample(&b, "e", NULL, 18446744073709551616.0); /* 2^64: no integer form past 1e15 */
	expo_sample(&b, "f", NULL, -7);
	assert_string_equal(text(&b), "a +Inf\nb -Inf\nc NaN\nd 0.1\ne 1.8446744073709552e+19\nf -7\n");
	buf_free(&b);
}

static void test_histogram_is_cumulative(void **state)
{
	(void)state;
	struct buf b = { 0 };
	const double bounds[] = { 0.005, 1, 2.5 };
	const uint64_t per[] = { 2, 0, 3, 4 }; /* 4 above the last bound */
	assert_int_equal(expo_histogram(&b, "h_seconds", (const char *const[]){ "op", "exec", NULL }, bounds, 3, per,
					12.5), 0);
	assert_string_equal(text(&b), "h_seconds_bucket{op=\"exec\",le=\"0.005\"} 2\n"
				      "h_seconds_bucket{op=\"exec\",le=\"1\"} 2\n"
				      "h_seconds_bucket{op=\"exec\",le=\"2.5\"} 5\n"
				      "h_seconds_bucket{op=\"exec\",le=\"+Inf\"} 9\n"
				      "h_seconds_sum{op=\"exec\"} 12.5\n"
				      "h_seconds_count{op=\"exec\"} 9\n");
	buf_free(&b);
}

static void test_histogram_without_labels(void **state)
{
	(void)state;
	struct buf b = { 0 };
	const double bounds[] = { 1 };
	const uint64_t per[] = { 0, 0 };
	assert_int_equal(expo_histogram(&b, "h", NULL, bounds, 1, per, 0), 0);
	assert_string_equal(text(&b), "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
	buf_free(&b);
}

/* The line of t for series (its name and labels), up to its end; "" if there is none. */
static const char *line_of(const char *t, const char *series, char *out, size_t n)
{
	size_t len = strlen(series);
	for (const char *p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, len) == 0 && p[len] == ' ') {
			snprintf(out, n, "%.*s", (int)strcspn(p, "\n"), p);
			return out;
		}
	return "";
}

static void test_stats_observations_land_in_their_buckets(void **state)
{
	(void)state;
	struct stats *st = stats_new();
	assert_non_null(st);
	stats_op_done(st, STATS_EXEC, NULL, 3000000);            /* 3 ms: the 0.005 bucket */
	stats_op_done(st, STATS_EXEC, "too_many", 5000000);      /* exactly 5 ms: still le 0.005 */
	stats_op_done(st, STATS_EXEC, "no_such_code", 400000000000); /* 400 s: only +Inf */
	stats_op_done(st, STATS_OPS, NULL, 1);                   /* not an operation: nothing */
	stats_add(st, STATS_DNS_QUERIES, 2);
	stats_add(st, STATS_COUNTERS, 5);                        /* not a counter: nothing */
	stats_add(NULL, STATS_DNS_QUERIES, 1);                   /* no stats: nothing */
	stats_build_done(st, false, 2000000000);
	struct buf b = { 0 };
	assert_int_equal(stats_write(st, &b), 0);
	const char *t = text(&b);
	static const struct {
		const char *series, *value;
	} want[] = {
		{ "space_operation_seconds_bucket{op=\"exec\",le=\"0.005\"}", "2" },
		{ "space_operation_seconds_bucket{op=\"exec\",le=\"300\"}", "2" },
		{ "space_operation_seconds_bucket{op=\"exec\",le=\"+Inf\"}", "3" },
		{ "space_operation_seconds_count{op=\"exec\"}", "3" },
		{ "space_operation_seconds_sum{op=\"exec\"}", "400.008" },
		{ "space_operation_seconds_count{op=\"create\"}", "0" },
		{ "space_operation_failures_total{op=\"exec\",reason=\"too_many\"}", "1" },
		{ "space_operation_failures_total{op=\"exec\",reason=\"other\"}", "1" },
		{ "space_dns_queries_total", "2" },
		{ "space_template_build_failures_total", "1" },
		{ "space_template_build_seconds_bucket{le=\"5\"}", "1" },
		{ "space_template_build_seconds_bucket{le=\"1\"}", "0" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char expect[300], got[300];
		snprintf(expect, sizeof(expect), "%s %s", want[i].series, want[i].value);
		assert_string_equal(line_of(t, want[i].series, got, sizeof(got)), expect);
	}
	/* every family is announced once, before its samples */
	assert_non_null(strstr(t, "# TYPE space_operation_seconds histogram\n"));
	assert_null(strstr(strstr(t, "# TYPE space_operation_seconds histogram\n") + 1,
			   "# TYPE space_operation_seconds histogram\n"));
	buf_free(&b);
	stats_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_and_sample),
		cmocka_unit_test(test_label_values_are_escaped),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_histogram_is_cumulative),
		cmocka_unit_test(test_histogram_without_labels),
		cmocka_unit_test(test_stats_observations_land_in_their_buckets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

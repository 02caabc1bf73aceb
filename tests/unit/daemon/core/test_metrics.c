/*
 * tests/unit/daemon/core/test_metrics.c - a sandbox's samples (daemon/core/metrics.c): the
 * history keeps the last METRICS_HISTORY, oldest first, and a time range selects from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/core/metrics.h"

/* A sandbox of 2 cpus, 512 MiB, 1 GiB of disk whose history has samples at 1..n seconds,
 * sample i using i bytes of memory. */
static struct sandbox *with_samples(unsigned n)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	sb->conf.cpus = 2;
	sb->conf.memory_mb = 512;
	sb->conf.disk_mb = 1024;
	sb->metrics = calloc(1, sizeof(*sb->metrics));
	for (unsigned i = 1; i <= n; i++) {
		struct metrics_sample s = { .at_ms = (int64_t)i * 1000, .cpu_pct = 50, .mem_used = i, .disk_used = 7 };
		metrics_add(sb->metrics, &s);
	}
	return sb;
}

static void drop(struct sandbox *sb)
{
	free(sb->metrics);
	free(sb);
}

static json_int_t mem_of(json_t *a, size_t i)
{
	return json_integer_value(json_object_get(json_array_get(a, i), "mem_used_bytes"));
}

static void test_history_keeps_the_last_samples(void **state)
{
	struct sandbox *sb = with_samples(METRICS_HISTORY); /* full: nothing dropped yet */
	json_t *a = metrics_json(sb, METRICS_ALL);
	assert_int_equal(json_array_size(a), METRICS_HISTORY);
	assert_int_equal(mem_of(a, 0), 1);
	json_decref(a);
	drop(sb);

	sb = with_samples(METRICS_HISTORY + 1); /* one more: the oldest goes */
	a = metrics_json(sb, METRICS_ALL);
	assert_int_equal(json_array_size(a), METRICS_HISTORY);
	assert_int_equal(mem_of(a, 0), 2);
	assert_int_equal(mem_of(a, METRICS_HISTORY - 1), METRICS_HISTORY + 1);
	json_decref(a);
	drop(sb);
}

static void test_sample_fields_and_totals(void **state)
{
	struct sandbox *sb = with_samples(1);
	json_t *a = metrics_json(sb, METRICS_ALL), *s = json_array_get(a, 0);
	assert_string_equal(json_string_value(json_object_get(s, "timestamp")), "1970-01-01T00:00:01Z");
	assert_int_equal(json_integer_value(json_object_get(s, "cpu_count")), 2);
	assert_int_equal(json_integer_value(json_object_get(s, "mem_total_bytes")), 512ll << 20);
	assert_int_equal(json_integer_value(json_object_get(s, "disk_total_bytes")), 1024ll << 20);
	assert_int_equal(json_integer_value(json_object_get(s, "disk_used_bytes")), 7);
	assert_true(json_real_value(json_object_get(s, "cpu_used_pct")) == 50.0);
	json_decref(a);
	drop(sb);
}

static void test_time_range_is_inclusive(void **state)
{
	struct sandbox *sb = with_samples(10);
	json_t *a = metrics_json(sb, 3000, 5000);
	assert_int_equal(json_array_size(a), 3);
	assert_int_equal(mem_of(a, 0), 3);
	assert_int_equal(mem_of(a, 2), 5);
	json_decref(a);
	a = metrics_json(sb, 11000, INT64_MAX); /* after the newest */
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	a = metrics_json(sb, 0, 999); /* the epoch's first second: before the oldest */
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	drop(sb);
	sb = calloc(1, sizeof(*sb)); /* none taken yet */
	a = metrics_json(sb, METRICS_ALL);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	free(sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history_keeps_the_last_samples),
		cmocka_unit_test(test_sample_fields_and_totals),
		cmocka_unit_test(test_time_range_is_inclusive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/daemon/core/test_proc.c - output kept for a process's next reader
 * (proc_keep, daemon/core/proc.c): under "block" all of it, within two windows per process
 * and SANDBOX_MAX_PENDING per sandbox; under "drop" the most recent PROC_DROP_KEEP bytes, the
 * rest counted as dropped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>

#include "daemon/core/proc.h"

static uint8_t chunk[SP_MAX_PAYLOAD];

/* The output bytes p keeps, in order, into dst; how many. */
static size_t kept(const struct proc *p, uint8_t *dst, size_t max)
{
	size_t n = 0;
	for (size_t off = 0; off + 5 <= buf_avail(&p->pending);) {
		const uint8_t *h = buf_head(&p->pending) + off;
		uint32_t len = frame_get_u32(h + 1);
		if (h[0] != SP_A_OOM && n + len <= max) {
			memcpy(dst + n, h + 5, len);
			n += len;
		}
		off += 5 + len;
	}
	return n;
}

static void fill(uint32_t from, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		chunk[i] = (uint8_t)((from + i) * 7);
}

static void test_block_keeps_everything_up_to_two_windows(void **state)
{
	struct sandbox sb = { 0 };
	struct proc p = { 0 };
	uint32_t sent = 0;
	while (sent + SP_MAX_PAYLOAD <= 2 * SP_WINDOW) {
		assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, SP_MAX_PAYLOAD), 0);
		sent += SP_MAX_PAYLOAD;
	}
	assert_int_equal(p.pending_raw, 2 * SP_WINDOW);
	assert_int_equal(p.pending_out, 2 * SP_WINDOW);
	assert_int_equal(sb.pending_bytes, 2 * SP_WINDOW);
	/* one byte past the edge: more than the agent's credit allows */
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, 1), -EPROTO);
	assert_int_equal(p.dropped, 0);
	buf_free(&p.pending);
}

static void test_block_stops_at_the_sandbox_budget(void **state)
{
	struct sandbox sb = { .pending_bytes = SANDBOX_MAX_PENDING - 10 };
	struct proc p = { 0 };
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDERR, chunk, 10), 0);
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDERR, chunk, 1), -EPROTO);
	buf_free(&p.pending);
}

static void test_drop_keeps_the_most_recent_bytes(void **state)
{
	static uint8_t got[PROC_DROP_KEEP], want[PROC_DROP_KEEP];
	struct sandbox sb = { 0 };
	struct proc p = { .drop = true };
	const uint32_t step = 1000, total = 300 * step;
	for (uint32_t at = 0; at < total; at += step) {
		fill(at, step);
		assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, step), 0);
		assert_true(p.pending_raw <= PROC_DROP_KEEP);
	}
	size_t n = kept(&p, got, sizeof(got));
	assert_int_equal(n, PROC_DROP_KEEP / step * step); /* whole chunks, as many as fit */
	assert_int_equal(p.dropped + n, total);
	assert_int_equal(sb.pending_bytes, n);
	for (size_t i = 0; i < n; i++)
		want[i] = (uint8_t)((total - n + i) * 7);
	assert_memory_equal(got, want, n);
	buf_free(&p.pending);
}

static void test_drop_keeps_the_end_of_a_chunk_larger_than_its_room(void **state)
{
	static uint8_t big[PROC_DROP_KEEP + 1], got[PROC_DROP_KEEP];
	struct sandbox sb = { 0 };
	struct proc p = { .drop = true };
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, big, sizeof(big)), 0);
	assert_int_equal(p.dropped, 1);
	assert_int_equal(kept(&p, got, sizeof(got)), PROC_DROP_KEEP);
	assert_memory_equal(got, big + 1, PROC_DROP_KEEP);
	buf_free(&p.pending);
}

static void test_drop_within_the_sandbox_budget(void **state)
{
	struct sandbox sb = { .pending_bytes = SANDBOX_MAX_PENDING - 100 };
	struct proc p = { .drop = true };
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, 60), 0);
	/* no room left for 60 more: its own oldest goes, then this one fits */
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, 60), 0);
	assert_int_equal(p.pending_out, 60);
	assert_int_equal(p.dropped, 60);
	/* more than the sandbox has room for even with its own gone: not kept, counted */
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, 200), 0);
	assert_int_equal(p.pending_out, 0);
	assert_int_equal(p.dropped, 60 + 60 + 200);
	assert_int_equal(sb.pending_bytes, SANDBOX_MAX_PENDING - 100);
	buf_free(&p.pending);
}

static void test_a_memory_report_is_not_counted_as_output(void **state)
{
	struct sandbox sb = { 0 };
	struct proc p = { .drop = true };
	assert_int_equal(proc_keep(&sb, &p, SP_A_OOM, chunk, 40), 0);
	assert_int_equal(p.pending_out, 0);
	assert_int_equal(p.pending_raw, 40);
	fill(0, SP_MAX_PAYLOAD);
	assert_int_equal(proc_keep(&sb, &p, SP_A_STDOUT, chunk, SP_MAX_PAYLOAD), 0);
	assert_int_equal(p.dropped, 0); /* the report made room; it was not output */
	assert_int_equal(p.pending_out, SP_MAX_PAYLOAD);
	buf_free(&p.pending);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_keeps_everything_up_to_two_windows),
		cmocka_unit_test(test_block_stops_at_the_sandbox_budget),
		cmocka_unit_test(test_drop_keeps_the_most_recent_bytes),
		cmocka_unit_test(test_drop_keeps_the_end_of_a_chunk_larger_than_its_room),
		cmocka_unit_test(test_drop_within_the_sandbox_budget),
		cmocka_unit_test(test_a_memory_report_is_not_counted_as_output),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

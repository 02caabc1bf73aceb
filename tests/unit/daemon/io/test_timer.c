/*
 * tests/unit/daemon/io/test_timer.c - deadlines (daemon/io/timer.c): kept in
 * time order, fired once when due and not before, disarmed cleanly, re-armed
 * in place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "daemon/io/timer.h"

static int fired[8];
static int order[8], norder;

static struct timer ts[8];

static void record(struct timer *t)
{
	int i = (int)(t - ts);
	fired[i]++;
	order[norder++] = i;
}

static void reset(void)
{
	for (int i = 0; i < 8; i++) {
		ts[i] = (struct timer){ .fn = record };
		fired[i] = 0;
	}
	norder = 0;
}

static void test_order_and_due(void **state)
{
	struct timer *list = NULL;
	reset();
	timer_add(&list, &ts[0], 300);
	timer_add(&list, &ts[1], 100);
	timer_add(&list, &ts[2], 200);
	assert_int_equal(timer_next(&list, 0), 100);
	assert_int_equal(timer_next(&list, 150), 0); /* overdue: no waiting */
	timer_fire(&list, 99);
	assert_int_equal(norder, 0); /* nothing before its time */
	timer_fire(&list, 200);
	assert_int_equal(norder, 2);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 2);
	assert_false(ts[1].armed);
	timer_fire(&list, 1000);
	assert_int_equal(fired[0], 1);
	timer_fire(&list, 2000);
	assert_int_equal(fired[0], 1); /* once */
	assert_int_equal(timer_next(&list, 0), -1);
}

static void test_del_and_rearm(void **state)
{
	struct timer *list = NULL;
	reset();
	timer_add(&list, &ts[0], 100);
	timer_add(&list, &ts[1], 200);
	timer_del(&list, &ts[0]);
	timer_del(&list, &ts[0]); /* twice is harmless */
	assert_int_equal(timer_next(&list, 0), 200);
	timer_add(&list, &ts[1], 50); /* re-armed: moves, is not listed twice */
	assert_int_equal(timer_next(&list, 0), 50);
	timer_fire(&list, 10000);
	assert_int_equal(fired[0], 0);
	assert_int_equal(fired[1], 1);
	assert_null(list);
}

static void test_equal_times_keep_arrival_order(void **state)
{
	struct timer *list = NULL;
	reset();
	for (int i = 0; i < 5; i++)
		timer_add(&list, &ts[i], 100);
	timer_fire(&list, 100);
	for (int i = 0; i < 5; i++)
		assert_int_equal(order[i], i);
}

static void test_far_deadline_is_capped(void **state)
{
	struct timer *list = NULL;
	reset();
	timer_add(&list, &ts[0], INT64_MAX / 2);
	assert_int_equal(timer_next(&list, 0), INT32_MAX);
	timer_del(&list, &ts[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_due),
		cmocka_unit_test(test_del_and_rearm),
		cmocka_unit_test(test_equal_times_keep_arrival_order),
		cmocka_unit_test(test_far_deadline_is_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

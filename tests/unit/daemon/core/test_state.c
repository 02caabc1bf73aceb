/*
 * tests/unit/daemon/core/test_state.c - the sandbox state machine
 * (daemon/core/state.c): legal operations begin through their transitional
 * state, repeated ones succeed without work, illegal ones are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "daemon/core/state.h"

static void test_running(void **state)
{
	enum sb_state via = SB_NSTATES;
	assert_int_equal(state_begin(SB_RUNNING, ACT_PAUSE, &via), STATE_BEGIN);
	assert_int_equal(via, SB_PAUSING);
	assert_int_equal(state_begin(SB_RUNNING, ACT_SUSPEND, &via), STATE_BEGIN);
	assert_int_equal(via, SB_SUSPENDING);
	assert_int_equal(state_begin(SB_RUNNING, ACT_DELETE, &via), STATE_BEGIN);
	assert_int_equal(via, SB_DELETING);
	assert_int_equal(state_begin(SB_RUNNING, ACT_RESUME, &via), STATE_ALREADY);
}

static void test_idempotent(void **state)
{
	enum sb_state via;
	assert_int_equal(state_begin(SB_PAUSED, ACT_PAUSE, &via), STATE_ALREADY);
	assert_int_equal(state_begin(SB_SUSPENDED, ACT_SUSPEND, &via), STATE_ALREADY);
	assert_int_equal(state_begin(SB_DELETING, ACT_DELETE, &via), STATE_ALREADY);
}

static void test_illegal(void **state)
{
	enum sb_state via = SB_NSTATES;
	assert_int_equal(state_begin(SB_CREATING, ACT_DELETE, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin(SB_FAILED, ACT_RESUME, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin(SB_SUSPENDED, ACT_PAUSE, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin(SB_SUSPENDING, ACT_RESUME, &via), STATE_ILLEGAL);
	assert_int_equal(via, SB_NSTATES); /* untouched when refused */
	assert_int_equal(state_begin(SB_NSTATES, ACT_PAUSE, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin(SB_RUNNING, ACT_NACTIONS, &via), STATE_ILLEGAL);
}

static void test_done(void **state)
{
	assert_int_equal(state_done(SB_CREATING, 1), SB_RUNNING);
	assert_int_equal(state_done(SB_CREATING, 0), SB_DELETING);
	assert_int_equal(state_done(SB_PAUSING, 1), SB_PAUSED);
	assert_int_equal(state_done(SB_PAUSING, 0), SB_RUNNING);
	assert_int_equal(state_done(SB_SUSPENDING, 1), SB_SUSPENDED);
	assert_int_equal(state_done(SB_RESUMING, 1), SB_RUNNING);
	assert_int_equal(state_done(SB_DELETING, 0), SB_FAILED);
}

static void test_names_round_trip(void **state)
{
	for (int s = 0; s < SB_NSTATES; s++)
		assert_int_equal(sb_state_parse(sb_state_name((enum sb_state)s)), s);
	assert_int_equal(sb_state_parse("flying"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_running), cmocka_unit_test(test_idempotent), cmocka_unit_test(test_illegal),
		cmocka_unit_test(test_done),    cmocka_unit_test(test_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/daemon/core/test_state.c - the sandbox state machine
 * (daemon/core/state.c): every operation the lifecycle page (docs/lifecycle.md) allows
 * begins through its transitional state, asking for the state that already holds succeeds
 * without work, and every other pair of state and operation is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "daemon/core/state.h"

/* The graph of docs/lifecycle.md, written out again: what each operation does from each
 * state. A pair not listed is refused. */
static const struct {
	enum sb_state from;
	enum sb_action act;
	enum state_verdict verdict;
	enum sb_state via;
} graph[] = {
	{ SB_RUNNING, ACT_PAUSE, STATE_BEGIN, SB_PAUSING },
	{ SB_PAUSING, ACT_PAUSE, STATE_ALREADY, 0 },
	{ SB_PAUSED, ACT_PAUSE, STATE_ALREADY, 0 },

	{ SB_PAUSED, ACT_RESUME, STATE_BEGIN, SB_RESUMING },
	{ SB_SUSPENDED, ACT_RESUME, STATE_BEGIN, SB_RESUMING },
	{ SB_RESUMING, ACT_RESUME, STATE_ALREADY, 0 },
	{ SB_RUNNING, ACT_RESUME, STATE_ALREADY, 0 },

	{ SB_RUNNING, ACT_SUSPEND, STATE_BEGIN, SB_SUSPENDING },
	{ SB_PAUSED, ACT_SUSPEND, STATE_BEGIN, SB_SUSPENDING },
	{ SB_SUSPENDING, ACT_SUSPEND, STATE_ALREADY, 0 },
	{ SB_SUSPENDED, ACT_SUSPEND, STATE_ALREADY, 0 },

	{ SB_RUNNING, ACT_DELETE, STATE_BEGIN, SB_DELETING },
	{ SB_PAUSED, ACT_DELETE, STATE_BEGIN, SB_DELETING },
	{ SB_SUSPENDED, ACT_DELETE, STATE_BEGIN, SB_DELETING },
	{ SB_FAILED, ACT_DELETE, STATE_BEGIN, SB_DELETING },
	{ SB_DELETING, ACT_DELETE, STATE_ALREADY, 0 },
};

static const char *const actions[ACT_NACTIONS] = { "pause", "resume", "suspend", "delete" };

static void test_every_pair_as_the_graph_says(void **state)
{
	unsigned allowed = 0;
	for (int s = 0; s < SB_NSTATES; s++) {
		for (int a = 0; a < ACT_NACTIONS; a++) {
			enum state_verdict want = STATE_ILLEGAL;
			enum sb_state want_via = SB_NSTATES;
			for (size_t i = 0; i < sizeof(graph) / sizeof(graph[0]); i++)
				if (graph[i].from == (enum sb_state)s && graph[i].act == (enum sb_action)a) {
					want = graph[i].verdict;
					if (want == STATE_BEGIN)
						want_via = graph[i].via;
				}
			enum sb_state via = SB_NSTATES;
			enum state_verdict got = state_begin((enum sb_state)s, (enum sb_action)a, &via);
			/* only a beginning names its transitional state; a refusal leaves via untouched */
			if (got != want || via != want_via)
				fail_msg("%s, action %s: verdict %d via %s, not %d via %s", sb_state_name((enum sb_state)s),
					 actions[a], got, sb_state_name(via), want, sb_state_name(want_via));
			allowed += want != STATE_ILLEGAL;
		}
	}
	assert_int_equal(allowed, sizeof(graph) / sizeof(graph[0]));
}

static void test_what_users_ask_most(void **state)
{
	enum sb_state via = SB_NSTATES;
	/* pause of a suspended sandbox: refused (it would have to be resumed first) */
	assert_int_equal(state_begin(SB_SUSPENDED, ACT_PAUSE, &via), STATE_ILLEGAL);
	/* resume of a running one: nothing to do, and that is no error */
	assert_int_equal(state_begin(SB_RUNNING, ACT_RESUME, &via), STATE_ALREADY);
	/* nothing but a delete for a failed one */
	assert_int_equal(state_begin(SB_FAILED, ACT_RESUME, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin(SB_FAILED, ACT_DELETE, &via), STATE_BEGIN);
	assert_int_equal(via, SB_DELETING);
	/* a sandbox being made cannot be deleted before its create answers */
	assert_int_equal(state_begin(SB_CREATING, ACT_DELETE, &via), STATE_ILLEGAL);
}

static void test_out_of_range(void **state)
{
	enum sb_state via = SB_NSTATES;
	assert_int_equal(state_begin(SB_NSTATES, ACT_PAUSE, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin((enum sb_state)-1, ACT_PAUSE, &via), STATE_ILLEGAL);
	assert_int_equal(state_begin(SB_RUNNING, ACT_NACTIONS, &via), STATE_ILLEGAL);
	assert_int_equal(via, SB_NSTATES);
	assert_string_equal(sb_state_name(SB_NSTATES), "unknown");
}

static void test_names_round_trip(void **state)
{
	for (int s = 0; s < SB_NSTATES; s++)
		assert_int_equal(sb_state_parse(sb_state_name((enum sb_state)s)), s);
	assert_int_equal(sb_state_parse("flying"), -1);
	assert_int_equal(sb_state_parse(""), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pair_as_the_graph_says),
		cmocka_unit_test(test_what_users_ask_most),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/daemon/core/test_starts.c - the turns to boot (core/starts.c): at most `slots`
 * at once, a turn over the limit waits until one ends and is counted as having waited, turns
 * begin in the order asked, the default follows the CPUs online.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/starts.h"

static uint64_t field(struct starts *s, const uint64_t *f)
{
	pthread_mutex_lock(&s->lock);
	uint64_t v = *f;
	pthread_mutex_unlock(&s->lock);
	return v;
}

/* Until `asked` turns have been asked for (each thread's ticket taken). */
static void until_asked(struct starts *s, uint64_t asked)
{
	while (field(s, &s->asked) < asked)
		sched_yield();
}

struct turn {
	struct starts *s;
	int *order; /* where each thread writes its number once it began */
	int *next;
	int me;
};

static void *take(void *arg)
{
	struct turn *t = arg;
	starts_enter(t->s);
	pthread_mutex_lock(&t->s->lock);
	t->order[(*t->next)++] = t->me;
	pthread_mutex_unlock(&t->s->lock);
	return NULL;
}

static void test_a_turn_over_the_limit_waits_for_one_to_end(void **state)
{
	(void)state;
	struct starts s;
	starts_init(&s, 2);
	starts_enter(&s);
	starts_enter(&s); /* both slots taken */
	assert_int_equal(s.waited, 0);

	int order[3] = { -1, -1, -1 }, next = 0;
	struct turn turns[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		turns[i] = (struct turn){ &s, order, &next, i };
		assert_int_equal(pthread_create(&th[i], NULL, take, &turns[i]), 0);
		until_asked(&s, 3 + (uint64_t)i); /* thread i holds ticket 2 + i */
	}
	/* none of them began: both slots are held */
	assert_int_equal(field(&s, &s.entered), 2);
	assert_int_equal(field(&s, &s.waited), 3);

	starts_leave(&s); /* one slot: the first in line, and only it */
	pthread_join(th[0], NULL);
	assert_int_equal(order[0], 0);
	assert_int_equal(field(&s, &s.entered), 3);

	starts_leave(&s);
	starts_leave(&s); /* two more: the other two, in order of asking */
	pthread_join(th[1], NULL);
	pthread_join(th[2], NULL);
	assert_int_equal(field(&s, &s.entered), 5);
	assert_int_equal(order[1] + order[2], 3);

	starts_leave(&s);
	starts_leave(&s);
	assert_int_equal(s.done, 5);
	starts_destroy(&s);
}

static void test_turns_under_the_limit_never_wait(void **state)
{
	(void)state;
	struct starts s;
	starts_init(&s, 1);
	for (int i = 0; i < 100; i++) {
		starts_enter(&s);
		starts_leave(&s);
	}
	assert_int_equal(s.waited, 0);
	starts_destroy(&s);
}

static void test_the_default_is_the_cpus_online(void **state)
{
	(void)state;
	struct starts s;
	starts_init(&s, 0);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	assert_int_equal(s.slots, cpus < STARTS_MIN_DEFAULT ? STARTS_MIN_DEFAULT : cpus > STARTS_MAX ? STARTS_MAX : cpus);
	starts_destroy(&s);
}

static void test_the_metrics_say_who_boots_and_who_waits(void **state)
{
	(void)state;
	struct starts s;
	starts_init(&s, 1);
	starts_enter(&s);
	int order[1] = { -1 }, next = 0;
	struct turn t = { &s, order, &next, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, take, &t), 0);
	until_asked(&s, 2);
	struct buf b = { 0 };
	assert_int_equal(starts_write(&s, &b), 0);
	buf_put(&b, "", 1);
	const char *text = (const char *)buf_head(&b);
	assert_non_null(strstr(text, "space_sandbox_starts{phase=\"booting\"} 1\n"));
	assert_non_null(strstr(text, "space_sandbox_starts{phase=\"waiting\"} 1\n"));
	assert_non_null(strstr(text, "space_sandbox_starts_max 1\n"));
	assert_non_null(strstr(text, "space_sandbox_start_waits_total 1\n"));
	buf_free(&b);
	starts_leave(&s);
	pthread_join(th, NULL);
	starts_leave(&s);
	starts_destroy(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_turn_over_the_limit_waits_for_one_to_end),
		cmocka_unit_test(test_turns_under_the_limit_never_wait),
		cmocka_unit_test(test_the_default_is_the_cpus_online),
		cmocka_unit_test(test_the_metrics_say_who_boots_and_who_waits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

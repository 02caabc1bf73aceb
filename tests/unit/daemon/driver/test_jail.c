/*
 * tests/unit/daemon/driver/test_jail.c - the users jailed programs run as
 * (daemon/driver/jail.c): two sandboxes whose ids hash to the same user never
 * share it while one of them runs, whether its process is already running or
 * its start is still under way.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon/driver/jail.h"

/* Two different ids of the same user, found by trying ids until two meet. */
static void colliding_ids(char a[32], char b[32])
{
	enum { TRIES = 20000 };
	static uid_t seen[TRIES];
	for (int i = 0; i < TRIES; i++) {
		char id[32];
		snprintf(id, sizeof(id), "sb%08x", (unsigned)i * 2654435761u);
		seen[i] = jail_uid_for(id);
		for (int k = 0; k < i; k++)
			if (seen[k] == seen[i]) {
				snprintf(a, 32, "sb%08x", (unsigned)k * 2654435761u);
				snprintf(b, 32, "%s", id);
				return;
			}
	}
	fail_msg("no two of %d ids share a user", TRIES);
}

static void a_free_user_is_the_ids_own(void **state)
{
	(void)state;
	uid_t u = jail_uid_for("sandbox-a");
	assert_true(u >= JAIL_UID_BASE && u < JAIL_UID_BASE + JAIL_UID_SPAN);
	assert_int_equal(jail_uid_pick("sandbox-a", NULL, 0), u);
}

static void a_user_a_start_holds_is_not_picked_again(void **state)
{
	(void)state;
	char a[32], b[32];
	colliding_ids(a, b);
	assert_string_not_equal(a, b);
	uid_t held = jail_uid_pick(a, NULL, 0);
	uid_t other = jail_uid_pick(b, &held, 1);
	assert_true(other != 0 && other != held);
}

static void a_user_a_process_runs_as_is_not_picked(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char a[32], b[32];
	colliding_ids(a, b);
	uid_t taken = jail_uid_pick(a, NULL, 0);
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(ready[0]);
		if (syscall(SYS_setresuid, taken, taken, taken) < 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1); /* it runs as that user now */
	close(ready[0]);
	uid_t other = jail_uid_pick(b, NULL, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(other != 0 && other != taken);
	/* and with the process gone, the user is free again */
	assert_int_equal(jail_uid_pick(b, NULL, 0), taken);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_free_user_is_the_ids_own),
		cmocka_unit_test(a_user_a_start_holds_is_not_picked_again),
		cmocka_unit_test(a_user_a_process_runs_as_is_not_picked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

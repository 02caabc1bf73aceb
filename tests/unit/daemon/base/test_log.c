/*
 * tests/unit/daemon/base/test_log.c - log_msg's lines on the journal's stream: each level's
 * sd-daemon priority first, and no time (the journal adds its own). The other case, stderr
 * elsewhere than JOURNAL_STREAM names, is tests/e2e/test_systemd.py's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/log.h"

static void priorities_on_the_journal_stream(void **state)
{
	char path[] = "/tmp/space-test-log-XXXXXX", env[64], got[512] = "";
	int fd = mkostemp(path, O_CLOEXEC);
	assert_true(fd >= 0);
	unlink(path);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	assert_int_equal(setenv("JOURNAL_STREAM", env, 1), 0);
	int saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);

	log_error("e %d", 3);
	log_warn("w");
	log_info("i");

	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	ssize_t n = pread(fd, got, sizeof(got) - 1, 0);
	close(fd);
	assert_true(n > 0);
	assert_string_equal(got, "<3>error e 3\n<4>warn w\n<6>info i\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(priorities_on_the_journal_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

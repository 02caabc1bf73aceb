/*
 * tests/unit/lib/host/test_dir.c - dir_make and dir_usage.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/host/dir.h"

static char root[] = "/tmp/space-test-dir-XXXXXX";

static void put(const char *rel, size_t bytes)
{
	char p[200];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	char block[4096];
	memset(block, 'x', sizeof(block));
	for (size_t left = bytes; left > 0;) {
		size_t n = left < sizeof(block) ? left : sizeof(block);
		assert_int_equal(write(fd, block, n), (ssize_t)n);
		left -= n;
	}
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

static long long blocks(const char *rel)
{
	char p[200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(lstat(p, &st), 0);
	return (long long)st.st_blocks * 512;
}

/* Every file counts its blocks once, whatever names it has; a folder its own. */
static void test_usage_counts_each_file_once(void **state)
{
	(void)state;
	char a[200], b[200], c[200];
	snprintf(a, sizeof(a), "%s/sub/deeper", root);
	assert_int_equal(dir_make(a, 0755), 0);
	put("one", 100000);
	put("sub/two", 300000);
	snprintf(a, sizeof(a), "%s/one", root);
	snprintf(b, sizeof(b), "%s/sub/one-again", root);
	snprintf(c, sizeof(c), "%s/sub/deeper/one-thrice", root);
	assert_int_equal(link(a, b), 0);
	assert_int_equal(link(a, c), 0);
	long long want = blocks(".") + blocks("sub") + blocks("sub/deeper") + blocks("one") + blocks("sub/two");
	assert_int_equal(dir_usage(root), want);
	assert_true(want >= 400000);
}

static void test_usage_of_nothing_is_an_error(void **state)
{
	(void)state;
	char p[200];
	snprintf(p, sizeof(p), "%s/missing", root);
	assert_int_equal(dir_usage(p), -ENOENT);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[100];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usage_counts_each_file_once),
		cmocka_unit_test(test_usage_of_nothing_is_an_error),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

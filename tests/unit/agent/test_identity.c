/*
 * tests/unit/agent/test_identity.c - the sandbox's name in /etc/hostname and
 * /etc/hosts (agent/identity.c): localhost resolves for IPv4 and IPv6, the
 * sandbox's own name resolves, what a template or a user wrote to /etc/hosts
 * stays, and a rename (a fork) replaces only the agent's own line. The files
 * live in a temporary directory under /tmp standing for /etc.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/identity.h"

static char etc[64];

static void path_of(char *out, size_t n, const char *base)
{
	snprintf(out, n, "%s/%s", etc, base);
}

static int setup(void **state)
{
	snprintf(etc, sizeof(etc), "/tmp/space-test-identity-XXXXXX");
	return mkdtemp(etc) ? 0 : -1;
}

static int teardown(void **state)
{
	char p[128];
	path_of(p, sizeof(p), "hosts");
	unlink(p);
	path_of(p, sizeof(p), "hostname");
	unlink(p);
	return rmdir(etc);
}

static void put(const char *base, const char *text)
{
	char p[128];
	path_of(p, sizeof(p), base);
	FILE *f = fopen(p, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The file's text; the caller frees it. */
static char *get(const char *base)
{
	char p[128];
	path_of(p, sizeof(p), base);
	FILE *f = fopen(p, "re");
	assert_non_null(f);
	char *buf = calloc(1, 1 << 17);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 17) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* How many lines of text are exactly line. */
static int count_lines(const char *text, const char *line)
{
	int n = 0;
	size_t len = strlen(line);
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		n += l == len && strncmp(p, line, len) == 0;
		p += l + (end ? 1 : 0);
	}
	return n;
}

static void test_no_files_gets_localhost_and_its_name(void **state)
{
	assert_int_equal(identity_files(etc, "a1b2c3d4e5f6"), 0);
	char *name = get("hostname"), *hosts = get("hosts");
	assert_string_equal(name, "a1b2c3d4e5f6\n");
	assert_int_equal(count_lines(hosts, "127.0.0.1\tlocalhost"), 1);
	assert_int_equal(count_lines(hosts, "::1\t\tlocalhost ip6-localhost ip6-loopback"), 1);
	assert_non_null(strstr(hosts, "127.0.1.1\ta1b2c3d4e5f6\t#"));
	free(name);
	free(hosts);
}

static void test_a_templates_lines_stay_and_localhost_is_not_doubled(void **state)
{
	put("hosts", "127.0.0.1 localhost.localdomain localhost\n::1 localhost\n10.0.0.7 db.internal # the db\n");
	assert_int_equal(identity_files(etc, "box"), 0);
	char *hosts = get("hosts");
	assert_int_equal(count_lines(hosts, "127.0.0.1 localhost.localdomain localhost"), 1);
	assert_int_equal(count_lines(hosts, "::1 localhost"), 1);
	assert_int_equal(count_lines(hosts, "10.0.0.7 db.internal # the db"), 1);
	assert_null(strstr(hosts, "127.0.0.1\tlocalhost"));
	assert_null(strstr(hosts, "ip6-loopback"));
	assert_non_null(strstr(hosts, "127.0.1.1\tbox\t#"));
	free(hosts);
}

static void test_a_commented_localhost_does_not_count(void **state)
{
	put("hosts", "# 127.0.0.1 localhost\n127.0.0.2 notlocalhost\n");
	assert_int_equal(identity_files(etc, "box"), 0);
	char *hosts = get("hosts");
	assert_int_equal(count_lines(hosts, "127.0.0.1\tlocalhost"), 1);
	assert_int_equal(count_lines(hosts, "# 127.0.0.1 localhost"), 1);
	free(hosts);
}

static void test_a_rename_replaces_only_its_own_line(void **state)
{
	assert_int_equal(identity_files(etc, "source1"), 0);
	char *first = get("hosts");
	size_t len = strlen(first);
	char *edited = malloc(len + 64);
	snprintf(edited, len + 64, "%s192.0.2.5 api.test\n", first);
	put("hosts", edited);
	assert_int_equal(identity_files(etc, "fork2"), 0);
	char *hosts = get("hosts"), *name = get("hostname");
	assert_null(strstr(hosts, "source1"));
	assert_non_null(strstr(hosts, "127.0.1.1\tfork2\t#"));
	assert_int_equal(count_lines(hosts, "192.0.2.5 api.test"), 1);
	assert_int_equal(count_lines(hosts, "127.0.0.1\tlocalhost"), 1);
	assert_string_equal(name, "fork2\n");
	/* the same name again changes nothing */
	assert_int_equal(identity_files(etc, "fork2"), 0);
	char *again = get("hosts");
	assert_string_equal(again, hosts);
	free(first);
	free(edited);
	free(hosts);
	free(name);
	free(again);
}

static void test_bad_names_are_refused_and_nothing_is_written(void **state)
{
	const char *bad[] = { "", "-lead", "trail-", "UPPER", "dot.ted", "sp ace", "new\nline",
			      "a234567890123456789012345678901234567890123456789012345678901234" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(identity_files(etc, bad[i]), -EINVAL);
	char p[128];
	path_of(p, sizeof(p), "hosts");
	assert_int_equal(access(p, F_OK), -1);
	/* 63 characters is the longest label */
	assert_int_equal(identity_files(etc, "a23456789012345678901234567890123456789012345678901234567890123"), 0);
}

static void test_an_oversized_hosts_file_is_left_alone(void **state)
{
	char *big = malloc(IDENTITY_HOSTS_MAX + 2);
	memset(big, '#', IDENTITY_HOSTS_MAX + 1);
	big[IDENTITY_HOSTS_MAX + 1] = '\0';
	put("hosts", big);
	assert_int_equal(identity_files(etc, "box"), 0);
	char *hosts = get("hosts");
	assert_string_equal(hosts, big);
	free(hosts);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_files_gets_localhost_and_its_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_templates_lines_stay_and_localhost_is_not_doubled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_commented_localhost_does_not_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_rename_replaces_only_its_own_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names_are_refused_and_nothing_is_written, setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_oversized_hosts_file_is_left_alone, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

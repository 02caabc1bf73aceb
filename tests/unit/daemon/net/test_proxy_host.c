/*
 * tests/unit/daemon/net/test_proxy_host.c - the port proxy's routing (daemon/net/proxy_host.c):
 * which Host headers name a sandbox's port, and every near miss refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/net/proxy.h"

static int parse(const char *host, const char *domain, char *id, int *port)
{
	return proxy_parse_host(host, strlen(host), domain, id, port);
}

static void hosts_that_name_a_port(void **state)
{
	(void)state;
	char id[SANDBOX_ID_LEN + 1];
	int port;
	assert_int_equal(parse("8000-0123456789ab.localhost:18080", "localhost", id, &port), 0);
	assert_string_equal(id, "0123456789ab");
	assert_int_equal(port, 8000);
	assert_int_equal(parse("1-ABCDEF012345.LocalHost", "localhost", id, &port), 0); /* any case */
	assert_string_equal(id, "abcdef012345");
	assert_int_equal(port, 1);
	assert_int_equal(parse(" 65535-0123456789ab.sb.example.com. ", "sb.example.com", id, &port), 0);
	assert_int_equal(port, 65535);
}

static void near_misses_are_refused(void **state)
{
	(void)state;
	char id[SANDBOX_ID_LEN + 1];
	int port;
	static const char *const bad[] = {
		"", "localhost", "8000-0123456789ab", "8000-0123456789ab.localhost:80x", "0-0123456789ab.localhost",
		"65536-0123456789ab.localhost", "08000-0123456789ab.localhost", "123456-0123456789ab.localhost",
		"-0123456789ab.localhost", "8000-0123456789a.localhost", "8000-0123456789abc.localhost",
		"8000-0123456789ag.localhost", "8000_0123456789ab.localhost", "8000-0123456789ab.evil.com",
		"8000-0123456789ab.xlocalhost", "a8000-0123456789ab.localhost", "8000-0123456789ab..localhost",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(bad[i], "localhost", id, &port), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hosts_that_name_a_port),
		cmocka_unit_test(near_misses_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

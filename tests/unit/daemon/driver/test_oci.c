/*
 * tests/unit/daemon/driver/test_oci.c - the OCI spec runsc runs
 * (daemon/driver/oci.c): the agent is PID 1, the limits asked for are the
 * limits given, the sandbox sees no host network, and the environment
 * reaches the agent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "daemon/driver/oci.h"

static json_t *spec(int cpus, int mem)
{
	json_t *env = json_pack("{s:s}", "A", "1");
	struct oci_params p = { .id = "abc123", .rootfs = "/s/rootfs", .agent = "/usr/lib/space/space-agent",
				.sock_dir = "/s/sock", .env = env, .cpus = cpus, .memory_mb = mem, .pids = 1024 };
	json_t *j = oci_spec(&p);
	json_decref(env);
	return j;
}

static void test_agent_is_pid1(void **state)
{
	json_t *j = spec(1, 512);
	assert_non_null(j);
	json_t *args = json_object_get(json_object_get(j, "process"), "args");
	assert_int_equal(json_array_size(args), 1);
	assert_string_equal(json_string_value(json_array_get(args, 0)), OCI_AGENT_PATH);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "root"), "path")), "/s/rootfs");
	json_decref(j);
}

static void test_limits(void **state)
{
	json_t *j = spec(2, 256);
	json_t *r = json_object_get(json_object_get(j, "linux"), "resources");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "memory"), "limit")), 256ll << 20);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "cpu"), "quota")), 200000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "cpu"), "period")), 100000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "pids"), "limit")), 1024);
	json_decref(j);
}

static void test_isolation(void **state)
{
	json_t *j = spec(1, 512);
	json_t *ns = json_object_get(json_object_get(j, "linux"), "namespaces");
	const char *want[] = { "pid", "network", "ipc", "uts", "mount" };
	for (size_t w = 0; w < 5; w++) {
		int found = 0;
		size_t i;
		json_t *x;
		json_array_foreach(ns, i, x) found |= strcmp(json_string_value(json_object_get(x, "type")), want[w]) == 0;
		assert_true(found);
	}
	/* no raw sockets, no device nodes */
	json_t *caps = json_object_get(json_object_get(json_object_get(j, "process"), "capabilities"), "bounding");
	size_t i;
	json_t *c;
	json_array_foreach(caps, i, c) {
		assert_string_not_equal(json_string_value(c), "CAP_NET_RAW");
		assert_string_not_equal(json_string_value(c), "CAP_MKNOD");
		assert_string_not_equal(json_string_value(c), "CAP_SYS_ADMIN");
	}
	json_decref(j);
}

static void test_env_and_mounts(void **state)
{
	json_t *j = spec(1, 512);
	json_t *env = json_object_get(json_object_get(j, "process"), "env");
	int id = 0, a = 0;
	size_t i;
	json_t *x;
	json_array_foreach(env, i, x) {
		id |= strcmp(json_string_value(x), "SPACE_SANDBOX_ID=abc123") == 0;
		a |= strcmp(json_string_value(x), "A=1") == 0;
	}
	assert_true(id && a);
	int agent = 0, sock = 0;
	json_array_foreach(json_object_get(j, "mounts"), i, x) {
		const char *dst = json_string_value(json_object_get(x, "destination"));
		const char *src = json_string_value(json_object_get(x, "source"));
		agent |= strcmp(dst, OCI_AGENT_PATH) == 0 && strcmp(src, "/usr/lib/space/space-agent") == 0;
		sock |= strcmp(dst, OCI_SOCK_DIR) == 0 && strcmp(src, "/s/sock") == 0;
	}
	assert_true(agent && sock);
	json_decref(j);
}

/* A volume's host folder is bound in at its path, read-only only when asked, after spaced's own. */
static void test_volume_binds(void **state)
{
	struct oci_bind binds[] = { { "/s/volumes/a/mnt", "/data", false }, { "/s/volumes/b/mnt", "/ro", true } };
	struct oci_params p = { .id = "abc123", .rootfs = "/s/rootfs", .agent = "/a", .sock_dir = "/s/sock",
				.cpus = 1, .memory_mb = 512, .pids = 1024, .binds = binds, .nbinds = 2 };
	json_t *j = oci_spec(&p), *mounts = json_object_get(j, "mounts");
	size_t n = json_array_size(mounts);
	assert_true(n >= 2);
	for (size_t k = 0; k < 2; k++) {
		json_t *m = json_array_get(mounts, n - 2 + k);
		assert_string_equal(json_string_value(json_object_get(m, "destination")), binds[k].destination);
		assert_string_equal(json_string_value(json_object_get(m, "source")), binds[k].source);
		assert_string_equal(json_string_value(json_object_get(m, "type")), "bind");
		json_t *opts = json_object_get(m, "options");
		assert_string_equal(json_string_value(json_array_get(opts, 1)), binds[k].read_only ? "ro" : "rw");
	}
	json_decref(j);
}

static void test_rejects_bad_params(void **state)
{
	assert_null(spec(0, 512));
	assert_null(spec(1, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_is_pid1), cmocka_unit_test(test_limits),
		cmocka_unit_test(test_isolation),     cmocka_unit_test(test_env_and_mounts),
		cmocka_unit_test(test_rejects_bad_params), cmocka_unit_test(test_volume_binds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

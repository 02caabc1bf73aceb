/*
 * tests/unit/daemon/core/test_isolation.c - the isolation kinds (daemon/core/isolation.c):
 * every kind is known whether or not its driver is there; one whose driver is missing or
 * fails its init is unavailable with the reason, and refused to creates with it; only an
 * unavailable default stops spaced; /v1/version's view says all of it. The drivers are
 * stand-ins handed over as the finder, as main() hands over driver_find.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "daemon/core/isolation.h"
#include "daemon/driver/driver.h"

static struct driver *const token = (struct driver *)&token; /* what a driver's init hands back */

static int init_ok(struct daemon *d, struct driver **out, struct err *e)
{
	*out = token;
	return 0;
}

static int init_fails(struct daemon *d, struct driver **out, struct err *e)
{
	return err_set(e, ERR_INTERNAL, ENODEV, "/dev/kvm does not open here");
}

static const char *runtime(struct driver *drv)
{
	return drv == token ? "stand-in 1.0" : "not initialised";
}

static const struct driver_ops gvisor_ok = { .name = "gvisor", .init = init_ok, .runtime = runtime };
static const struct driver_ops microvm_ok = { .name = "microvm", .init = init_ok, .runtime = runtime };
static const struct driver_ops microvm_fails = { .name = "microvm", .init = init_fails, .runtime = runtime };

static const struct driver_ops *only_gvisor(const char *name)
{
	return strcmp(name, "gvisor") == 0 ? &gvisor_ok : NULL;
}

static const struct driver_ops *both(const char *name)
{
	return strcmp(name, "gvisor") == 0 ? &gvisor_ok : strcmp(name, "microvm") == 0 ? &microvm_ok : NULL;
}

static const struct driver_ops *microvm_broken(const char *name)
{
	return strcmp(name, "gvisor") == 0 ? &gvisor_ok : strcmp(name, "microvm") == 0 ? &microvm_fails : NULL;
}

static void test_a_missing_driver_is_unavailable_and_refused_with_why(void **state)
{
	struct daemon d = { 0 };
	struct err e = { 0 };
	assert_int_equal(isolation_init(&d, "gvisor", only_gvisor, &e), 0);
	assert_string_equal(d.isolation->kind, "gvisor");
	assert_ptr_equal(isolation_pick(&d, NULL, &e), d.isolation); /* none named: the default */
	assert_ptr_equal(isolation_pick(&d, "gvisor", &e), d.isolation);
	assert_int_equal(e.kind, ERR_NONE);

	assert_non_null(isolation_find(&d, "microvm")); /* known, though it cannot run */
	assert_null(isolation_pick(&d, "microvm", &e));
	assert_int_equal(e.kind, ERR_ISOLATION_REFUSED);
	assert_string_equal(err_code(e.kind), "isolation_unavailable");
	assert_non_null(strstr(e.msg, "built without the microvm driver"));

	json_t *v = isolation_json(&d);
	assert_string_equal(json_string_value(json_object_get(v, "default")), "gvisor");
	json_t *avail = json_object_get(v, "available");
	assert_string_equal(json_string_value(json_object_get(avail, "gvisor")), "stand-in 1.0");
	assert_true(json_is_null(json_object_get(avail, "microvm")));
	json_t *why = json_object_get(v, "unavailable");
	assert_int_equal(json_object_size(why), 1);
	assert_non_null(strstr(json_string_value(json_object_get(why, "microvm")), "microvm driver"));
	json_decref(v);
}

static void test_an_unknown_kind_is_named_as_such(void **state)
{
	struct daemon d = { 0 };
	struct err e = { 0 };
	assert_int_equal(isolation_init(&d, "gvisor", both, &e), 0);
	assert_null(isolation_find(&d, "firecracker"));
	assert_null(isolation_find(&d, "GVISOR"));
	assert_null(isolation_pick(&d, "firecracker", &e));
	assert_int_equal(e.kind, ERR_INVALID);
	assert_non_null(strstr(e.msg, "\"gvisor\", \"microvm\""));

	struct daemon d2 = { 0 };
	struct err e2 = { 0 };
	assert_int_equal(isolation_init(&d2, "firecracker", both, &e2), -EINVAL);
	assert_non_null(strstr(e2.msg, "unknown isolation firecracker"));
}

static void test_both_kinds_run_side_by_side(void **state)
{
	struct daemon d = { 0 };
	struct err e = { 0 };
	assert_int_equal(isolation_init(&d, "microvm", both, &e), 0);
	assert_string_equal(d.isolation->kind, "microvm");
	const struct driver_slot *g = isolation_pick(&d, "gvisor", &e), *m = isolation_pick(&d, NULL, &e);
	assert_non_null(g);
	assert_non_null(m);
	assert_true(g != m);
	assert_ptr_equal(g->ops, &gvisor_ok);
	assert_ptr_equal(m->ops, &microvm_ok);
	assert_ptr_equal(m->drv, token);
	json_t *v = isolation_json(&d);
	assert_int_equal(json_object_size(json_object_get(v, "unavailable")), 0);
	json_decref(v);
}

static void test_a_failing_init_is_fatal_only_for_the_default(void **state)
{
	struct daemon d = { 0 };
	struct err e = { 0 };
	assert_int_equal(isolation_init(&d, "gvisor", microvm_broken, &e), 0);
	assert_null(isolation_pick(&d, "microvm", &e));
	assert_string_equal(err_code(e.kind), "isolation_unavailable");
	assert_non_null(strstr(e.msg, "/dev/kvm does not open here")); /* the driver's own words */

	struct daemon d2 = { 0 };
	struct err e2 = { 0 };
	assert_true(isolation_init(&d2, "microvm", microvm_broken, &e2) < 0);
	assert_string_equal(err_code(e2.kind), "isolation_unavailable");
	assert_non_null(strstr(e2.msg, "isolation microvm is unavailable: /dev/kvm does not open here"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_missing_driver_is_unavailable_and_refused_with_why),
		cmocka_unit_test(test_an_unknown_kind_is_named_as_such),
		cmocka_unit_test(test_both_kinds_run_side_by_side),
		cmocka_unit_test(test_a_failing_init_is_fatal_only_for_the_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/e2b/test_route.c - the E2B front's route tables (e2b/route.c): literal paths, a
 * "{name}" segment at its bounds (empty, max bytes, one more), "{name*}" rests, two parameters,
 * the longest path routed, the method, first match wins, and patterns a table should not hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "e2b/route.h"

static bool match(const char *pattern, size_t max, const char *path, struct route_args *a)
{
	memset(a, 0, sizeof(*a));
	return route_match(pattern, max, path, a);
}

static void test_literal_paths(void **state)
{
	struct route_args a;
	assert_true(match("/sandboxes", 0, "/sandboxes", &a));
	assert_null(a.param[0]);
	assert_false(match("/sandboxes", 0, "/sandboxes/", &a));
	assert_false(match("/sandboxes", 0, "/sandbox", &a));
	assert_false(match("/sandboxes", 0, "/sandboxesx", &a));
	assert_false(match("/sandboxes", 0, "", &a));
	assert_false(match("/health", 0, "/Health", &a));
}

static void test_a_segment_parameter(void **state)
{
	struct route_args a;
	assert_true(match("/sandboxes/{id}/pause", 0, "/sandboxes/abc123/pause", &a));
	assert_string_equal(a.param[0], "abc123");
	assert_null(a.param[1]);
	/* taken as it is: no decoding */
	assert_true(match("/sandboxes/{id}", 0, "/sandboxes/a%2Fb", &a));
	assert_string_equal(a.param[0], "a%2Fb");
	assert_false(match("/sandboxes/{id}/pause", 0, "/sandboxes//pause", &a));
	assert_false(match("/sandboxes/{id}", 0, "/sandboxes/", &a));
	assert_false(match("/sandboxes/{id}", 0, "/sandboxes/a/b", &a));
	assert_false(match("/sandboxes/{id}/pause", 0, "/sandboxes/abc/pause/", &a));
	assert_false(match("/sandboxes/{id}/pause", 0, "/sandboxes/abc/paused", &a));
}

static void test_a_parameter_at_its_bound(void **state)
{
	struct route_args a;
	char path[64], id[16];
	memset(id, 'x', 10);
	id[10] = '\0';
	snprintf(path, sizeof(path), "/templates/%s/tags", id);
	assert_true(match("/templates/{id}/tags", 10, path, &a));
	assert_string_equal(a.param[0], id);
	snprintf(path, sizeof(path), "/templates/%sx/tags", id);
	assert_false(match("/templates/{id}/tags", 10, path, &a));
	assert_true(match("/templates/{id}/tags", 0, path, &a)); /* 0: no bound */
}

static void test_the_rest(void **state)
{
	struct route_args a;
	assert_true(match("/process.Process/{method*}", 0, "/process.Process/Start", &a));
	assert_string_equal(a.param[0], "Start");
	assert_true(match("/process.Process/{method*}", 0, "/process.Process/", &a));
	assert_string_equal(a.param[0], "");
	assert_true(match("/process.Process/{method*}", 0, "/process.Process/a/b//c", &a));
	assert_string_equal(a.param[0], "a/b//c");
	assert_false(match("/process.Process/{method*}", 0, "/process.Process", &a));
	/* a rest is not bounded by max */
	assert_true(match("/sandboxes/{id}/{rest*}", 2, "/sandboxes/ab/longer/than/two", &a));
	assert_string_equal(a.param[0], "ab");
	assert_string_equal(a.param[1], "longer/than/two");
}

static void test_two_parameters(void **state)
{
	struct route_args a;
	assert_true(match("/templates/{tpl}/builds/{build}/status", 0, "/templates/t1/builds/b2/status", &a));
	assert_string_equal(a.param[0], "t1");
	assert_string_equal(a.param[1], "b2");
	assert_false(match("/templates/{tpl}/builds/{build}/status", 0, "/templates/t1/builds//status", &a));
}

static void test_the_longest_path(void **state)
{
	struct route_args a;
	char path[ROUTE_PATH_MAX + 1];
	size_t head = strlen("/a/");
	memcpy(path, "/a/", head);
	memset(path + head, 'p', ROUTE_PATH_MAX - 1 - head);
	path[ROUTE_PATH_MAX - 1] = '\0'; /* ROUTE_PATH_MAX bytes with its NUL: routed */
	assert_true(match("/a/{rest*}", 0, path, &a));
	assert_int_equal(strlen(a.param[0]), ROUTE_PATH_MAX - 1 - head);
	assert_true(match("/a/{x}", 0, path, &a));
	path[ROUTE_PATH_MAX - 1] = 'p'; /* one more: matches nothing */
	path[ROUTE_PATH_MAX] = '\0';
	assert_false(match("/a/{rest*}", 0, path, &a));
	assert_false(match("/a/{x}", 0, path, &a));
}

static void test_patterns_a_table_should_not_hold(void **state)
{
	struct route_args a;
	assert_false(match("/{a}/{b}/{c}", 0, "/x/y/z", &a)); /* more than ROUTE_PARAMS_MAX */
	assert_false(match("/{rest*}/x", 0, "/y/x", &a));     /* a rest that is not last */
	assert_false(match("/{open", 0, "/{open", &a));       /* no closing brace */
}

static enum MHD_Result handler_a(struct req *r, const struct route_args *a)
{
	return MHD_YES;
}

static enum MHD_Result handler_b(struct req *r, const struct route_args *a)
{
	return MHD_NO;
}

static void test_find(void **state)
{
	static const struct route table[] = {
		{ "GET", "/sandboxes/metrics", handler_a, 0 },
		{ "GET", "/sandboxes/{id}", handler_b, 4 },
		{ "DELETE", "/sandboxes/{id}", handler_a, 4 },
		{ NULL, "/sandboxes/{id}/{rest*}", handler_b, 4 },
	};
	const size_t n = sizeof(table) / sizeof(table[0]);
	struct route_args a = { 0 };
	/* first match wins */
	assert_ptr_equal(route_find(table, n, "GET", "/sandboxes/metrics", &a), &table[0]);
	assert_ptr_equal(route_find(table, n, "GET", "/sandboxes/abcd", &a), &table[1]);
	assert_string_equal(a.param[0], "abcd");
	assert_ptr_equal(route_find(table, n, "DELETE", "/sandboxes/abcd", &a), &table[2]);
	/* a method no route of the path names, and an id over its route's max: none */
	assert_null(route_find(table, n, "PUT", "/sandboxes/abcd", &a));
	assert_null(route_find(table, n, "GET", "/sandboxes/abcde", &a));
	assert_null(route_find(table, n, "get", "/sandboxes/abcd", &a));
	/* NULL: any method */
	assert_ptr_equal(route_find(table, n, "PATCH", "/sandboxes/abcd/x", &a), &table[3]);
	assert_string_equal(a.param[1], "x");
	assert_null(route_find(table, n, "GET", "/nothing", &a));
	assert_null(route_find(table, 0, "GET", "/sandboxes/metrics", &a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal_paths),
		cmocka_unit_test(test_a_segment_parameter),
		cmocka_unit_test(test_a_parameter_at_its_bound),
		cmocka_unit_test(test_the_rest),
		cmocka_unit_test(test_two_parameters),
		cmocka_unit_test(test_the_longest_path),
		cmocka_unit_test(test_patterns_a_table_should_not_hold),
		cmocka_unit_test(test_find),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

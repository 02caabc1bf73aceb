/*
 * tests/unit/daemon/api/test_api.c - routing and request validation
 * (daemon/api/api.c): every malformed request is refused with a 4xx and a
 * message naming the problem.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/api/api.h"

static struct op *op_with(const char *body)
{
	struct op *op = calloc(1, sizeof(*op));
	if (body)
		buf_put(&op->body, body, strlen(body));
	return op;
}

static const struct field fields[] = {
	{ "name", F_STRING }, { "n", F_INT }, { "x", F_NUMBER }, { "on", F_BOOL },
	{ "env", F_STRMAP },  { "cmd", F_ARGV_OR_STRING }, { "sig", F_INT_OR_STRING }, { NULL, 0 },
};

static void test_body_ok(void **state)
{
	struct op *op = op_with("{\"name\":\"a\",\"n\":3,\"x\":1.5,\"on\":true,\"env\":{\"K\":\"V\"},"
				"\"cmd\":[\"ls\",\"-l\"],\"sig\":\"TERM\"}");
	json_t *b = NULL;
	assert_int_equal(api_body(op, fields, &b), 0);
	assert_int_equal(op->err.status, 0);
	assert_int_equal(json_integer_value(json_object_get(b, "n")), 3);
	json_decref(b);
	op_free(op);
}

static void test_empty_body_is_empty_object(void **state)
{
	struct op *op = op_with(NULL);
	json_t *b = NULL;
	assert_int_equal(api_body(op, fields, &b), 0);
	assert_int_equal(json_object_size(b), 0);
	json_decref(b);
	op_free(op);
}

static void expect_400(const char *body, const char *words)
{
	struct op *op = op_with(body);
	json_t *b = NULL;
	assert_true(api_body(op, fields, &b) < 0);
	assert_null(b);
	assert_int_equal(op->err.status, 400);
	assert_string_equal(op->err.code, "invalid_argument");
	assert_non_null(strstr(op->err.msg, words));
	op_free(op);
}

static void test_body_errors(void **state)
{
	expect_400("{\"name\":", "malformed JSON");
	expect_400("[1,2]", "must be a JSON object");
	expect_400("{\"nmae\":\"a\"}", "unknown field \"nmae\"");
	expect_400("{\"n\":\"two\"}", "\"n\" must be an integer");
	expect_400("{\"env\":{\"K\":1}}", "\"env\" must be an object of strings");
	expect_400("{\"cmd\":[]}", "\"cmd\" must be a non-empty array");
	expect_400("{\"cmd\":[\"ls\",1]}", "\"cmd\" must be a non-empty array");
	expect_400("{\"on\":1}", "\"on\" must be a boolean");
	expect_400("{\"name\":\"a\",\"name\":\"b\"}", "malformed JSON");
}

static void test_paths(void **state)
{
	struct op *op = op_with(NULL);
	assert_int_equal(api_check_path(op, "/work/a", 7, "path"), 0);
	assert_true(api_check_path(op, "/work\0/a", 8, "path") < 0);
	assert_non_null(strstr(op->err.msg, "NUL"));
	op->err.status = 0;
	assert_true(api_check_path(op, "work/a", 6, "path") < 0);
	assert_non_null(strstr(op->err.msg, "absolute"));
	op->err.status = 0;
	char *long_path = malloc(API_MAX_PATH + 2);
	memset(long_path, 'a', API_MAX_PATH + 1);
	long_path[0] = '/';
	long_path[API_MAX_PATH + 1] = '\0';
	assert_true(api_check_path(op, long_path, API_MAX_PATH + 1, "path") < 0);
	long_path[API_MAX_PATH] = '\0';
	op->err.status = 0;
	assert_int_equal(api_check_path(op, long_path, API_MAX_PATH, "path"), 0);
	free(long_path);
	op_free(op);
}

static void test_routes(void **state)
{
	struct op *op = op_with(NULL);
	const struct route *r = api_match(op, "GET", "/v1/sandboxes/abc123/processes/42/output");
	assert_non_null(r);
	assert_ptr_equal(r->handler, api_proc_output);
	assert_string_equal(op->sbid, "abc123");
	assert_int_equal(op->pid, 42);

	assert_ptr_equal(api_match(op, "PUT", "/v1/sandboxes/abc/files")->upload, api_file_write_upload);
	assert_null(api_match(op, "PATCH", "/v1/sandboxes/abc"));
	assert_int_equal(op->err.status, 405);
	op->err.status = 0;
	assert_null(api_match(op, "GET", "/v1/nothing"));
	assert_int_equal(op->err.status, 404);
	op->err.status = 0;
	/* a pid must be a positive number below the request-tag space */
	assert_null(api_match(op, "GET", "/v1/sandboxes/abc/processes/0"));
	assert_null(api_match(op, "GET", "/v1/sandboxes/abc/processes/x1"));
	assert_null(api_match(op, "GET", "/v1/sandboxes/abc/processes/2147483648"));
	/* an id longer than any id is no route */
	assert_null(api_match(op, "GET", "/v1/sandboxes/0123456789abc"));
	op_free(op);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_ok),  cmocka_unit_test(test_empty_body_is_empty_object),
		cmocka_unit_test(test_body_errors), cmocka_unit_test(test_paths),
		cmocka_unit_test(test_routes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

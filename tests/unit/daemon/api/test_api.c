/*
 * tests/unit/daemon/api/test_api.c - routing and request validation
 * (daemon/api/api.c): every malformed request is refused with a 4xx and a
 * message naming the problem; and a watch's agent frames turned into its
 * stream's lines (daemon/core/op.c), a bad one refused as a protocol breach.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/api/api.h"
#include "daemon/api/http.h"
#include "daemon/core/sandbox.h"

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
	assert_int_equal(op->err.kind, ERR_NONE);
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
	assert_int_equal(http_status(op->err.kind), 400);
	assert_string_equal(err_code(op->err.kind), "invalid_argument");
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
	op->err.kind = ERR_NONE;
	assert_true(api_check_path(op, "work/a", 6, "path") < 0);
	assert_non_null(strstr(op->err.msg, "absolute"));
	op->err.kind = ERR_NONE;
	char *long_path = malloc(API_MAX_PATH + 2);
	memset(long_path, 'a', API_MAX_PATH + 1);
	long_path[0] = '/';
	long_path[API_MAX_PATH + 1] = '\0';
	assert_true(api_check_path(op, long_path, API_MAX_PATH + 1, "path") < 0);
	long_path[API_MAX_PATH] = '\0';
	op->err.kind = ERR_NONE;
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
	assert_int_equal(http_status(op->err.kind), 405);
	op->err.kind = ERR_NONE;
	assert_null(api_match(op, "GET", "/v1/nothing"));
	assert_int_equal(http_status(op->err.kind), 404);
	op->err.kind = ERR_NONE;
	/* a pid must be a positive number below the request-tag space */
	assert_null(api_match(op, "GET", "/v1/sandboxes/abc/processes/0"));
	assert_null(api_match(op, "GET", "/v1/sandboxes/abc/processes/x1"));
	assert_null(api_match(op, "GET", "/v1/sandboxes/abc/processes/2147483648"));
	/* an id longer than any id is no route */
	assert_null(api_match(op, "GET", "/v1/sandboxes/0123456789abc"));
	op_free(op);
}

/* Hands op one agent frame of type on its tag: payload is u32 kind, then name (n bytes). */
static int watch_frame(struct op *op, uint8_t type, uint32_t kind, const char *name, size_t n)
{
	uint8_t payload[64] = { 0 };
	frame_put_u32(payload, kind);
	memcpy(payload + 4, name, n);
	struct frame f = { .len = type == SP_A_EVENT ? (uint32_t)(4 + n) : 0, .type = type, .chan = op->tag,
			   .payload = payload };
	char why[CHAN_MAX_WHY] = "";
	return op_on_frame(op, &f, why);
}

/* The lines op's stream holds, taken. */
static char *lines(struct op *op)
{
	size_t n = buf_avail(&op->out);
	char *s = calloc(1, n + 1);
	uint32_t credit;
	op_take(op, (uint8_t *)s, n, &credit);
	return s;
}

static void test_watch_frames(void **state)
{
	struct daemon *d = calloc(1, sizeof(*d));
	struct sandbox *sb = calloc(1, sizeof(*sb));
	struct op *op = op_with(NULL);
	op->d = d;
	op->kind = OP_WATCH;
	op->stream = true;
	op->what = strdup("/work");
	op_link(op, sb);
	/* no event before the agent said it watches */
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_CREATE, "a", 2), -EPROTO);
	assert_int_equal(watch_frame(op, SP_A_OK, 0, "", 0), 0);
	assert_true(op->responding && op->done);
	char *s = lines(op);
	assert_string_equal(s, "{\"type\":\"start\",\"path\":\"/work\"}\n");
	free(s);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_CREATE, "a/b.txt", 8), 0);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_CHMOD, "", 1), 0); /* the folder itself */
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_LOST, "", 1), 0);
	s = lines(op);
	assert_string_equal(s, "{\"type\":\"create\",\"name\":\"a/b.txt\"}\n{\"type\":\"chmod\",\"name\":\"\"}\n"
			       "{\"type\":\"lost\"}\n");
	free(s);
	/* kinds out of range, a name not ended, an absolute name, a loss with a name */
	assert_int_equal(watch_frame(op, SP_A_EVENT, 0, "a", 2), -EPROTO);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_LOST + 1, "a", 2), -EPROTO);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_WRITE, "ab", 2), -EPROTO);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_WRITE, "/etc", 5), -EPROTO);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_LOST, "x", 2), -EPROTO);
	/* at the window's edge: one byte more than the credit left is a breach */
	op->list.owed = SP_WINDOW - 6;
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_WRITE, "a", 2), 0);
	assert_int_equal(watch_frame(op, SP_A_EVENT, SP_EVENT_WRITE, "", 1), -EPROTO);
	free(lines(op));
	assert_int_equal(watch_frame(op, SP_A_END, 0, "", 0), 0);
	assert_true(op->eof);
	assert_null(op->sb);
	s = lines(op);
	assert_string_equal(s, "{\"type\":\"end\"}\n");
	free(s);
	op_free(op);
	free(sb);
	free(d);
}

/* api_file_watch on a running sandbox whose agent speaks version; answers op->err. */
static struct err watch_refusal(unsigned version, const char *path, const char *recursive, const char *sbid)
{
	struct daemon *d = calloc(1, sizeof(*d));
	struct sandbox *sb = calloc(1, sizeof(*sb));
	snprintf(sb->id, sizeof(sb->id), "abc123");
	sb->state = SB_RUNNING;
	sb->chan.fd = 1000; /* never used: every case here is refused before a frame goes */
	sb->chan.phase = CHAN_READY;
	sb->peer.version = version;
	d->sandboxes = sb;
	struct op *op = op_with(NULL);
	op->d = d;
	snprintf(op->sbid, sizeof(op->sbid), "%s", sbid);
	op->query = json_pack("{s:s}", "path", path);
	if (recursive)
		json_object_set_new(op->query, "recursive", json_string(recursive));
	assert_int_equal(api_file_watch(op), API_DONE);
	struct err e = op->err;
	op_free(op);
	free(sb);
	free(d);
	return e;
}

static void test_watch_refusals(void **state)
{
	/* an agent from before watching would drop the connection on H_WATCH: refused here */
	struct err e = watch_refusal(2, "/work", "1", "abc123");
	assert_int_equal(http_status(e.kind), 409);
	assert_string_equal(err_code(e.kind), "conflict");
	assert_non_null(strstr(e.msg, "protocol 2"));
	assert_int_equal(http_status(watch_refusal(3, "/work", "yes", "abc123").kind), 400);
	assert_int_equal(http_status(watch_refusal(3, "", NULL, "abc123").kind), 400);
	assert_int_equal(http_status(watch_refusal(3, "/work", NULL, "nosuch").kind), 404);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_ok),  cmocka_unit_test(test_empty_body_is_empty_object),
		cmocka_unit_test(test_body_errors), cmocka_unit_test(test_paths),
		cmocka_unit_test(test_routes), cmocka_unit_test(test_watch_frames), cmocka_unit_test(test_watch_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/e2b/test_connect.c - the Connect protocol's pieces (e2b/connect.c): envelopes as
 * E2B's SDK sends and reads them (bytes taken from a capture of SDK 2.51.0), the end-stream
 * message, requests that are not what they should be, codes and statuses, and the proto3
 * JSON forms.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "e2b/connect.h"

/* The SDK's Start request, as captured: flags 0, length 0x70, then the JSON. */
static const char START_JSON[] = "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi; exit 2\"],"
				 "\"envs\":{\"Y\":\"2\"},\"cwd\":\"/tmp\"},\"stdin\":false}";

static size_t envelope_of(uint8_t *dst, uint8_t flags, const char *json, size_t n)
{
	dst[0] = flags;
	dst[1] = (uint8_t)(n >> 24);
	dst[2] = (uint8_t)(n >> 16);
	dst[3] = (uint8_t)(n >> 8);
	dst[4] = (uint8_t)n;
	memcpy(dst + 5, json, n);
	return n + 5;
}

static void test_the_sdks_start_request(void **state)
{
	uint8_t body[256];
	size_t n = envelope_of(body, 0, START_JSON, strlen(START_JSON));
	assert_int_equal(n - 5, 0x70);
	char why[128];
	json_t *m = connect_request(body, n, why, sizeof(why));
	assert_non_null(m);
	json_t *proc = json_object_get(m, "process");
	assert_string_equal(json_string_value(json_object_get(proc, "cmd")), "/bin/bash");
	assert_string_equal(json_string_value(json_array_get(json_object_get(proc, "args"), 2)), "echo hi; exit 2");
	assert_true(json_is_false(json_object_get(m, "stdin")));
	json_decref(m);
}

static void test_requests_that_are_not_one_envelope(void **state)
{
	uint8_t body[256];
	char why[128];
	size_t n = envelope_of(body, 0, "{}", 2);
	/* short, trailing bytes, a length past the body */
	assert_null(connect_request(body, 4, why, sizeof(why)));
	assert_non_null(strstr(why, "not a Connect envelope"));
	body[n] = 'x';
	assert_null(connect_request(body, n + 1, why, sizeof(why)));
	assert_non_null(strstr(why, "the envelope says 2 bytes"));
	assert_null(connect_request(body, n - 1, why, sizeof(why)));
	/* compressed, end-stream, not JSON, not an object, a duplicate key */
	n = envelope_of(body, CONNECT_FLAG_COMPRESSED, "{}", 2);
	assert_null(connect_request(body, n, why, sizeof(why)));
	assert_non_null(strstr(why, "compressed"));
	n = envelope_of(body, CONNECT_FLAG_END, "{}", 2);
	assert_null(connect_request(body, n, why, sizeof(why)));
	assert_non_null(strstr(why, "flags 0x02"));
	n = envelope_of(body, 0, "{nope", 5);
	assert_null(connect_request(body, n, why, sizeof(why)));
	assert_non_null(strstr(why, "not JSON"));
	n = envelope_of(body, 0, "[1]", 3);
	assert_null(connect_request(body, n, why, sizeof(why)));
	assert_non_null(strstr(why, "not a JSON object"));
	n = envelope_of(body, 0, "{\"a\":1,\"a\":2}", 13);
	assert_null(connect_request(body, n, why, sizeof(why)));
	/* a length over the limit is refused before anything is read */
	body[0] = 0;
	body[1] = 0x7f;
	assert_null(connect_request(body, 5, why, sizeof(why)));
}

static void test_unary_requests(void **state)
{
	char why[128];
	json_t *m = connect_unary_request((const uint8_t *)"", 0, why, sizeof(why));
	assert_true(json_is_object(m) && json_object_size(m) == 0);
	json_decref(m);
	m = connect_unary_request((const uint8_t *)"{\"path\":\"/tmp\"}", 15, why, sizeof(why));
	assert_string_equal(json_string_value(json_object_get(m, "path")), "/tmp");
	json_decref(m);
	assert_null(connect_unary_request((const uint8_t *)"\"x\"", 3, why, sizeof(why)));
	assert_null(connect_unary_request((const uint8_t *)"{", CONNECT_MAX_MESSAGE + 1, why, sizeof(why)));
	assert_non_null(strstr(why, "over"));
}

/* What the SDK reads back: the captured answer to Start, byte for byte. */
static void test_the_answer_to_start_as_captured(void **state)
{
	struct buf b = { 0 };
	json_t *start = json_pack("{s:{s:{s:i}}}", "event", "start", "pid", 13982);
	assert_int_equal(connect_put(&b, 0, start), 0);
	json_decref(start);
	assert_int_equal(connect_end(&b, NULL, NULL), 0);
	static const char want[] = "\x00\x00\x00\x00\x21{\"event\":{\"start\":{\"pid\":13982}}}"
				   "\x02\x00\x00\x00\x02{}";
	assert_int_equal(buf_avail(&b), sizeof(want) - 1);
	assert_memory_equal(buf_head(&b), want, sizeof(want) - 1);

	/* read back one at a time, whatever the pieces it arrives in */
	struct buf in = { 0 };
	uint8_t flags;
	json_t *m;
	size_t total = buf_avail(&b), got = 0;
	for (size_t i = 0; i < total; i++) {
		assert_int_equal(buf_put(&in, buf_head(&b) + i, 1), 0);
		int rc = connect_next(&in, 1024, &flags, &m);
		assert_true(rc >= 0);
		if (rc == 1) {
			got++;
			if (got == 1) {
				assert_int_equal(flags, 0);
				assert_int_equal(json_integer_value(json_object_get(
							 json_object_get(json_object_get(m, "event"), "start"), "pid")),
						 13982);
			} else {
				assert_int_equal(flags, CONNECT_FLAG_END);
				assert_int_equal(json_object_size(m), 0);
			}
			json_decref(m);
		}
	}
	assert_int_equal(got, 2);
	assert_int_equal(buf_avail(&in), 0);
	buf_free(&b);
	buf_free(&in);
}

static void test_an_end_with_an_error(void **state)
{
	struct buf b = { 0 };
	assert_int_equal(connect_end(&b, "deadline_exceeded", "the command ran 60 s"), 0);
	uint8_t flags;
	json_t *m;
	assert_int_equal(connect_next(&b, 1024, &flags, &m), 1);
	assert_int_equal(flags, CONNECT_FLAG_END);
	json_t *e = json_object_get(m, "error");
	assert_string_equal(json_string_value(json_object_get(e, "code")), "deadline_exceeded");
	assert_string_equal(json_string_value(json_object_get(e, "message")), "the command ran 60 s");
	json_decref(m);
	/* too big, compressed, not JSON: not an envelope to take */
	assert_int_equal(connect_envelope(&b, 0, "{\"a\":1}", 7), 0);
	assert_int_equal(connect_next(&b, 6, &flags, &m), -EINVAL);
	buf_free(&b);
	struct buf c = { 0 };
	assert_int_equal(connect_envelope(&c, CONNECT_FLAG_COMPRESSED, "{}", 2), 0);
	assert_int_equal(connect_next(&c, 1024, &flags, &m), -EINVAL);
	buf_free(&c);
	struct buf d = { 0 };
	assert_int_equal(connect_envelope(&d, 0, "{oops", 5), 0);
	assert_int_equal(connect_next(&d, 1024, &flags, &m), -EINVAL);
	buf_free(&d);
}

static void test_codes_and_statuses(void **state)
{
	assert_int_equal(connect_http_status("not_found"), 404);
	assert_int_equal(connect_http_status("already_exists"), 409);
	assert_int_equal(connect_http_status("failed_precondition"), 400);
	assert_int_equal(connect_http_status("unauthenticated"), 401);
	assert_int_equal(connect_http_status("resource_exhausted"), 429);
	assert_int_equal(connect_http_status("canceled"), 499);
	assert_int_equal(connect_http_status("no such code"), 500);
	assert_true(connect_code_known("deadline_exceeded"));
	assert_false(connect_code_known("conflict"));
	/* spaced's codes first, its status when the code is not one of them */
	assert_string_equal(connect_code_of("conflict", 409), "failed_precondition");
	assert_string_equal(connect_code_of("exec_failed", 422), "invalid_argument");
	assert_string_equal(connect_code_of("no_space", 507), "resource_exhausted");
	assert_string_equal(connect_code_of("unauthorized", 401), "unauthenticated");
	assert_string_equal(connect_code_of(NULL, 504), "deadline_exceeded");
	assert_string_equal(connect_code_of("what", 502), "unavailable");
	assert_string_equal(connect_code_of(NULL, 418), "unknown");
	assert_string_equal(connect_code_of(NULL, 599), "internal");
}

static void test_proto3_json_forms(void **state)
{
	json_t *o = json_pack("{s:i, s:s}", "exitCode", 2, "include_entry", "x");
	assert_int_equal(json_integer_value(connect_field(o, "exitCode", "exit_code")), 2);
	assert_string_equal(json_string_value(connect_field(o, "includeEntry", "include_entry")), "x");
	assert_null(connect_field(o, "depth", "depth"));
	json_decref(o);

	uint8_t *out;
	size_t len;
	assert_int_equal(connect_bytes("aGkK", &out, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "hi\n", 3);
	free(out);
	assert_int_equal(connect_bytes("aGk", &out, &len), 0); /* unpadded */
	assert_int_equal(len, 2);
	assert_memory_equal(out, "hi", 2);
	free(out);
	assert_int_equal(connect_bytes("-_8", &out, &len), 0); /* URL-safe: 0xfb 0xff */
	assert_int_equal(len, 2);
	assert_int_equal(out[0], 0xfb);
	assert_int_equal(out[1], 0xff);
	free(out);
	assert_int_equal(connect_bytes("", &out, &len), 0);
	assert_int_equal(len, 0);
	assert_non_null(out);
	free(out);
	assert_int_equal(connect_bytes("a", &out, &len), -EINVAL);
	assert_int_equal(connect_bytes("a*bc", &out, &len), -EINVAL);
	json_t *s = connect_bytes_json((const uint8_t *)"\xfb\xff", 2);
	assert_string_equal(json_string_value(s), "+/8=");
	json_decref(s);

	int64_t x;
	json_t *v = json_string("1048576");
	assert_int_equal(connect_int(v, &x), 0);
	assert_int_equal(x, 1048576);
	json_decref(v);
	v = json_integer(-3);
	assert_int_equal(connect_int(v, &x), 0);
	assert_int_equal(x, -3);
	json_decref(v);
	const char *bad[] = { "", "12a", "+1", "99999999999999999999", " 1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = json_string(bad[i]);
		assert_int_equal(connect_int(v, &x), -EINVAL);
		json_decref(v);
	}
	v = json_real(1.5);
	assert_int_equal(connect_int(v, &x), -EINVAL);
	json_decref(v);

	char t[40];
	connect_time(t, sizeof(t), 1796232110506LL);
	assert_string_equal(t, "2026-12-02T17:21:50.506Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_sdks_start_request),
		cmocka_unit_test(test_requests_that_are_not_one_envelope),
		cmocka_unit_test(test_unary_requests),
		cmocka_unit_test(test_the_answer_to_start_as_captured),
		cmocka_unit_test(test_an_end_with_an_error),
		cmocka_unit_test(test_codes_and_statuses),
		cmocka_unit_test(test_proto3_json_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

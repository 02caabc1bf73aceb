/*
 * tests/unit/lib/test_codec.c - output encodings (lib/codec.c): UTF-8 checks that
 * never split a character, JSON escaping, base64 both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "lib/codec.h"

static void test_utf8(void **state)
{
	size_t tail;
	assert_true(codec_utf8_check((const uint8_t *)"plain", 5, &tail));
	assert_int_equal(tail, 0);
	const uint8_t euro[] = { 0xe2, 0x82, 0xac };
	assert_true(codec_utf8_check(euro, 3, &tail));
	assert_int_equal(tail, 0);
	/* A character cut at the end of a chunk is a tail, not an error. */
	assert_true(codec_utf8_check(euro, 2, &tail));
	assert_int_equal(tail, 2);
	const uint8_t bad[] = { 'a', 0xff, 'b' };
	assert_false(codec_utf8_check(bad, 3, &tail));
	const uint8_t surrogate[] = { 0xed, 0xa0, 0x80 };
	assert_false(codec_utf8_check(surrogate, 3, &tail));
	const uint8_t overlong[] = { 0xc0, 0x80 };
	assert_false(codec_utf8_check(overlong, 2, &tail));
}

static void test_json_escape_parses_back(void **state)
{
	uint8_t in[128];
	for (int i = 0; i < 128; i++)
		in[i] = (uint8_t)i;
	size_t n = codec_json_escaped_len(in, sizeof(in));
	char *s = malloc(n + 3);
	s[0] = '"';
	assert_int_equal(codec_json_escape(s + 1, in, sizeof(in)), n);
	s[n + 1] = '"';
	s[n + 2] = '\0';
	json_t *j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	assert_non_null(j);
	assert_int_equal(json_string_length(j), 128);
	assert_memory_equal(json_string_value(j), in, 128);
	json_decref(j);
	free(s);
}

static void test_b64_all_bytes(void **state)
{
	uint8_t in[256], out[258];
	char enc[400];
	for (int i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	for (size_t n = 0; n <= 256; n += 85) {
		size_t k = codec_b64_encode(enc, in, n);
		assert_int_equal(k, codec_b64_len(n));
		assert_int_equal(codec_b64_decode(out, enc, k), (long)n);
		assert_memory_equal(out, in, n);
	}
	assert_int_equal(codec_b64_encode(enc, (const uint8_t *)"hi", 2), 4);
	assert_memory_equal(enc, "aGk=", 4);
}

static void test_b64_rejects_garbage(void **state)
{
	uint8_t out[16];
	assert_int_equal(codec_b64_decode(out, "abc", 3), -1);
	assert_int_equal(codec_b64_decode(out, "ab!d", 4), -1);
	assert_int_equal(codec_b64_decode(out, "a=bc", 4), -1);
	assert_int_equal(codec_b64_decode(out, "ab=c", 4), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_json_escape_parses_back),
		cmocka_unit_test(test_b64_all_bytes),
		cmocka_unit_test(test_b64_rejects_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

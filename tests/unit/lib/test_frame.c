/*
 * tests/unit/lib/test_frame.c - the agent protocol's framing and size checks
 * (lib/frame.c): what a peer sends is never read past its end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/frame.h"

static void test_roundtrip(void **state)
{
	uint8_t buf[SP_HDR_SIZE + 5];
	frame_put_header(buf, SP_A_STDOUT, 1234, 5);
	memcpy(buf + SP_HDR_SIZE, "hello", 5);
	struct frame f;
	assert_int_equal(frame_parse(buf, sizeof(buf), &f), SP_HDR_SIZE + 5);
	assert_int_equal(f.type, SP_A_STDOUT);
	assert_int_equal(f.chan, 1234);
	assert_int_equal(f.len, 5);
	assert_memory_equal(f.payload, "hello", 5);
}

static void test_partial_needs_more(void **state)
{
	uint8_t buf[SP_HDR_SIZE + 5];
	frame_put_header(buf, SP_A_STDOUT, 1, 5);
	struct frame f;
	for (size_t n = 0; n < sizeof(buf); n++)
		assert_int_equal(frame_parse(buf, n, &f), 0);
}

static void test_oversized_rejected(void **state)
{
	uint8_t buf[SP_HDR_SIZE];
	struct frame f;
	frame_put_header(buf, SP_A_STDOUT, 1, SP_MAX_PAYLOAD);
	assert_int_equal(frame_parse(buf, sizeof(buf), &f), 0); /* at the limit: waits for the payload */
	frame_put_header(buf, SP_A_STDOUT, 1, SP_MAX_PAYLOAD + 1);
	assert_int_equal(frame_parse(buf, sizeof(buf), &f), -EPROTO);
	frame_put_header(buf, SP_A_STDOUT, 1, 0xffffffffu);
	assert_int_equal(frame_parse(buf, sizeof(buf), &f), -EPROTO);
}

static void test_reserved_bits_rejected(void **state)
{
	uint8_t buf[SP_HDR_SIZE];
	struct frame f;
	frame_put_header(buf, SP_A_OK, 1, 0);
	buf[6] = 1;
	assert_int_equal(frame_parse(buf, sizeof(buf), &f), -EPROTO);
}

static void test_strings_bounded(void **state)
{
	uint8_t buf[SP_HDR_SIZE + 8];
	memcpy(buf + SP_HDR_SIZE, "ab\0cd\0ef", 8); /* "ef" has no NUL */
	frame_put_header(buf, SP_H_RENAME, SP_CHAN_REQ | 1, 8);
	struct frame f;
	assert_true(frame_parse(buf, sizeof(buf), &f) > 0);
	size_t off = 0;
	assert_string_equal(frame_str(&f, &off), "ab");
	assert_string_equal(frame_str(&f, &off), "cd");
	assert_int_equal(off, 6);
	assert_null(frame_str(&f, &off));
	assert_int_equal(off, 6);
	assert_null(frame_str(&f, &off));
}

static void test_need(void **state)
{
	uint8_t buf[SP_HDR_SIZE + 3];
	frame_put_header(buf, SP_A_EXIT, 7, 3);
	struct frame f;
	assert_true(frame_parse(buf, sizeof(buf), &f) > 0);
	assert_int_equal(frame_need(&f, 3), 0);
	assert_int_equal(frame_need(&f, sizeof(struct sp_exit)), -EPROTO);
}

static void test_little_endian(void **state)
{
	uint8_t b[8];
	frame_put_u32(b, 0x01020304u);
	assert_int_equal(b[0], 4);
	assert_int_equal(b[3], 1);
	frame_put_u64(b, 0x0102030405060708ull);
	assert_int_equal(b[0], 8);
	assert_true(frame_get_u64(b) == 0x0102030405060708ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),           cmocka_unit_test(test_partial_needs_more),
		cmocka_unit_test(test_oversized_rejected),  cmocka_unit_test(test_reserved_bits_rejected),
		cmocka_unit_test(test_strings_bounded),     cmocka_unit_test(test_need),
		cmocka_unit_test(test_little_endian),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

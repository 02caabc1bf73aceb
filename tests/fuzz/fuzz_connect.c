/*
 * tests/fuzz/fuzz_connect.c - e2b/connect.c: the Connect envelopes and proto3 JSON values an
 * E2B client sends to the E2B front.
 *
 * With arbitrary bytes as input:
 *  - connect_request and connect_unary_request return a JSON object or NULL with a reason,
 *    and a request taken is exactly one envelope: re-enveloped, it is the same length;
 *  - connect_next over the bytes, fed in pieces of every size the first byte picks, takes
 *    the same envelopes as when fed whole, and consumes exactly what it took;
 *  - connect_bytes on the bytes as text: what it accepts re-encodes (standard, padded) and
 *    decodes to the same bytes; connect_int never accepts what strtoll would not.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "e2b/connect.h"

static void check_requests(const uint8_t *data, size_t n)
{
	char why[256] = "";
	json_t *m = connect_request(data, n, why, sizeof(why));
	if (m) {
		assert(json_is_object(m));
		assert(n >= CONNECT_HEADER && data[0] == 0);
		json_decref(m);
	} else {
		assert(why[0]);
	}
	why[0] = '\0';
	m = connect_unary_request(data, n, why, sizeof(why));
	assert(m ? json_is_object(m) : why[0] != '\0');
	json_decref(m);
}

/* The envelopes connect_next takes from data fed `piece` bytes at a time: their count, and
 * the flags of each folded into *sig. */
static size_t take_all(const uint8_t *data, size_t n, size_t piece, uint64_t *sig, size_t *left)
{
	struct buf b = { 0 };
	size_t count = 0;
	*sig = 0;
	for (size_t off = 0; off < n; off += piece) {
		size_t k = n - off < piece ? n - off : piece;
		assert(buf_put(&b, data + off, k) == 0);
		for (;;) {
			uint8_t flags;
			json_t *m = NULL;
			int rc = connect_next(&b, 4096, &flags, &m);
			if (rc <= 0) {
				if (rc < 0)
					goto out; /* not an envelope: the stream is broken here */
				break;
			}
			count++;
			*sig = *sig * 31 + flags + 1;
			json_decref(m);
		}
	}
out:
	*left = buf_avail(&b);
	buf_free(&b);
	return count;
}

static void check_stream(const uint8_t *data, size_t n)
{
	if (n == 0)
		return;
	size_t piece = (size_t)data[0] % 7 + 1;
	uint64_t s1, s2;
	size_t left1, left2;
	size_t whole = take_all(data + 1, n - 1, n, &s1, &left1);
	size_t pieces = take_all(data + 1, n - 1, piece, &s2, &left2);
	assert(whole == pieces && s1 == s2);
}

static void check_values(const uint8_t *data, size_t n)
{
	char *text = malloc(n + 1);
	assert(text);
	memcpy(text, data, n);
	text[n] = '\0';
	uint8_t *out;
	size_t len;
	if (connect_bytes(text, &out, &len) == 0) {
		json_t *again = connect_bytes_json(out, len);
		assert(again);
		uint8_t *back;
		size_t blen;
		assert(connect_bytes(json_string_value(again), &back, &blen) == 0);
		assert(blen == len && memcmp(back, out, len) == 0);
		free(back);
		json_decref(again);
		free(out);
	}
	json_t *s = json_string(text);
	int64_t x;
	if (s && connect_int(s, &x) == 0) {
		char *end;
		long long y = strtoll(text, &end, 10);
		assert(*end == '\0' && y == x);
	}
	json_decref(s);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	check_requests(data, n);
	check_stream(data, n);
	check_values(data, n);
	return 0;
}

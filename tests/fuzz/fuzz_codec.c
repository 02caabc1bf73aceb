/*
 * tests/fuzz/fuzz_codec.c - lib/codec.c: the encodings every byte a sandbox
 * prints goes through.
 *
 * With arbitrary bytes as input:
 *  - codec_utf8_check agrees with jansson's own UTF-8 validation (the JSON
 *    library the API is built on): valid with no tail exactly when jansson
 *    takes the bytes as a string; with a tail, the bytes before it are valid
 *    and the tail is a proper prefix of one sequence;
 *  - codec_json_escape writes exactly codec_json_escaped_len bytes (into a
 *    buffer of exactly that size), never a raw control character, and for
 *    valid UTF-8 the escaped text, quoted, parses back with jansson to the
 *    same bytes;
 *  - base64: decode(encode(x)) == x; decoding arbitrary text writes at most
 *    n / 4 * 3 bytes (into a buffer of exactly that size), and what it
 *    accepts re-encodes and decodes to the same bytes.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "lib/codec.h"

static void check_utf8(const uint8_t *s, size_t n)
{
	size_t tail = 99;
	bool ok = codec_utf8_check(s, n, &tail);
	json_t *j = json_stringn((const char *)s, n);
	if (ok && tail == 0) {
		assert(j != NULL);
	} else if (ok) {
		assert(tail > 0 && tail < 4 && tail <= n);
		assert(j == NULL);
		json_t *head = json_stringn((const char *)s, n - tail);
		assert(head != NULL);
		json_decref(head);
	} else {
		assert(j == NULL);
	}
	json_decref(j);
}

static void check_escape(const uint8_t *s, size_t n)
{
	size_t len = codec_json_escaped_len(s, n);
	char *out = malloc(len + 2);
	if (!out)
		return;
	out[0] = '"';
	size_t w = codec_json_escape(out + 1, s, n);
	assert(w == len);
	for (size_t i = 0; i < w; i++)
		assert((uint8_t)out[1 + i] >= 0x20 && out[1 + i] != 0x7f);
	out[1 + w] = '"';
	size_t tail;
	if (codec_utf8_check(s, n, &tail) && tail == 0) {
		json_error_t err;
		json_t *j = json_loadb(out, w + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
		assert(j && json_is_string(j));
		assert(json_string_length(j) == n);
		assert(memcmp(json_string_value(j), s, n) == 0);
		json_decref(j);
	}
	free(out);
}

static void check_b64(const uint8_t *s, size_t n)
{
	/* round trip of arbitrary bytes */
	size_t elen = codec_b64_len(n);
	char *enc = malloc(elen + 1);
	uint8_t *dec = malloc(elen / 4 * 3 + 1);
	if (!enc || !dec)
		goto out;
	assert(codec_b64_encode(enc, s, n) == elen);
	long got = codec_b64_decode(dec, enc, elen);
	assert(got == (long)n);
	assert(memcmp(dec, s, n) == 0);
	free(dec);
	dec = NULL;

	/* arbitrary text: the destination has exactly n / 4 * 3 bytes */
	size_t room = n / 4 * 3;
	dec = malloc(room ? room : 1);
	if (!dec)
		goto out;
	got = codec_b64_decode(dec, (const char *)s, n);
	if (got >= 0) {
		assert(n % 4 == 0 && (size_t)got <= room && (size_t)got + 2 >= room);
		size_t relen = codec_b64_len((size_t)got);
		char *re = malloc(relen + 1);
		uint8_t *again = malloc(relen / 4 * 3 + 1);
		if (re && again) {
			codec_b64_encode(re, dec, (size_t)got);
			assert(codec_b64_decode(again, re, relen) == got);
			assert(memcmp(again, dec, (size_t)got) == 0);
		}
		free(re);
		free(again);
	}
out:
	free(enc);
	free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *s = malloc(size ? size : 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	check_utf8(s, size);
	check_escape(s, size);
	check_b64(s, size);
	free(s);
	return 0;
}

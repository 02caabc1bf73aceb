/*
 * lib/codec.h - the byte encodings of the API's output events: UTF-8
 * validation, JSON string escaping and base64. Pure functions over caller
 * buffers; no allocation.
 */
#ifndef SPACE_LIB_CODEC_H
#define SPACE_LIB_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Checks that s[0..n) is UTF-8. Returns true when it is, with *tail = the
 * length of an incomplete (but so far valid) multibyte sequence at the very
 * end, which belongs to the next chunk; false when any byte is invalid.
 */
bool codec_utf8_check(const uint8_t *s, size_t n, size_t *tail);

/* Bytes codec_json_escape writes for s[0..n) (without quotes). */
size_t codec_json_escaped_len(const uint8_t *s, size_t n);
/* Writes s[0..n) as the inside of a JSON string; returns bytes written. dst must hold
 * codec_json_escaped_len(s, n) bytes. */
size_t codec_json_escape(char *dst, const uint8_t *s, size_t n);

/* Length of the base64 encoding of n bytes. */
static inline size_t codec_b64_len(size_t n) { return (n + 2) / 3 * 4; }
/* Writes the base64 encoding of s[0..n); returns codec_b64_len(n). */
size_t codec_b64_encode(char *dst, const uint8_t *s, size_t n);
/*
 * Decodes base64 text s[0..n) into dst (room for n / 4 * 3 bytes). Returns the
 * number of bytes written, or -1 if s is not valid base64.
 */
long codec_b64_decode(uint8_t *dst, const char *s, size_t n);

#endif

/*
 * e2b/connect.h - the Connect protocol (version 1, JSON codec) as E2B's SDKs speak it to a
 * sandbox (docs/e2b.md): envelopes of streaming calls, the end-stream message, error codes
 * and their HTTP statuses, and the proto3 JSON forms its messages use (bytes as base64,
 * 64-bit integers as strings, lowerCamelCase names with snake_case accepted).
 *
 * An envelope is 1 byte of flags, a 4-byte big-endian length, then that many bytes of JSON.
 * Pure functions over caller buffers and jansson values.
 */
#ifndef SPACE_E2B_CONNECT_H
#define SPACE_E2B_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/buf.h"

#define CONNECT_FLAG_COMPRESSED 0x01
#define CONNECT_FLAG_END 0x02
#define CONNECT_HEADER 5
/* The largest request message taken, unary or the one envelope of a streaming call: what
 * the SDKs send is a command line, a path or a few bytes of stdin. */
#define CONNECT_MAX_MESSAGE (1 << 20)

/* Appends an envelope of flags around json[0..n). 0 or -ENOMEM (-E2BIG past UINT32_MAX). */
int connect_envelope(struct buf *b, uint8_t flags, const char *json, size_t n);
/* Appends an envelope holding msg, compact. 0 or -ENOMEM. */
int connect_put(struct buf *b, uint8_t flags, const json_t *msg);
/* Appends the end-stream envelope: {} when code is NULL, else {"error": {"code", "message"}}.
 * 0 or -ENOMEM. */
int connect_end(struct buf *b, const char *code, const char *message);

/*
 * Parses the body of a streaming request: exactly one uncompressed envelope holding a JSON
 * object, nothing after it. Returns the object (new reference), or NULL with why[0..n) saying
 * what is wrong.
 */
json_t *connect_request(const uint8_t *body, size_t len, char *why, size_t n);
/* Parses the body of a unary request: a JSON object ({} when the body is empty). As above. */
json_t *connect_unary_request(const uint8_t *body, size_t len, char *why, size_t n);

/*
 * Takes the next whole envelope off the front of b: 1 with *flags and a new reference to its
 * JSON in *msg, 0 when b holds only part of one, -EINVAL when the envelope is not one
 * (compressed, over max bytes, or not JSON). What was taken is consumed from b.
 */
int connect_next(struct buf *b, size_t max, uint8_t *flags, json_t **msg);

/* The HTTP status a unary call's error answers with, for a Connect code (500 for one unknown). */
int connect_http_status(const char *code);
/* Whether code is one of Connect's error codes. */
bool connect_code_known(const char *code);
/* The Connect code for one of spaced's API errors (its "code" and HTTP status). */
const char *connect_code_of(const char *space_code, int status);

/* obj[camel], or obj[snake] when camel is absent (proto3 JSON accepts both names). */
json_t *connect_field(const json_t *obj, const char *camel, const char *snake);
/*
 * Decodes a proto3 JSON bytes value (standard or URL-safe base64, padded or not) into a new
 * malloc'd buffer (*out, *len; a zero-length value gives a non-NULL buffer). 0, or -EINVAL
 * when text is not base64, -ENOMEM.
 */
int connect_bytes(const char *text, uint8_t **out, size_t *len);
/* A proto3 JSON string for bytes: standard base64, padded (new reference, NULL without memory). */
json_t *connect_bytes_json(const uint8_t *data, size_t n);
/*
 * Reads a proto3 JSON integer (a number, or a decimal string as int64 fields are written)
 * into *out. 0, or -EINVAL when v is neither or out of range.
 */
int connect_int(const json_t *v, int64_t *out);
/* Formats wall-clock milliseconds as a proto3 Timestamp (RFC 3339 UTC, 3 fraction digits). */
void connect_time(char *dst, size_t n, int64_t ms);

#endif

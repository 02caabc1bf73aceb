/*
 * e2b/connect.c - Connect envelopes, codes and proto3 JSON forms (connect.h).
 */
#include "e2b/connect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/codec.h"

int connect_envelope(struct buf *b, uint8_t flags, const char *json, size_t n)
{
	if (n > UINT32_MAX)
		return -E2BIG;
	uint8_t *p = buf_reserve(b, CONNECT_HEADER + n);
	if (!p)
		return -ENOMEM;
	p[0] = flags;
	p[1] = (uint8_t)(n >> 24);
	p[2] = (uint8_t)(n >> 16);
	p[3] = (uint8_t)(n >> 8);
	p[4] = (uint8_t)n;
	memcpy(p + CONNECT_HEADER, json, n);
	buf_commit(b, CONNECT_HEADER + n);
	return 0;
}

int connect_put(struct buf *b, uint8_t flags, const json_t *msg)
{
	char *text = json_dumps(msg, JSON_COMPACT);
	int rc = text ? connect_envelope(b, flags, text, strlen(text)) : -ENOMEM;
	free(text);
	return rc;
}

int connect_end(struct buf *b, const char *code, const char *message)
{
	json_t *m = code ? json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", message ? message : "")
			 : json_object();
	int rc = m ? connect_put(b, CONNECT_FLAG_END, m) : -ENOMEM;
	json_decref(m);
	return rc;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* body[0..len) as a JSON object, or NULL with why. */
static json_t *object_of(const uint8_t *body, size_t len, char *why, size_t n)
{
	json_error_t je;
	json_t *o = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		snprintf(why, n, "the message is not JSON: %s", je.text);
	else if (!json_is_object(o))
		snprintf(why, n, "the message is not a JSON object");
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

json_t *connect_request(const uint8_t *body, size_t len, char *why, size_t n)
{
	if (len < CONNECT_HEADER) {
		snprintf(why, n, "the body is not a Connect envelope (%zu bytes)", len);
		return NULL;
	}
	uint32_t size = be32(body + 1);
	if (body[0] & CONNECT_FLAG_COMPRESSED) {
		snprintf(why, n, "compressed messages are not accepted");
		return NULL;
	}
	if (body[0] != 0) {
		snprintf(why, n, "the request's envelope has flags 0x%02x", body[0]);
		return NULL;
	}
	if (size > CONNECT_MAX_MESSAGE || size != len - CONNECT_HEADER) {
		snprintf(why, n, "the envelope says %u bytes, the body holds %zu after it (at most %d)", size,
			 len - CONNECT_HEADER, CONNECT_MAX_MESSAGE);
		return NULL;
	}
	return object_of(body + CONNECT_HEADER, size, why, n);
}

json_t *connect_unary_request(const uint8_t *body, size_t len, char *why, size_t n)
{
	if (len > CONNECT_MAX_MESSAGE) {
		snprintf(why, n, "the message is over %d bytes", CONNECT_MAX_MESSAGE);
		return NULL;
	}
	return len ? object_of(body, len, why, n) : json_object();
}

int connect_next(struct buf *b, size_t max, uint8_t *flags, json_t **msg)
{
	size_t have = buf_avail(b);
	if (have < CONNECT_HEADER)
		return 0;
	const uint8_t *p = buf_head(b);
	uint32_t size = be32(p + 1);
	if ((p[0] & CONNECT_FLAG_COMPRESSED) || size > max)
		return -EINVAL;
	if (have - CONNECT_HEADER < size)
		return 0;
	json_t *m = json_loadb((const char *)p + CONNECT_HEADER, size, 0, NULL);
	if (!m)
		return -EINVAL;
	*flags = p[0];
	*msg = m;
	buf_consume(b, CONNECT_HEADER + size);
	return 1;
}

static const struct {
	const char *code;
	int status;
} CODES[] = {
	{ "canceled", 499 },	       { "unknown", 500 },	      { "invalid_argument", 400 },
	{ "deadline_exceeded", 504 },  { "not_found", 404 },	      { "already_exists", 409 },
	{ "permission_denied", 403 },  { "resource_exhausted", 429 }, { "failed_precondition", 400 },
	{ "aborted", 409 },	       { "out_of_range", 400 },	      { "unimplemented", 501 },
	{ "internal", 500 },	       { "unavailable", 503 },	      { "data_loss", 500 },
	{ "unauthenticated", 401 },
};

int connect_http_status(const char *code)
{
	for (size_t i = 0; code && i < sizeof(CODES) / sizeof(CODES[0]); i++)
		if (strcmp(CODES[i].code, code) == 0)
			return CODES[i].status;
	return 500;
}

bool connect_code_known(const char *code)
{
	for (size_t i = 0; code && i < sizeof(CODES) / sizeof(CODES[0]); i++)
		if (strcmp(CODES[i].code, code) == 0)
			return true;
	return false;
}

const char *connect_code_of(const char *space_code, int status)
{
	static const struct {
		const char *space, *connect;
	} map[] = {
		{ "invalid_argument", "invalid_argument" },
		{ "not_found", "not_found" },
		{ "permission_denied", "permission_denied" },
		{ "conflict", "failed_precondition" },
		{ "too_large", "resource_exhausted" },
		{ "exec_failed", "invalid_argument" },
		{ "too_many", "resource_exhausted" },
		{ "unavailable", "unavailable" },
		{ "sandbox_failed", "unavailable" },
		{ "no_space", "resource_exhausted" },
		{ "internal", "internal" },
		{ "unauthorized", "unauthenticated" },
		{ "method_not_allowed", "unimplemented" },
		{ "isolation_unavailable", "failed_precondition" },
	};
	for (size_t i = 0; space_code && i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].space, space_code) == 0)
			return map[i].connect;
	switch (status) {
	case 400: return "invalid_argument";
	case 401: return "unauthenticated";
	case 403: return "permission_denied";
	case 404: return "not_found";
	case 409: return "aborted";
	case 413:
	case 429:
	case 507: return "resource_exhausted";
	case 501: return "unimplemented";
	case 502:
	case 503: return "unavailable";
	case 504: return "deadline_exceeded";
	default: return status >= 500 ? "internal" : "unknown";
	}
}

json_t *connect_field(const json_t *obj, const char *camel, const char *snake)
{
	json_t *v = json_object_get(obj, camel);
	return v ? v : json_object_get(obj, snake);
}

int connect_bytes(const char *text, uint8_t **out, size_t *len)
{
	size_t n = strlen(text);
	if (n % 4 == 1)
		return -EINVAL;
	/* standard alphabet, padded: what lib/codec.c decodes */
	size_t padded = (n + 3) / 4 * 4;
	char *std = malloc(padded + 1);
	uint8_t *dst = malloc(padded / 4 * 3 + 1);
	if (!std || !dst) {
		free(std);
		free(dst);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		std[i] = text[i] == '-' ? '+' : text[i] == '_' ? '/' : text[i];
	memset(std + n, '=', padded - n);
	long got = codec_b64_decode(dst, std, padded);
	free(std);
	if (got < 0) {
		free(dst);
		return -EINVAL;
	}
	*out = dst;
	*len = (size_t)got;
	return 0;
}

json_t *connect_bytes_json(const uint8_t *data, size_t n)
{
	char *text = malloc(codec_b64_len(n) + 1);
	if (!text)
		return NULL;
	text[codec_b64_encode(text, data, n)] = '\0';
	json_t *s = json_string(text);
	free(text);
	return s;
}

int connect_int(const json_t *v, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	const char *s = json_string_value(v);
	if (!s || !*s || strlen(s) > 20)
		return -EINVAL;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || *end || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
		return -EINVAL;
	*out = x;
	return 0;
}

void connect_time(char *dst, size_t n, int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char day[32];
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(dst, n, "%s.%03dZ", day, (int)(ms % 1000));
}

/*
 * lib/codec.c - UTF-8 validation, JSON escaping and base64 for output events
 * (see codec.h). These run over every byte a sandbox prints, so they work on
 * raw buffers without allocating.
 */
#include "codec.h"

#include <string.h>

/* Length of the sequence introduced by lead byte c, 0 if c cannot start one. */
static size_t seq_len(uint8_t c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Whether the k-th byte (k >= 1) of a sequence led by `lead` may be b. */
static bool cont_ok(uint8_t lead, size_t k, uint8_t b)
{
	if ((b & 0xc0) != 0x80)
		return false;
	if (k != 1)
		return true;
	if (lead == 0xe0)
		return b >= 0xa0;
	if (lead == 0xed)
		return b <= 0x9f; /* no surrogates */
	if (lead == 0xf0)
		return b >= 0x90;
	if (lead == 0xf4)
		return b <= 0x8f;
	return true;
}

bool codec_utf8_check(const uint8_t *s, size_t n, size_t *tail)
{
	size_t i = 0;
	*tail = 0;
	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t len = seq_len(s[i]);
		if (len == 0)
			return false;
		size_t k = 1;
		for (; k < len && i + k < n; k++)
			if (!cont_ok(s[i], k, s[i + k]))
				return false;
		if (k < len) {
			*tail = n - i;
			return true;
		}
		i += len;
	}
	return true;
}

static bool needs_u(uint8_t c)
{
	return c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\b' && c != '\f';
}

size_t codec_json_escaped_len(const uint8_t *s, size_t n)
{
	size_t out = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if (c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f')
			out += 2;
		else if (needs_u(c) || c == 0x7f)
			out += 6;
		else
			out += 1;
	}
	return out;
}

size_t codec_json_escape(char *dst, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *p = dst;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		char esc = 0;
		switch (c) {
		case '"': esc = '"'; break;
		case '\\': esc = '\\'; break;
		case '\n': esc = 'n'; break;
		case '\t': esc = 't'; break;
		case '\r': esc = 'r'; break;
		case '\b': esc = 'b'; break;
		case '\f': esc = 'f'; break;
		default: break;
		}
		if (esc) {
			*p++ = '\\';
			*p++ = esc;
		} else if (needs_u(c) || c == 0x7f) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[c >> 4];
			p[5] = hex[c & 15];
			p += 6;
		} else {
			*p++ = (char)c;
		}
	}
	return (size_t)(p - dst);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t codec_b64_encode(char *dst, const uint8_t *s, size_t n)
{
	char *p = dst;
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		p[0] = b64[v >> 18];
		p[1] = b64[(v >> 12) & 63];
		p[2] = b64[(v >> 6) & 63];
		p[3] = b64[v & 63];
		p += 4;
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
		p[0] = b64[v >> 18];
		p[1] = b64[(v >> 12) & 63];
		p[2] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		p[3] = '=';
		p += 4;
	}
	return (size_t)(p - dst);
}

static int b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long codec_b64_decode(uint8_t *dst, const char *s, size_t n)
{
	if (n % 4 != 0)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		for (int k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
			} else if (pad || (v[k] = b64_val(s[i + k])) < 0) {
				return -1;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		dst[o++] = (uint8_t)(w >> 16);
		if (pad < 2)
			dst[o++] = (uint8_t)(w >> 8);
		if (pad < 1)
			dst[o++] = (uint8_t)w;
	}
	return (long)o;
}

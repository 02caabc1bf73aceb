/*
 * tests/fuzz/fuzz_proxy_http.c - the port proxy's reading of requests
 * (daemon/net/proxy_http.c): what any client that reaches the proxy writes, before any token
 * is checked. The input is a connection's bytes, read as the proxy reads them: a head, then its
 * body, then the next head, and so on. For each head taken:
 *  - written again without the token, it fits PROXY_REWRITE_MAX, is taken again with the same
 *    Host, target, framing and Upgrade, and carries no token (header or cookie) any more;
 *  - the redirect made from its target is a path of this host: one '/', then no '/' or '\',
 *    visible ASCII only;
 *  - its body read in pieces (sizes from the input) ends where read whole, or fails as whole.
 * The bytes are also read as an answer to an Upgrade request, whole and byte by byte: the same
 * verdict.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/proxy_http.h"

static void check_head(const char *p, const struct proxy_head *h)
{
	size_t room = PROXY_REWRITE_MAX(h->len);
	char *out = malloc(room);
	int w = proxy_http_rewrite(p, h->len, out, room);
	assert(w > 0 && (size_t)w <= room);
	struct proxy_head again;
	assert(proxy_http_head(out, (size_t)w, &again) == w);
	assert(!again.token_given);
	assert((again.host == NULL) == (h->host == NULL));
	assert(!h->host || (again.host_len == h->host_len && !memcmp(again.host, h->host, h->host_len)));
	assert(again.target_len == h->target_len && !memcmp(again.target, h->target, h->target_len));
	assert(again.body == h->body && again.length == h->length && again.upgrade == h->upgrade);
	free(out);

	char loc[256];
	proxy_http_location(h->target, h->target_len, loc, sizeof(loc));
	size_t n = strlen(loc);
	assert(n >= 1 && n < sizeof(loc) && loc[0] == '/');
	assert(n == 1 || (loc[1] != '/' && loc[1] != '\\'));
	for (size_t i = 0; i < n; i++)
		assert(loc[i] > 0x20 && loc[i] < 0x7f);
}

/* The body of h at p[0, len) read whole and in pieces of step bytes: *used of it is body. */
static int check_body(const struct proxy_head *h, const char *p, size_t len, size_t step, size_t *used)
{
	struct proxy_body whole, parts;
	size_t took_whole = 0, pos = 0, have = 0;
	proxy_http_body_start(&whole, h);
	proxy_http_body_start(&parts, h);
	int rw = proxy_http_body(&whole, p, len, &took_whole);
	assert(took_whole <= len);
	int rp;
	do {
		have = have + step < len ? have + step : len;
		size_t took = 0;
		rp = proxy_http_body(&parts, p + pos, have - pos, &took);
		assert(took <= have - pos);
		pos += took;
	} while (rp == 0 && have < len);
	assert(rp == rw);
	assert(rw < 0 || pos == took_whole);
	*used = took_whole;
	return rw;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] + 1;
	char *buf = malloc(size - 1 ? size - 1 : 1); /* exactly its size: nothing past it is read */
	memcpy(buf, data + 1, size - 1);
	size_t len = size - 1, at = 0;
	for (int requests = 0; at < len && requests < 64; requests++) {
		struct proxy_head h;
		int n = proxy_http_head(buf + at, len - at, &h);
		if (n <= 0)
			break;
		check_head(buf + at, &h);
		at += (size_t)n;
		size_t used = 0;
		if (check_body(&h, buf + at, len - at, step, &used) != 1)
			break;
		at += used;
	}

	struct proxy_status whole = { 0 }, bytes = { 0 };
	int vw = proxy_http_status(&whole, buf, len), vb = 0;
	for (size_t i = 0; i < len && vb == 0; i++)
		vb = proxy_http_status(&bytes, buf + i, 1);
	assert(vw == vb);
	free(buf);
	return 0;
}

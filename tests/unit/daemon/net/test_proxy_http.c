/*
 * tests/unit/daemon/net/test_proxy_http.c - the port proxy's reading of requests
 * (daemon/net/proxy_http.c): heads taken and refused, the token taken out, bodies framed,
 * the redirect kept on this host, and a 101 told from other answers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/net/proxy_http.h"

static int head(const char *s, struct proxy_head *h)
{
	return proxy_http_head(s, strlen(s), h);
}

static void heads_taken(void **state)
{
	(void)state;
	struct proxy_head h;
	const char *r = "GET /a?x=1&space_token=q1 HTTP/1.1\r\nHost: 8000-0123456789ab.localhost\r\n"
			"Cookie: a=1; space_token=c1\r\nX-Space-Token: t1\r\n\r\nNEXT";
	assert_int_equal(head(r, &h), (int)strlen(r) - 4);
	assert_memory_equal(h.host, "8000-0123456789ab.localhost", h.host_len);
	assert_true(h.token_given);
	assert_string_equal(h.token, "t1"); /* the header wins over the cookie */
	assert_true(h.qtoken_given);
	assert_string_equal(h.qtoken, "q1");
	assert_int_equal(h.body, PROXY_BODY_NONE);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: x\r\nCookie: space_token=c2\r\n\r\n", &h) > 0, 1);
	assert_string_equal(h.token, "c2");
	assert_int_equal(head("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n", &h) > 0, 1);
	assert_int_equal(h.body, PROXY_BODY_LENGTH);
	assert_int_equal(h.length, 12);
	assert_int_equal(head("POST / HTTP/1.0\r\nTransfer-Encoding: Chunked\r\nUpgrade: websocket\r\n\r\n", &h) > 0, 1);
	assert_int_equal(h.body, PROXY_BODY_CHUNKED);
	assert_true(h.upgrade);
	assert_null(h.host);
	assert_int_equal(head("GET / HTTP/1.1\r\nHost: x\r\n", &h), 0); /* not all in yet */
	assert_int_equal(head("GET / HTTP/1.1\r\nX-Space-Token: not a token\r\n\r\n", &h) > 0, 1);
	assert_true(h.token_given);
	assert_string_equal(h.token, "");
}

static void heads_refused(void **state)
{
	(void)state;
	struct proxy_head h;
	static const char *const bad[] = {
		"GET / HTTP/1.1\nHost: x\r\n\r\n",                       /* a bare LF */
		"GET / HTTP/1.1\r\nHost : x\r\n\r\n",                    /* a space before the colon */
		"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",          /* a folded line */
		"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",          /* two Hosts */
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1 \r\n\r\n",
		"CONNECT x:1 HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n", "\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(head(bad[i], &h), -EINVAL);
	assert_int_equal(head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &h), -ENOSYS);
	char big[PROXY_HEAD_MAX];
	memset(big, 'a', sizeof(big));
	assert_int_equal(proxy_http_head(big, sizeof(big), &h), -E2BIG);
}

static void the_token_is_taken_out(void **state)
{
	(void)state;
	struct proxy_head h;
	const char *r = "GET / HTTP/1.1\r\nHost: x\r\nX-Space-Token: t\r\ne2b-traffic-access-token: t\r\n"
			"Cookie: a=1;space_token=t;  b=2\r\nCookie: space_token=t\r\nAccept: */*\r\n\r\n";
	int n = head(r, &h);
	assert_true(n > 0);
	char out[PROXY_REWRITE_MAX(512)];
	int w = proxy_http_rewrite(r, (size_t)n, out, sizeof(out));
	assert_true(w > 0);
	const char *want = "GET / HTTP/1.1\r\nHost: x\r\nCookie: a=1; b=2\r\nAccept: */*\r\n\r\n";
	assert_int_equal(w, (int)strlen(want));
	assert_memory_equal(out, want, strlen(want));
	assert_int_equal(proxy_http_rewrite(r, (size_t)n, out, 10), -ENOSPC);
}

static void the_redirect_stays_on_this_host(void **state)
{
	(void)state;
	char out[256];
	static const char *const cases[][2] = {
		{ "/page?x=1&space_token=t", "/page?x=1" }, { "/?space_token=t", "/" },
		{ "//evil.tld/?space_token=t", "/" },       { "/\\evil.tld/?space_token=t", "/" },
		{ "http://evil.tld/?space_token=t", "/" },  { "?space_token=t", "/" },
		{ "/a/b?space_token=t&y=2", "/a/b?y=2" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		proxy_http_location(cases[i][0], strlen(cases[i][0]), out, sizeof(out));
		assert_string_equal(out, cases[i][1]);
	}
}

/* Feeds body bytes s after head r to the end of the body: what was taken, or the error. */
static int body(const char *r, const char *s, size_t *took)
{
	struct proxy_head h;
	struct proxy_body b;
	assert_true(head(r, &h) > 0);
	proxy_http_body_start(&b, &h);
	return proxy_http_body(&b, s, strlen(s), took);
}

static void bodies_are_framed(void **state)
{
	(void)state;
	size_t took;
	assert_int_equal(body("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n", "abcGET", &took), 1);
	assert_int_equal(took, 3);
	assert_int_equal(body("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", "abc", &took), 0);
	assert_int_equal(took, 3);
	const char *ch = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	assert_int_equal(body(ch, "3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\nGET", &took), 1);
	assert_int_equal(took, strlen("3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n"));
	assert_int_equal(body(ch, "3\r\nab", &took), 0); /* more to come */
	assert_int_equal(took, 5);
	assert_int_equal(body(ch, "3\r\nabcX\r\n", &took), -EINVAL);    /* no CRLF after the chunk */
	assert_int_equal(body(ch, "0\r\nX-Space-Token: t\r\n\r\n", &took), -EINVAL); /* trailers */
	assert_int_equal(body(ch, "zz\r\n", &took), -EINVAL);
	assert_int_equal(body("GET / HTTP/1.1\r\n\r\n", "GET", &took), 1);
	assert_int_equal(took, 0);
}

static void a_101_is_told_from_other_answers(void **state)
{
	(void)state;
	struct proxy_status s = { 0 };
	const char *a = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n\r\n";
	assert_int_equal(proxy_http_status(&s, a, 20), 0);
	assert_int_equal(proxy_http_status(&s, a + 20, strlen(a) - 20), 1);
	struct proxy_status t = { 0 };
	assert_int_equal(proxy_http_status(&t, "HTTP/1.1 200 OK\r\n", 17), -1);
	struct proxy_status u = { 0 };
	assert_int_equal(proxy_http_status(&u, "SSH-2.0-OpenSSH\r\n", 17), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(heads_taken),
		cmocka_unit_test(heads_refused),
		cmocka_unit_test(the_token_is_taken_out),
		cmocka_unit_test(the_redirect_stays_on_this_host),
		cmocka_unit_test(bodies_are_framed),
		cmocka_unit_test(a_101_is_told_from_other_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

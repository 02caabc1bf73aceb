/*
 * tests/unit/e2b/test_query.c - E2B's list query (e2b/query.c): the metadata filter as the SDKs
 * send it (each key and value percent-encoded once more), '+' a space only before the first
 * decoding, escapes that are not '%' and two hex digits kept, and filters that are malformed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "e2b/query.h"

/* The filter of q as compact JSON (keys sorted), or "NULL". */
static char *filter(const char *q)
{
	json_t *f = query_metadata(q);
	char *s = f ? json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS) : strdup("NULL");
	json_decref(f);
	return s;
}

static void expect(const char *q, const char *json)
{
	char *s = filter(q);
	assert_string_equal(s, json);
	free(s);
}

static void test_pairs(void **state)
{
	expect(NULL, "{}");
	expect("", "{}");
	expect("a=1", "{\"a\":\"1\"}");
	expect("a=1&b=2", "{\"a\":\"1\",\"b\":\"2\"}");
	expect("a=1&&b=2&", "{\"a\":\"1\",\"b\":\"2\"}"); /* empty pairs are skipped */
	expect("=v", "{\"\":\"v\"}");
	expect("k=", "{\"k\":\"\"}");
	expect("a=1&a=2", "{\"a\":\"2\"}");
	expect("a=b=c", "{\"a\":\"b=c\"}"); /* the first '=' splits */
}

static void test_malformed(void **state)
{
	expect("a", "NULL");
	expect("a=1&b", "NULL");
	expect("&x&", "NULL");
}

static void test_decoded_twice(void **state)
{
	/* as the SDK sends {"user name": "a&b=c"}: encoded once by it, once more for the query */
	expect("user%2520name=a%2526b%253Dc", "{\"user name\":\"a&b=c\"}");
	expect("k%253D=v", "{\"k=\":\"v\"}");
	expect("a%252Bb=1", "{\"a+b\":\"1\"}");
	expect("%2541=%2561", "{\"A\":\"a\"}"); /* %25 is '%': the second decoding takes it */
	expect("caf%25C3%25A9=%25E2%2582%25AC", "{\"café\":\"€\"}");
}

static void test_plus(void **state)
{
	expect("a+b=c+d", "{\"a b\":\"c d\"}");
	expect("a%2Bb=1", "{\"a+b\":\"1\"}");  /* a '+' the first decoding makes stays one */
	expect("a%252B=1", "{\"a+\":\"1\"}");
}

static void test_bad_escapes_kept(void **state)
{
	expect("a%zz=1", "{\"a%zz\":\"1\"}");
	expect("a%=%", "{\"a%\":\"%\"}");
	expect("a%4=%4g", "{\"a%4\":\"%4g\"}");
	expect("%%41=x", "{\"%A\":\"x\"}");
	expect("%+41=x", "{\"% 41\":\"x\"}");
}

static void test_what_json_cannot_hold(void **state)
{
	/* a value that is not UTF-8 is left out; a NUL ends a key or value where it is */
	expect("k=%25ff", "{}");
	expect("k=a%2500b", "{\"k\":\"a\"}");
}

static void test_unescape(void **state)
{
	char s[32];
	strcpy(s, "a+b%20c%2Bd%zz%");
	query_unescape(s, false);
	assert_string_equal(s, "a+b c+d%zz%");
	strcpy(s, "a+b%20c%2Bd%zz%");
	query_unescape(s, true);
	assert_string_equal(s, "a b c+d%zz%");
	strcpy(s, "%41%4");
	query_unescape(s, false);
	assert_string_equal(s, "A%4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pairs),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_decoded_twice),
		cmocka_unit_test(test_plus),
		cmocka_unit_test(test_bad_escapes_kept),
		cmocka_unit_test(test_what_json_cannot_hold),
		cmocka_unit_test(test_unescape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/fuzz/fuzz_e2b_route.c - the E2B front's path matcher (e2b/route.c) and its list's
 * metadata filter (e2b/query.c) over arbitrary bytes.
 *
 * The input's first byte picks the check; the rest, cut at its first NUL, is:
 *  - even: a path, matched against patterns like the front's tables (literal segments, one or
 *    two "{name}" segments with and without a bound, a "{name*}" rest) under every method. A
 *    match's parameters put back into its pattern give the path again; a "{name}" is never
 *    empty, never holds '/' and is within its bound; route_find answers the first route whose
 *    method and pattern take the path. The same bytes as a metadata filter give NULL or an
 *    object of strings.
 *  - odd: "PATTERN\nPATH": any pattern, however malformed, is matched without reading or
 *    writing out of bounds, and a match of a path with no '{' in its pattern is equality.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "e2b/query.h"
#include "e2b/route.h"

static enum MHD_Result none(struct req *r, const struct route_args *a)
{
	return MHD_NO;
}

static const struct route TABLE[] = {
	{ "POST", "/sandboxes", none, 8 },
	{ "GET", "/sandboxes/metrics", none, 8 },
	{ "GET", "/templates/{tpl}/files/{hash}", none, 0 },
	{ "POST", "/v2/templates/{tpl}/builds/{build}", none, 0 },
	{ "GET", "/templates/aliases/{alias}", none, 8 },
	{ "DELETE", "/templates/{id}", none, 8 },
	{ "GET", "/sandboxes/{id}", none, 8 },
	{ "POST", "/sandboxes/{id}/timeout", none, 8 },
	{ NULL, "/sandboxes/{id}", none, 8 },
	{ NULL, "/sandboxes/{id}/{rest*}", none, 8 },
	{ "POST", "/process.Process/{method*}", none, 0 },
	{ NULL, "/health", none, 0 },
};
#define TABLE_N (sizeof(TABLE) / sizeof(TABLE[0]))
static const char *const METHODS[] = { "GET", "POST", "PUT", "DELETE", "PATCH" };

/* pattern with a's parameters put back, into dst (ROUTE_PATH_MAX * 2 bytes); each "{name}"
 * checked against max. */
static void rebuild(const char *pattern, size_t max, const struct route_args *a, char *dst)
{
	size_t k = 0, w = 0;
	for (const char *p = pattern; *p;) {
		if (*p != '{') {
			dst[w++] = *p++;
			continue;
		}
		const char *close = strchr(p, '}');
		const char *v = a->param[k++];
		assert(close && v);
		size_t len = strlen(v);
		if (close[-1] != '*') {
			assert(len > 0 && !strchr(v, '/') && (!max || len <= max));
		}
		memcpy(dst + w, v, len);
		w += len;
		p = close + 1;
	}
	dst[w] = '\0';
}

static void check_path(const char *path)
{
	static char again[ROUTE_PATH_MAX * 2];
	struct route_args a;
	bool match[TABLE_N];
	for (size_t i = 0; i < TABLE_N; i++) {
		memset(&a, 0, sizeof(a));
		match[i] = route_match(TABLE[i].pattern, TABLE[i].max, path, &a);
		if (!match[i])
			continue;
		assert(strlen(path) < ROUTE_PATH_MAX);
		rebuild(TABLE[i].pattern, TABLE[i].max, &a, again);
		assert(strcmp(again, path) == 0);
	}
	for (size_t m = 0; m < sizeof(METHODS) / sizeof(METHODS[0]); m++) {
		const struct route *rt = route_find(TABLE, TABLE_N, METHODS[m], path, &a);
		size_t first = TABLE_N;
		for (size_t i = 0; i < TABLE_N && first == TABLE_N; i++)
			if (match[i] && (!TABLE[i].method || strcmp(TABLE[i].method, METHODS[m]) == 0))
				first = i;
		assert(first == TABLE_N ? rt == NULL : rt == &TABLE[first]);
	}
}

static void check_query(const char *q)
{
	json_t *f = query_metadata(q);
	const char *k;
	json_t *v;
	if (!f)
		return;
	assert(json_is_object(f));
	json_object_foreach(f, k, v) {
		assert(json_is_string(v));
	}
	json_decref(f);
}

static void check_pattern(char *text)
{
	struct route_args a;
	char *nl = strchr(text, '\n');
	if (!nl)
		return;
	*nl = '\0';
	const char *pattern = text, *path = nl + 1;
	bool m = route_match(pattern, (size_t)(unsigned char)path[0] % 8, path, &a);
	if (!strchr(pattern, '{'))
		assert(m == (strcmp(pattern, path) == 0 && strlen(path) < ROUTE_PATH_MAX));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (n == 0)
		return 0;
	char *text = malloc(n);
	memcpy(text, data + 1, n - 1);
	text[n - 1] = '\0'; /* cut at its first NUL, if any, by the string functions */
	if (data[0] & 1) {
		check_pattern(text);
	} else {
		check_path(text);
		check_query(text);
	}
	free(text);
	return 0;
}

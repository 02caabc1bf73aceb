/*
 * tests/unit/lib/host/dockerfile_check.c - what the Dockerfile parser's tests share
 * (dockerfile_check.h): parsing a text that must parse or must be refused, reading a step's
 * pairs and environment, and strings made for a test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/host/dockerfile.h"
#include "tests/unit/lib/host/dockerfile_check.h"

int parse_with(const char *text, size_t len, const char *const *args, size_t n_args, struct dockerfile **df,
		      struct err *e)
{
	struct dockerfile_input in = { .text = text, .len = len, .build_args = args, .n_build_args = n_args };
	memset(e, 0, sizeof(*e));
	int rc = dockerfile_parse(&in, df, e);
	if (rc) {
		assert_null(*df);
		assert_int_equal(e->kind, ERR_INVALID);
	}
	return rc;
}

/* text parsed with build arguments; it must parse. */
struct dockerfile *good_args(const char *text, const char *const *args, size_t n_args)
{
	struct dockerfile *df;
	struct err e;
	int rc = parse_with(text, strlen(text), args, n_args, &df, &e);
	if (rc)
		fail_msg("%s: %s", text, e.msg);
	return df;
}

struct dockerfile *good(const char *text)
{
	return good_args(text, NULL, 0);
}

/* text (len bytes) refused with rc, its message naming line (0: none) and holding needle. */
void refused_len(const char *text, size_t len, const char *const *args, size_t n_args, int rc, int line,
			const char *needle)
{
	struct dockerfile *df;
	struct err e;
	int got = parse_with(text, len, args, n_args, &df, &e);
	if (got != rc || dockerfile_err_line(&e) != line || !strstr(e.msg, needle))
		fail_msg("%.60s: got %d \"%s\", wanted %d at line %d with \"%s\"", text, got, e.msg, rc, line, needle);
}

void refused(const char *text, int rc, int line, const char *needle)
{
	refused_len(text, strlen(text), NULL, 0, rc, line, needle);
}

const char *value_of(const struct dockerfile_pairs *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->kv[i].key, key))
			return p->kv[i].value;
	fail_msg("no %s", key);
	return NULL;
}

const char *env_of(const struct dockerfile_ctx *c, const char *key)
{
	for (size_t i = 0; i < c->n_env; i++)
		if (!strcmp(c->env[i]->key, key))
			return c->env[i]->value;
	return NULL;
}

/* A string of n bytes c (static storage rotates over four). */
char *rep(char c, size_t n)
{
	static char *bufs[4];
	static int k;
	k = (k + 1) % 4;
	free(bufs[k]);
	bufs[k] = malloc(n + 1);
	memset(bufs[k], c, n);
	bufs[k][n] = '\0';
	return bufs[k];
}

/* printf into a string (static storage rotates over four). */
char *fmt(const char *f, ...)
{
	static char *bufs[4];
	static int k;
	va_list ap;
	k = (k + 1) % 4;
	free(bufs[k]);
	va_start(ap, f);
	assert_true(vasprintf(&bufs[k], f, ap) >= 0);
	va_end(ap);
	return bufs[k];
}

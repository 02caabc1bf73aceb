/*
 * tests/unit/lib/host/dockerfile_check.h - what the Dockerfile parser's tests share:
 * each test file links dockerfile_check.c (tests/unit/unit.mk).
 */
#ifndef SPACE_TESTS_DOCKERFILE_CHECK_H
#define SPACE_TESTS_DOCKERFILE_CHECK_H

#include <stddef.h>

#include "lib/host/dockerfile.h"

/* dockerfile_parse of text (len bytes) with build arguments; a refusal must be a 400
 * invalid_argument with no result. Returns what dockerfile_parse returned. */
int parse_with(const char *text, size_t len, const char *const *args, size_t n_args, struct dockerfile **df,
	       struct err *e);

/* text parsed with build arguments; it must parse. */
struct dockerfile *good_args(const char *text, const char *const *args, size_t n_args);
/* text parsed; it must parse. */
struct dockerfile *good(const char *text);

/* text (len bytes) refused with rc, its message naming line (0: none) and holding needle. */
void refused_len(const char *text, size_t len, const char *const *args, size_t n_args, int rc, int line,
		 const char *needle);
/* The same for a NUL-terminated text without build arguments. */
void refused(const char *text, int rc, int line, const char *needle);

/* The value of key among p (the test fails when there is none). */
const char *value_of(const struct dockerfile_pairs *p, const char *key);
/* The value of key in c's environment, or NULL. */
const char *env_of(const struct dockerfile_ctx *c, const char *key);

/* A string of n bytes c (static storage rotates over four). */
char *rep(char c, size_t n);
/* printf into a string (static storage rotates over four). */
char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

#endif

/*
 * tests/fuzz/fuzz_dockerfile.c - lib/host/dockerfile.c: the Dockerfile a user sends to
 * build a template, with its build arguments.
 *
 * The first byte says how many build arguments come first (its value modulo 4), each a line
 * "NAME=VALUE" split off the front, and whether a base environment is given (bit 2); the rest
 * is the Dockerfile, in a buffer of exactly its size (nothing after it is read, no NUL needed).
 * For every input:
 *  - the answer is 0, or -EINVAL, -ENOTSUP or -E2BIG with a 400 error whose line is within
 *    the file, and no result;
 *  - a result holds 1 to DOCKERFILE_STEPS_MAX steps, on increasing lines, each with a text
 *    within DOCKERFILE_LINE_MAX, at most one FROM, sources inside the context and absolute
 *    destinations and working directories, exec forms NULL-terminated, labels once each;
 *  - each step's canonical text is as long as its size says, NUL-terminated when cut, and the
 *    same when the input is parsed again;
 *  - nothing leaks (the sanitizer's leak check).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/host/dockerfile.h"

static bool in_context(const char *p)
{
	if (p[0] == '/' || !*p)
		return false;
	for (const char *s = p; *s; s += strcspn(s, "/") + (s[strcspn(s, "/")] == '/')) {
		size_t n = strcspn(s, "/");
		if ((n == 2 && !strncmp(s, "..", 2)) || (n == 1 && s[0] == '.' && strcmp(p, ".")) || n == 0)
			return false;
	}
	return strlen(p) <= DOCKERFILE_PATH_MAX;
}

static bool absolute(const char *p)
{
	return p && p[0] == '/' && strlen(p) <= DOCKERFILE_PATH_MAX && (!strcmp(p, "/") || p[strlen(p) - 1] != '/') &&
	       !strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../");
}

static void check(const struct dockerfile *df, size_t lines)
{
	size_t froms = 0;
	assert(df->n_steps >= 1 && df->n_steps <= DOCKERFILE_STEPS_MAX);
	for (size_t i = 0; i < df->n_steps; i++) {
		const struct dockerfile_step *s = &df->steps[i];
		assert(s->line >= 1 && (size_t)s->line <= lines);
		assert(i == 0 || s->line > df->steps[i - 1].line);
		assert(*s->text && strlen(s->text) <= DOCKERFILE_LINE_MAX);
		assert(absolute(s->ctx.workdir));
		for (size_t k = 0; k < s->ctx.n_env; k++)
			assert(s->ctx.env[k]->key && s->ctx.env[k]->value);
		switch (s->kind) {
		case DOCKERFILE_FROM:
			froms++;
			assert(s->from.base != DOCKERFILE_BASE_DEFAULT && s->from.ref);
			break;
		case DOCKERFILE_RUN:
			assert(!s->run.shell != !s->run.argv);
			assert(!s->run.argv || (s->run.argc >= 1 && !s->run.argv[s->run.argc]));
			break;
		case DOCKERFILE_COPY:
		case DOCKERFILE_ADD:
			assert(s->copy.n_src >= 1 && !s->copy.src[s->copy.n_src]);
			for (size_t k = 0; k < s->copy.n_src; k++)
				assert(in_context(s->copy.src[k]));
			assert(absolute(s->copy.dest));
			assert(s->copy.chmod >= -1 && s->copy.chmod <= 07777);
			break;
		case DOCKERFILE_WORKDIR:
			assert(absolute(s->workdir));
			break;
		case DOCKERFILE_USER:
			assert(*s->user.user && strlen(s->user.user) <= DOCKERFILE_USER_MAX);
			break;
		default:
			assert(s->kind <= DOCKERFILE_LABEL && s->pairs.n >= 1);
			for (size_t k = 0; k < s->pairs.n; k++)
				assert(strlen(s->pairs.kv[k].key) <= DOCKERFILE_KEY_MAX &&
				       (!s->pairs.kv[k].value || strlen(s->pairs.kv[k].value) <= DOCKERFILE_VALUE_MAX));
		}
		size_t n = dockerfile_canonical(s, NULL, 0);
		char *c = malloc(n + 1), cut[16];
		assert(dockerfile_canonical(s, c, n + 1) == n && strlen(c) == n);
		assert(dockerfile_canonical(s, cut, sizeof(cut)) == n && strlen(cut) == (n < 16 ? n : 15));
		assert(!strncmp(c, "kind=", 5));
		free(c);
	}
	assert(froms <= 1 && (froms == 1) == (df->from.base != DOCKERFILE_BASE_DEFAULT));
	assert(df->n_labels <= DOCKERFILE_LABELS_MAX);
	for (size_t i = 0; i < df->n_labels; i++)
		for (size_t k = 0; k < i; k++)
			assert(strcmp(df->labels[i]->key, df->labels[k]->key));
	assert(!df->workdir || absolute(df->workdir));
}

/* Both results' steps have the same canonical texts. */
static void same(const struct dockerfile *a, const struct dockerfile *b)
{
	assert(a->n_steps == b->n_steps);
	for (size_t i = 0; i < a->n_steps; i++) {
		size_t n = dockerfile_canonical(&a->steps[i], NULL, 0);
		char *x = malloc(n + 1), *y = malloc(n + 1);
		assert(dockerfile_canonical(&b->steps[i], y, n + 1) == n);
		dockerfile_canonical(&a->steps[i], x, n + 1);
		assert(!memcmp(x, y, n + 1));
		free(x);
		free(y);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const base[] = { "PATH=/usr/bin:/bin", "HOME=/root" };
	char *args[3] = { NULL, NULL, NULL };
	size_t n_args = 0, pos = 1;
	if (size < 1)
		return 0;
	for (size_t i = 0; i < (size_t)data[0] % 4 && i < 3 && pos < size; i++) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t n = nl ? (size_t)(nl - data - pos) : size - pos;
		args[n_args] = malloc(n + 1);
		memcpy(args[n_args], data + pos, n);
		args[n_args++][n] = '\0';
		pos += n + (nl != NULL);
	}
	size_t len = size - pos, lines = 1;
	char *text = malloc(len ? len : 1); /* exactly its size */
	memcpy(text, data + pos, len);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	struct dockerfile_input in = { .text = text, .len = len, .build_args = (const char *const *)args,
				       .n_build_args = n_args, .base_env = data[0] & 4 ? base : NULL,
				       .n_base_env = data[0] & 4 ? 2 : 0 };
	struct dockerfile *df = (struct dockerfile *)1, *again = NULL;
	struct err e = { 0 }, e2 = { 0 };
	int rc = dockerfile_parse(&in, &df, &e);
	if (rc) {
		assert(rc == -EINVAL || rc == -ENOTSUP || rc == -E2BIG);
		assert(!df && e.kind == ERR_INVALID && *e.msg);
		assert(dockerfile_err_line(&e) >= 0 && (size_t)dockerfile_err_line(&e) <= lines);
	} else {
		check(df, lines);
		assert(dockerfile_parse(&in, &again, &e2) == 0);
		same(df, again);
		dockerfile_free(again);
		dockerfile_free(df);
	}
	free(text);
	for (size_t i = 0; i < n_args; i++)
		free(args[i]);
	return 0;
}

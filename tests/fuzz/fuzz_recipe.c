/*
 * tests/fuzz/fuzz_recipe.c - e2b/recipe.c: the template an E2B SDK sends to the front (JSON:
 * fromImage or fromTemplate, steps, startCmd, readyCmd), turned into a Dockerfile that
 * space-build parses with lib/host/dockerfile.c.
 *
 * The input is the JSON body. For every input:
 *  - the answer is 0, or -EINVAL with a message, and nothing is left allocated on failure;
 *  - a Dockerfile made from it that the parser takes is the template and nothing else: one
 *    instruction per line the recipe wrote (no value can start another), the start and ready
 *    commands, every ENV value and the owner's label read back exactly as given;
 *  - nothing leaks (the sanitizer's leak check).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "lib/host/dockerfile.h"
#include "e2b/recipe.h"

#define OWNER "0123456789abcdef"

static const char *same(const char *name)
{
	return name;
}

static const char *label(const struct dockerfile *df, const char *key)
{
	for (size_t i = 0; i < df->n_labels; i++)
		if (strcmp(df->labels[i]->key, key) == 0)
			return df->labels[i]->value;
	return NULL;
}

static const char *env(const struct dockerfile *df, const char *key)
{
	for (size_t i = 0; i < df->n_env; i++)
		if (strcmp(df->env[i]->key, key) == 0)
			return df->env[i]->value;
	return NULL;
}

/* The last value the template's ENV steps give name, or NULL. */
static const char *last_env(const json_t *tpl, const char *name)
{
	const char *v = NULL;
	size_t i;
	const json_t *s;
	json_array_foreach(json_object_get(tpl, "steps"), i, s) {
		const json_t *args = json_object_get(s, "args");
		if (strcmp(json_string_value(json_object_get(s, "type")) ?: "", "ENV") != 0)
			continue;
		for (size_t k = 0; k + 1 < json_array_size(args); k += 2)
			if (strcmp(json_string_value(json_array_get(args, k)), name) == 0)
				v = json_string_value(json_array_get(args, k + 1));
	}
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *tpl = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!tpl)
		return 0;
	struct recipe r;
	char msg[512] = "";
	int rc = recipe_dockerfile(tpl, OWNER, same, &r, msg, sizeof(msg));
	assert(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc < 0) {
		assert(*msg && !r.dockerfile && !r.step_of_line && !r.hashes);
		json_decref(tpl);
		return 0;
	}
	size_t lines = 0;
	for (const char *p = r.dockerfile; *p; p++)
		lines += *p == '\n';
	assert(lines == r.n_lines);
	struct dockerfile_input in = { .text = r.dockerfile, .len = strlen(r.dockerfile) };
	struct dockerfile *df = NULL;
	struct err e = { 0 };
	if (dockerfile_parse(&in, &df, &e) == 0) {
		assert(df->n_steps == r.n_lines);
		const char *start = json_string_value(json_object_get(tpl, "startCmd"));
		const char *ready = json_string_value(json_object_get(tpl, "readyCmd"));
		assert(start ? df->start && strcmp(df->start, start) == 0 : !df->start);
		assert(ready ? df->ready && strcmp(df->ready, ready) == 0 : !df->ready);
		assert(strcmp(label(df, RECIPE_OWNER_LABEL), OWNER) == 0);
		for (size_t i = 0; i < df->n_env; i++) {
			const char *want = last_env(tpl, df->env[i]->key);
			assert(want && strcmp(env(df, df->env[i]->key), want) == 0);
		}
	}
	dockerfile_free(df);
	recipe_free(&r);
	json_decref(tpl);
	return 0;
}

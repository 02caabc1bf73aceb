/*
 * e2b/recipe.h - an E2B template (the body of the SDK's POST /v2/templates/{id}/builds/{bid}:
 * fromImage or fromTemplate, steps, startCmd, readyCmd) as a build context for spaced's POST
 * /v1/templates: a Dockerfile of space's subset (docs/templates.md) and, under <hash>/, the
 * files each COPY step's upload held (docs/e2b.md, "Building templates").
 *
 * Order of calls: recipe_dockerfile, then recipe_archive with its text, then recipe_free.
 */
#ifndef SPACE_E2B_RECIPE_H
#define SPACE_E2B_RECIPE_H

#include <stddef.h>

#include <jansson.h>

#define RECIPE_STEPS_MAX 256         /* steps of one template */
#define RECIPE_HASH_MAX 64           /* hex digits of a COPY step's filesHash (SHA-256) */
#define RECIPE_OWNER_LABEL "e2b.owner" /* the label naming the key that built a template */
/* The image E2B's Template() starts from when it names none, and fromBaseImage's: space's
 * default template stands for it. */
#define RECIPE_E2B_BASE_IMAGE "e2bdev/base"

struct recipe {
	char *dockerfile;            /* the text, NUL-terminated */
	/* step_of_line[L] is the E2B step Dockerfile line L (1-based) does: 0 the base, i the
	 * i-th of the template's steps, -1 the end (start, ready, owner) */
	int *step_of_line;
	size_t n_lines;
	char **hashes;               /* the COPY steps' filesHash, each once */
	size_t n_hashes;
};

/* The Dockerfile of template tpl, built by the key whose owner id (builds_owner) is owner and
 * which names base templates through base (E2B's name to spaced's, as create does), into *out.
 * 0, or -EINVAL with msg (n bytes) saying which step and why, or -ENOMEM. */
int recipe_dockerfile(const json_t *tpl, const char *owner, const char *(*base)(const char *), struct recipe *out,
		      char *msg, size_t n);
/* Writes to fd a tar of r's Dockerfile and, under <hash>/, the entries of each upload
 * <dir>/<owner>-<hash> (a tar, gzip'd or not, as the SDK sent it). 0, or a negative errno with
 * msg saying why (-ENOENT: a COPY step's files were never uploaded). */
int recipe_archive(const struct recipe *r, const char *dir, const char *owner, int fd, char *msg, size_t n);
void recipe_free(struct recipe *r);

#endif

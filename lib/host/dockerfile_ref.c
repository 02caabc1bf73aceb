/*
 * lib/host/dockerfile_ref.c - what FROM may name, checked part by part: a template's
 * name and tag (space:NAME[:TAG]) and an image reference ([REGISTRY/]REPOSITORY[:TAG][@DIGEST]),
 * with Docker's rules for each part and the limits of dockerfile.h.
 */
#include "lib/host/dockerfile_int.h"

#include <errno.h>
#include <stdlib.h>

/* NAME or TAG of space:NAME[:TAG]. */
int df_template_part(struct parser *p, const char *ref, const char *what, const char *s, size_t n)
{
	if (n > DOCKERFILE_TEMPLATE_NAME_MAX)
		return df_fail(p, E2BIG, "FROM %s: a template's %s is longer than %d bytes", SHOW(ref), what,
			       DOCKERFILE_TEMPLATE_NAME_MAX);
	bool ok = n && is_alnum(s[0]);
	for (size_t i = 1; ok && i < n; i++)
		ok = is_alnum(s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-';
	return ok ? 0 : df_fail(p, EINVAL, "FROM %s: a template's %s is [A-Za-z0-9][A-Za-z0-9._-]*", SHOW(ref), what);
}

/* [a-z0-9]+ joined by '.', '_', "__" or a run of '-': a component of an image's repository. */
static bool repo_part(const char *s, size_t n)
{
	size_t i = 0;
	for (;;) {
		size_t start = i;
		while (i < n && (is_lower(s[i]) || is_digit(s[i])))
			i++;
		if (i == start)
			return false;
		if (i == n)
			return true;
		if (s[i] == '_' && i + 1 < n && s[i + 1] == '_')
			i += 2;
		else if (s[i] == '.' || s[i] == '_')
			i++;
		else if (s[i] == '-')
			i += strspn(s + i, "-");
		else
			return false;
	}
}

/* host[:port], the host's labels [A-Za-z0-9] with '-' inside. */
static bool registry_ok(const char *s)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	if (colon) {
		size_t d = strlen(colon + 1);
		int port = atoi(colon + 1);
		if (!d || d > 5 || strspn(colon + 1, "0123456789") != d || port < 1 || port > 65535)
			return false;
	}
	for (size_t i = 0;; i++) {
		size_t l = 0;
		while (i + l < n && s[i + l] != '.')
			l++;
		if (!l || !is_alnum(s[i]) || !is_alnum(s[i + l - 1]))
			return false;
		for (size_t k = i; k < i + l; k++)
			if (!is_alnum(s[k]) && s[k] != '-')
				return false;
		i += l;
		if (i == n)
			return true;
	}
}

int df_image_ref(struct parser *p, const char *ref, struct dockerfile_from *f)
{
	const char *c0;
	int rc = df_mem_dup(p, ref, strlen(ref), &c0);
	if (rc)
		return rc;
	char *c = (char *)c0, *at = strchr(c, '@');
	if (at) {
		*at = '\0';
		f->digest = at + 1;
		if (strncmp(f->digest, "sha256:", 7) || strlen(f->digest) != 7 + 64 ||
		    strspn(f->digest + 7, "0123456789abcdef") != 64)
			return df_fail(p, EINVAL, "FROM %s: a digest is sha256: and 64 lower-case hex digits",
				       SHOW(ref));
	}
	char *slash = strrchr(c, '/'), *colon = strrchr(c, ':');
	if (colon && (!slash || colon > slash)) {
		*colon = '\0';
		f->tag = colon + 1;
		size_t n = strlen(f->tag);
		if (n > DOCKERFILE_IMAGE_TAG_MAX)
			return df_fail(p, E2BIG, "FROM %s: a tag is longer than %d bytes", SHOW(ref),
				       DOCKERFILE_IMAGE_TAG_MAX);
		bool ok = n && (is_alnum(f->tag[0]) || f->tag[0] == '_');
		for (size_t i = 1; ok && i < n; i++)
			ok = is_alnum(f->tag[i]) || strchr("_.-", f->tag[i]);
		if (!ok)
			return df_fail(p, EINVAL, "FROM %s: a tag is [A-Za-z0-9_][A-Za-z0-9_.-]*", SHOW(ref));
	}
	if (strlen(c) > DOCKERFILE_IMAGE_NAME_MAX)
		return df_fail(p, E2BIG, "FROM %s: an image's name is longer than %d bytes", SHOW(ref),
			       DOCKERFILE_IMAGE_NAME_MAX);
	char *first = strchr(c, '/');
	f->name = c;
	if (first) {
		size_t n = (size_t)(first - c);
		bool upper = false;
		for (size_t i = 0; i < n; i++)
			upper |= c[i] >= 'A' && c[i] <= 'Z';
		if (memchr(c, '.', n) || memchr(c, ':', n) || (n == 9 && !memcmp(c, "localhost", 9)) || upper) {
			*first = '\0';
			f->registry = c;
			f->name = first + 1;
			if (!registry_ok(c))
				return df_fail(p, EINVAL, "FROM %s: a registry is host[:port]", SHOW(ref));
		}
	}
	for (const char *s = f->name;; s += strcspn(s, "/") + 1) {
		if (!repo_part(s, strcspn(s, "/")))
			return df_fail(p, EINVAL,
				       "FROM %s: not an image: [REGISTRY/]REPOSITORY[:TAG][@DIGEST], the "
				       "repository's parts lower-case letters and digits joined by . _ __ or -",
				       SHOW(ref));
		if (!s[strcspn(s, "/")])
			break;
	}
	f->base = DOCKERFILE_BASE_IMAGE;
	return 0;
}

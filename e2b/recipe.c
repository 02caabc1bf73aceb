/*
 * e2b/recipe.c - E2B's template steps as a Dockerfile of space's subset, and the build context
 * that holds it with the uploaded files (recipe.h; docs/e2b.md, "Building templates").
 *
 * Each step becomes what space-build does the same way: RUN (with a user: USER around it),
 * COPY of <hash>/<src> (the upload of that step's files, unpacked under its hash), ENV,
 * WORKDIR, USER; the start and ready commands become LABEL space.start and space.ready, and
 * the key that built the template LABEL e2b.owner. Values are written in the forms the parser
 * reads back unchanged (JSON arrays for RUN and COPY, "..." with '"', '$' and '\' escaped for
 * ENV and LABEL); what no form carries (a line break in a value, '$' in a path or a user) is
 * refused with the step's number rather than changed.
 */
#include "e2b/recipe.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The Dockerfile being written, and which step each of its lines does. */
struct out {
	FILE *f;
	char *text;
	size_t len;
	int *steps;
	size_t n, cap;
};

static int fail(char *msg, size_t n, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *msg, size_t n, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, n, fmt, ap);
	va_end(ap);
	return -err;
}

/* Starts a line of step (its text follows with fputs/fprintf and ends with '\n'). */
static int line(struct out *o, int step)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		int *s = realloc(o->steps, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		o->steps = s;
		o->cap = cap;
	}
	o->steps[o->n++] = step;
	return 0;
}

/* s as a JSON string (quoted), or NULL without memory. */
static char *json_quoted(const char *s)
{
	json_t *j = json_string(s);
	char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return q;
}

/* s in "...", '"', '$' and '\' escaped: the quoting ENV and LABEL read. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '$' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static bool one_line(const char *s)
{
	return s && !strpbrk(s, "\r\n");
}

/* A word of a path or a user: one line, no '$' (the parser would substitute it). */
static bool plain(const char *s)
{
	return one_line(s) && *s && !strchr(s, '$');
}

static const char *arg(const json_t *step, size_t i)
{
	return json_string_value(json_array_get(json_object_get(step, "args"), i));
}

static bool hex_hash(const char *h)
{
	size_t len = h ? strlen(h) : 0;
	return len > 0 && len <= RECIPE_HASH_MAX && strspn(h, "0123456789abcdef") == len;
}

static int add_hash(struct recipe *r, const char *h)
{
	for (size_t i = 0; i < r->n_hashes; i++)
		if (strcmp(r->hashes[i], h) == 0)
			return 0;
	char **v = realloc(r->hashes, (r->n_hashes + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->hashes = v;
	if (!(v[r->n_hashes] = strdup(h)))
		return -ENOMEM;
	r->n_hashes++;
	return 0;
}

/* Step i (1-based) of the template, written to o; user is the USER in force (updated). */
static int step_write(struct out *o, struct recipe *r, const json_t *s, int i, char *user, size_t user_n, char *msg,
		      size_t n)
{
	const char *type = json_string_value(json_object_get(s, "type"));
	size_t nargs = json_array_size(json_object_get(s, "args"));
	if (json_is_true(json_object_get(s, "force")))
		return fail(msg, n, EINVAL, "step %d: skipCache is not offered: space's steps are cached by what they "
			    "do and what they read, and a step whose key is cached is not run again", i);
	if (!type)
		return fail(msg, n, EINVAL, "step %d has no type", i);
	if (strcmp(type, "RUN") == 0) {
		const char *cmd = arg(s, 0), *as = nargs > 1 ? arg(s, 1) : NULL;
		if (!cmd || (as && *as && !plain(as)))
			return fail(msg, n, EINVAL, "step %d: RUN takes a command and an optional user (one line, no '$')", i);
		char *q = json_quoted(cmd);
		if (!q)
			return -ENOMEM;
		bool switch_user = as && *as && strcmp(as, user) != 0;
		if (switch_user && (line(o, i) < 0 || fprintf(o->f, "USER %s\n", as) < 0))
			goto nomem;
		if (line(o, i) < 0 || fprintf(o->f, "RUN [\"/bin/sh\", \"-c\", %s]\n", q) < 0)
			goto nomem;
		if (switch_user && (line(o, i) < 0 || fprintf(o->f, "USER %s\n", user) < 0))
			goto nomem;
		free(q);
		return 0;
nomem:
		free(q);
		return -ENOMEM;
	}
	if (strcmp(type, "COPY") == 0) {
		const char *src = arg(s, 0), *dest = arg(s, 1), *as = arg(s, 2), *mode = arg(s, 3);
		const char *hash = json_string_value(json_object_get(s, "filesHash"));
		if (!plain(src) || !plain(dest))
			return fail(msg, n, EINVAL, "step %d: COPY's source and destination must be one line, without '$'", i);
		if (!hex_hash(hash))
			return fail(msg, n, EINVAL, "step %d: COPY's filesHash must be 1 to %d lower-case hex digits", i,
				    RECIPE_HASH_MAX);
		if ((as && *as && !plain(as)) || (mode && *mode && strspn(mode, "01234567") != strlen(mode)))
			return fail(msg, n, EINVAL, "step %d: COPY's user must be one line without '$', its mode octal", i);
		char path[RECIPE_HASH_MAX + 4096];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", hash, src) >= sizeof(path))
			return fail(msg, n, EINVAL, "step %d: COPY's source is too long", i);
		char *qs = json_quoted(path), *qd = json_quoted(dest);
		int rc = qs && qd && line(o, i) == 0 && add_hash(r, hash) == 0 ? 0 : -ENOMEM;
		if (rc == 0 && fprintf(o->f, "COPY%s%s%s%s [%s, %s]\n", as && *as ? " --chown=" : "", as && *as ? as : "",
				       mode && *mode ? " --chmod=" : "", mode && *mode ? mode : "", qs, qd) < 0)
			rc = -ENOMEM;
		free(qs);
		free(qd);
		return rc;
	}
	if (strcmp(type, "ENV") == 0) {
		if (nargs == 0 || nargs % 2)
			return fail(msg, n, EINVAL, "step %d: ENV takes names and values in pairs", i);
		if (line(o, i) < 0)
			return -ENOMEM;
		fputs("ENV", o->f);
		for (size_t k = 0; k < nargs; k += 2) {
			const char *name = arg(s, k), *value = arg(s, k + 1);
			size_t len = name ? strlen(name) : 0;
			if (!len || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != len ||
			    (name[0] >= '0' && name[0] <= '9'))
				return fail(msg, n, EINVAL, "step %d: an environment variable's name is [A-Za-z_][A-Za-z0-9_]*", i);
			if (!one_line(value))
				return fail(msg, n, EINVAL, "step %d: the value of %s must be one line", i, name);
			fprintf(o->f, " %s=", name);
			put_quoted(o->f, value);
		}
		fputc('\n', o->f);
		return 0;
	}
	if (strcmp(type, "WORKDIR") == 0 || strcmp(type, "USER") == 0) {
		const char *v = arg(s, 0);
		if (nargs != 1 || !plain(v))
			return fail(msg, n, EINVAL, "step %d: %s takes one word, one line, without '$'", i, type);
		if (type[0] == 'U' && (size_t)snprintf(user, user_n, "%s", v) >= user_n)
			return fail(msg, n, EINVAL, "step %d: the user's name is too long", i);
		return line(o, i) < 0 || fprintf(o->f, "%s %s\n", type, v) < 0 ? -ENOMEM : 0;
	}
	return fail(msg, n, EINVAL, "step %d: %s steps are not offered (RUN, COPY, ENV, WORKDIR and USER are)", i, type);
}

/* FROM for the template's base: fromTemplate, else fromImage (E2B's base image: the default). */
static int base_write(struct out *o, const json_t *tpl, const char *(*base)(const char *), char *msg, size_t n)
{
	const char *from_tpl = json_string_value(json_object_get(tpl, "fromTemplate"));
	const char *image = json_string_value(json_object_get(tpl, "fromImage"));
	if (json_object_get(tpl, "fromImageRegistry"))
		return fail(msg, n, EINVAL, "registry credentials (fromImage's, fromAWSRegistry, fromGCPRegistry) are not "
			    "offered: spaced pulls images without credentials");
	if (line(o, 0) < 0)
		return -ENOMEM;
	if (from_tpl) {
		const char *name = base(from_tpl);
		if (!plain(name) || strchr(name, ' '))
			return fail(msg, n, EINVAL, "fromTemplate must name a template");
		return fprintf(o->f, "FROM space:%s\n", name) < 0 ? -ENOMEM : 0;
	}
	if (!image || strcmp(image, RECIPE_E2B_BASE_IMAGE) == 0)
		return fprintf(o->f, "FROM space:default\n") < 0 ? -ENOMEM : 0;
	if (!plain(image) || strchr(image, ' '))
		return fail(msg, n, EINVAL, "fromImage must name an image");
	if (strncmp(image, "space:", 6) == 0)
		return fail(msg, n, EINVAL, "fromImage(\"%s\") names a space template: fromTemplate names those", image);
	return fprintf(o->f, "FROM %s\n", image) < 0 ? -ENOMEM : 0;
}

int recipe_dockerfile(const json_t *tpl, const char *owner, const char *(*base)(const char *), struct recipe *r,
		      char *msg, size_t n)
{
	struct out o = { 0 };
	memset(r, 0, sizeof(*r));
	const json_t *steps = json_object_get(tpl, "steps");
	const char *start = json_string_value(json_object_get(tpl, "startCmd"));
	const char *ready = json_string_value(json_object_get(tpl, "readyCmd"));
	char user[64] = "root";
	int rc = 0;
	if (!json_is_object(tpl) || (steps && !json_is_array(steps)))
		return fail(msg, n, EINVAL, "the template must be an object with an array of steps");
	if (json_array_size(steps) > RECIPE_STEPS_MAX)
		return fail(msg, n, EINVAL, "a template has at most %d steps", RECIPE_STEPS_MAX);
	if (json_is_true(json_object_get(tpl, "force")))
		return fail(msg, n, EINVAL, "skipCache is not offered: space's steps are cached by what they do and what "
			    "they read, and a step whose key is cached is not run again");
	if ((start && !one_line(start)) || (ready && !one_line(ready)))
		return fail(msg, n, EINVAL, "the start and ready commands must be one line each");
	if (ready && !start)
		return fail(msg, n, EINVAL, "a ready command needs a start command (setStartCmd)");
	if (!(o.f = open_memstream(&o.text, &o.len)))
		return -ENOMEM;
	rc = base_write(&o, tpl, base, msg, n);
	size_t i;
	const json_t *s;
	json_array_foreach(steps, i, s) {
		if (rc < 0)
			break;
		rc = step_write(&o, r, s, (int)i + 1, user, sizeof(user), msg, n);
	}
	if (rc == 0 && start) {
		rc = line(&o, -1);
		fputs("LABEL space.start=", o.f);
		put_quoted(o.f, start);
		if (ready) {
			fputs(" space.ready=", o.f);
			put_quoted(o.f, ready);
		}
		fputc('\n', o.f);
	}
	if (rc == 0 && (rc = line(&o, -1)) == 0)
		fprintf(o.f, "LABEL " RECIPE_OWNER_LABEL "=\"%s\"\n", owner);
	if (fclose(o.f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc == -ENOMEM)
		snprintf(msg, n, "out of memory");
	if (rc < 0) {
		free(o.text);
		free(o.steps);
		recipe_free(r);
		return rc;
	}
	r->dockerfile = o.text;
	r->step_of_line = o.steps;
	r->n_lines = o.n;
	return 0;
}

/* Copies every entry of the upload at path into w under prefix/. */
static int copy_upload(struct archive *w, const char *path, const char *prefix, char *msg, size_t n)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!a || fd < 0) {
		rc = fd < 0 ? fail(msg, n, errno, "cannot open the upload %s: %s", path, strerror(errno)) : -ENOMEM;
		goto out;
	}
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK) {
		rc = fail(msg, n, EINVAL, "an upload of files is not a tar: %s", archive_error_string(a));
		goto out;
	}
	int got;
	while ((got = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		char name[8192];
		const char *was = archive_entry_pathname(e), *link = archive_entry_hardlink(e);
		if ((size_t)snprintf(name, sizeof(name), "%s/%s", prefix, was ? was : "") >= sizeof(name)) {
			rc = fail(msg, n, ENAMETOOLONG, "a name in an upload is too long");
			goto out;
		}
		archive_entry_copy_pathname(e, name);
		if (link) {
			if ((size_t)snprintf(name, sizeof(name), "%s/%s", prefix, link) >= sizeof(name)) {
				rc = fail(msg, n, ENAMETOOLONG, "a link's target in an upload is too long");
				goto out;
			}
			archive_entry_copy_hardlink(e, name);
		}
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			rc = fail(msg, n, EIO, "cannot write the build context: %s", archive_error_string(w));
			goto out;
		}
		const void *buf;
		size_t len;
		la_int64_t off;
		int d;
		while ((d = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
			if (archive_write_data(w, buf, len) < 0) {
				rc = fail(msg, n, EIO, "cannot write the build context: %s", archive_error_string(w));
				goto out;
			}
		if (d != ARCHIVE_EOF) {
			rc = fail(msg, n, EINVAL, "an upload of files is damaged: %s", archive_error_string(a));
			goto out;
		}
	}
	if (got != ARCHIVE_EOF)
		rc = fail(msg, n, EINVAL, "an upload of files is damaged: %s", archive_error_string(a));
out:
	if (a)
		archive_read_free(a);
	if (fd >= 0)
		close(fd);
	return rc;
}

int recipe_archive(const struct recipe *r, const char *dir, const char *owner, int fd, char *msg, size_t n)
{
	struct archive *w = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int rc = 0;
	if (!w || !e) {
		rc = fail(msg, n, ENOMEM, "out of memory");
		goto out;
	}
	archive_write_set_format_pax_restricted(w);
	if (archive_write_open_fd(w, fd) != ARCHIVE_OK) {
		rc = fail(msg, n, EIO, "cannot write the build context: %s", archive_error_string(w));
		goto out;
	}
	size_t len = strlen(r->dockerfile);
	archive_entry_set_pathname(e, "Dockerfile");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)len);
	if (archive_write_header(w, e) != ARCHIVE_OK || archive_write_data(w, r->dockerfile, len) != (la_ssize_t)len) {
		rc = fail(msg, n, EIO, "cannot write the build context: %s", archive_error_string(w));
		goto out;
	}
	for (size_t i = 0; i < r->n_hashes && rc == 0; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s-%s", dir, owner, r->hashes[i]);
		if (access(path, F_OK) < 0) {
			rc = fail(msg, n, ENOENT, "the files of hash %s were not uploaded (GET /templates/{id}/files/%s "
				  "gives the URL to upload them to)", r->hashes[i], r->hashes[i]);
			break;
		}
		rc = copy_upload(w, path, r->hashes[i], msg, n);
	}
	if (archive_write_close(w) != ARCHIVE_OK && rc == 0)
		rc = fail(msg, n, EIO, "cannot write the build context: %s", archive_error_string(w));
out:
	archive_entry_free(e);
	if (w)
		archive_write_free(w);
	return rc;
}

void recipe_free(struct recipe *r)
{
	free(r->dockerfile);
	free(r->step_of_line);
	for (size_t i = 0; i < r->n_hashes; i++)
		free(r->hashes[i]);
	free(r->hashes);
	memset(r, 0, sizeof(*r));
}

/*
 * lib/host/dockerfile.c - the Dockerfile subset's parser (see dockerfile.h): the
 * instructions, the result and the public functions (a step's canonical text is
 * dockerfile_canon.c's, FROM's references are checked in dockerfile_ref.c).
 *
 * Three passes: lex the text into instructions (directives, comments, continuations:
 * dockerfile_lex.c); find the FROM; then run each instruction through its handler in
 * INSTRUCTIONS, which splits its arguments as Docker does (flags and JSON arrays in
 * dockerfile_lex.c, shell words in dockerfile_words.c), substitutes variables
 * (dockerfile_words.c) and fills its step. Everything the result holds comes from one arena
 * (struct dockerfile_mem, df_mem_alloc in dockerfile_lex.c), so the result is freed in one walk;
 * scratch memory lives in struct parser and goes with it.
 */
#include "lib/host/dockerfile_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define SUPPORTED "FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, LABEL"

/* Checks of what the handlers read */

/* [A-Za-z_][A-Za-z0-9_]*: the names of ENV, ARG and build arguments. */
static bool is_name(const char *s, size_t n)
{
	if (!n || is_digit(s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '_')
			return false;
	return true;
}

/* "/a/b" path components of s added to buf[0..*len), "." and ".." resolved; false when ".."
 * climbs above the top and clamp is false (with clamp, "/.." is "/"). */
static bool norm_add(char *buf, size_t *len, const char *s, bool clamp)
{
	while (*s) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (!*len && !clamp)
				return false;
			if (*len) /* back to the '/' before the last component */
				do
					--*len;
				while (buf[*len] != '/');
		} else if (n && !(n == 1 && s[0] == '.')) {
			buf[(*len)++] = '/';
			memcpy(buf + *len, s, n);
			*len += n;
		}
		s += n;
	}
	return true;
}

/* path normalised: in the image (absolute, relative ones against base) or in the build context
 * (relative, "." for all of it, never above it). */
static int norm(struct parser *p, const char *what, const char *base, const char *path, bool image,
		const char **out)
{
	size_t bl = image && path[0] != '/' ? strlen(base) : 0, pl = strlen(path), len = 0;
	char *buf = malloc(bl + pl + 3);
	int rc;
	if (!buf)
		return df_nomem(p);
	if ((bl && !norm_add(buf, &len, base, true)) || !norm_add(buf, &len, path, image))
		rc = df_fail(p, EINVAL, "%s %s: the path leaves the build context", what, SHOW(path));
	else if (len > DOCKERFILE_PATH_MAX + (size_t)!image)
		rc = df_fail(p, E2BIG, "%s: a path is longer than %d bytes", what, DOCKERFILE_PATH_MAX);
	else if (!len)
		rc = df_mem_dup(p, image ? "/" : ".", 1, out);
	else
		rc = df_mem_dup(p, buf + !image, len - !image, out);
	free(buf);
	return rc;
}

/* One side of USER[:GROUP]: a name or a number. */
static int user_part(struct parser *p, const char *what, const char *s, size_t n)
{
	if (n > DOCKERFILE_USER_MAX)
		return df_fail(p, E2BIG, "%s: a user or group name is longer than %d bytes", what, DOCKERFILE_USER_MAX);
	size_t digits = strspn(s, "0123456789");
	if (n && digits >= n) {
		if (n <= 10 && strtoull(s, NULL, 10) <= 4294967294ull)
			return 0;
		return df_fail(p, EINVAL, "%s %s: a user or group number is at most 4294967294", what, df_show(s, n).s);
	}
	bool ok = n && (is_alpha(s[0]) || s[0] == '_');
	for (size_t i = 1; ok && i < n; i++)
		ok = is_alnum(s[i]) || strchr("_.-", s[i]) || (s[i] == '$' && i == n - 1);
	if (!ok)
		return df_fail(p, EINVAL, "%s %s: a user and a group are names ([A-Za-z_][A-Za-z0-9_.-]*) or numbers",
			       what, df_show(s, n).s);
	return 0;
}

static int user_spec(struct parser *p, const char *what, const char *w, struct dockerfile_user *u)
{
	const char *colon = strchr(w, ':');
	size_t n = colon ? (size_t)(colon - w) : strlen(w);
	int rc = user_part(p, what, w, n);
	if (!rc && colon)
		rc = user_part(p, what, colon + 1, strlen(colon + 1));
	if (!rc && u)
		rc = df_mem_dup(p, w, n, &u->user);
	if (!rc && u && colon)
		rc = df_mem_dup(p, colon + 1, strlen(colon + 1), &u->group);
	return rc;
}

/* A name ENV or ARG sets, or a LABEL key: its length, and its rule. */
static int key_ok(struct parser *p, const char *instr, const char *k)
{
	size_t n = strlen(k);
	if (n > DOCKERFILE_KEY_MAX)
		return df_fail(p, E2BIG, "%s: a name is longer than %d bytes", instr, DOCKERFILE_KEY_MAX);
	if (strcmp(instr, "LABEL")) {
		if (!is_name(k, n))
			return df_fail(p, EINVAL, "%s %s: a name is [A-Za-z_][A-Za-z0-9_]*", instr, df_show(k, n).s);
		return 0;
	}
	if (!n)
		return df_fail(p, EINVAL, "LABEL: a key is empty");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)k[i] < 0x20 || k[i] == 0x7f)
			return df_fail(p, EINVAL, "LABEL %s: a key holds a control character", df_show(k, n).s);
	if (!strncmp(k, "space.", 6) && strcmp(k, "space.start") && strcmp(k, "space.ready") && strcmp(k, "space.pool"))
		return df_fail(p, EINVAL, "LABEL %s: the space.* keys are space.start, space.ready and space.pool",
			       df_show(k, n).s);
	return 0;
}

/* The pairs of ENV, LABEL (NAME=VALUE words, or the legacy NAME VALUE) or ARG (NAME[=DEFAULT]
 * words, value NULL without '='), each side substituted with the variables in force. */
static int kv_list(struct parser *p, const char *instr, struct slice args, struct dockerfile_pairs *out)
{
	bool arg = !strcmp(instr, "ARG");
	struct slices *w = &p->words;
	int rc = df_split_words(p, args, w);
	if (rc)
		return rc;
	if (!w->n)
		return df_fail(p, EINVAL, arg ? "ARG needs a name: ARG NAME[=DEFAULT]" : "%s needs NAME=VALUE", instr);
	bool legacy = !arg && !memchr(w->v[0].s, '=', w->v[0].n);
	struct slice lkey = { 0 }, lval = { 0 };
	if (legacy) { /* NAME VALUE: the value is the rest of the line */
		size_t k = 0, v;
		while (k < args.n && !is_space(args.s[k]))
			k++;
		for (v = k; v < args.n && is_space(args.s[v]);)
			v++;
		if (v == args.n)
			return df_fail(p, EINVAL, "%s %s needs a value: %s NAME=VALUE", instr,
				       df_show(args.s, k).s, instr);
		lkey = (struct slice){ args.s, k };
		lval = (struct slice){ args.s + v, args.n - v };
	}
	size_t n = legacy ? 1 : w->n;
	struct dockerfile_kv *kv = df_mem_alloc(p, n * sizeof(*kv));
	if (!kv)
		return df_nomem(p);
	for (size_t i = 0; !rc && i < n; i++) {
		struct slice key = legacy ? lkey : w->v[i], val = lval;
		const char *eq = legacy ? NULL : memchr(key.s, '=', key.n);
		if (eq) {
			val = (struct slice){ eq + 1, (size_t)(key.s + key.n - eq - 1) };
			key.n = (size_t)(eq - key.s);
		} else if (!legacy && !arg) {
			return df_fail(p, EINVAL, "%s: %s is not NAME=VALUE", instr, SHOWS(key));
		}
		kv[i].value = NULL;
		if (!(rc = df_word(p, key, &kv[i].key)) && !(rc = key_ok(p, instr, kv[i].key)) && (eq || legacy))
			rc = df_word(p, val, &kv[i].value);
	}
	out->kv = kv;
	out->n = n;
	return rc;
}

/* The handlers, one an instruction */

static int do_from(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	struct slices *w = &p->words;
	struct dockerfile_from *f = &s->from;
	int rc = df_no_flags(p, "FROM");
	if (rc || (rc = df_split_blank(p, args, w)))
		return rc;
	if (w->n == 3 && df_eq_nocase(w->v[1], "as"))
		return df_fail(p, ENOTSUP, "FROM ... AS %s: multi-stage builds are not supported", SHOWS(w->v[2]));
	if (w->n != 1)
		return df_fail(p, EINVAL, "FROM takes one base: scratch, space:NAME[:TAG] or an image");
	if ((rc = df_word(p, w->v[0], &f->ref)))
		return rc;
	if (!*f->ref)
		return df_fail(p, EINVAL, "FROM: the base is empty after substitution");
	if (!strcmp(f->ref, "scratch")) {
		f->base = DOCKERFILE_BASE_SCRATCH;
		return 0;
	}
	if (strncmp(f->ref, "space:", 6))
		return df_image_ref(p, f->ref, f);
	const char *name = f->ref + 6, *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);
	f->tag = colon ? colon + 1 : "latest";
	if ((rc = df_template_part(p, f->ref, "name", name, n)) ||
	    (rc = df_template_part(p, f->ref, "tag", f->tag, strlen(f->tag))))
		return rc;
	f->base = DOCKERFILE_BASE_TEMPLATE;
	return df_mem_dup(p, name, n, &f->name);
}

static int do_run(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = df_no_flags(p, "RUN");
	if (rc)
		return rc;
	if (!args.n)
		return df_fail(p, EINVAL, "RUN needs a command");
	if (args.s[0] == '[' && (rc = df_json_array(p, args, &p->words)) != 0) {
		if (rc < 0)
			return rc;
		if (!p->words.n)
			return df_fail(p, EINVAL, "RUN [] needs a command");
		const char **argv = df_mem_alloc(p, (p->words.n + 1) * sizeof(*argv));
		if (!argv)
			return df_nomem(p);
		for (size_t i = 0; i < p->words.n; i++)
			argv[i] = p->words.v[i].s;
		argv[p->words.n] = NULL;
		s->run.argv = argv;
		s->run.argc = p->words.n;
		return 0;
	}
	if ((rc = df_no_heredoc(p, "RUN", args)))
		return rc;
	return df_mem_dup(p, args.s, args.n, &s->run.shell);
}

static int copy_flags(struct parser *p, const char *instr, struct dockerfile_copy *c)
{
	const char *v;
	int rc = 0;
	c->chmod = -1;
	for (size_t i = 0; !rc && i < p->flags.n; i++) {
		struct slice f = p->flags.v[i];
		if (df_flag_is(f, "from", &v)) {
			rc = df_fail(p, ENOTSUP, "%s --from: multi-stage builds are not supported", instr);
		} else if (df_flag_is(f, "chown", &v)) {
			if (c->chown || !v || !*v)
				rc = df_fail(p, EINVAL, "%s: --chown=USER[:GROUP], once", instr);
			else if (!(rc = df_word(p, (struct slice){ v, strlen(v) }, &c->chown)))
				rc = user_spec(p, "--chown", c->chown, NULL);
		} else if (df_flag_is(f, "chmod", &v)) {
			size_t n = v ? strlen(v) : 0;
			if (c->chmod >= 0 || !n || n > 4 || strspn(v, "01234567") != n)
				rc = df_fail(p, EINVAL, "%s: --chmod=MODE, 1 to 4 octal digits, once", instr);
			else
				c->chmod = (int)strtol(v, NULL, 8);
		} else {
			rc = df_bad_flag(p, instr, f);
		}
	}
	return rc;
}

static int copy_source(struct parser *p, const char *instr, const char *w, const char **out)
{
	bool add = !strcmp(instr, "ADD");
	if (!*w)
		return df_fail(p, EINVAL, "%s: a source is empty", instr);
	if (strstr(w, "://") && add)
		return df_fail(p, ENOTSUP, "ADD %s: URLs are not supported (builds have no network)", SHOW(w));
	if (strstr(w, "://"))
		return df_fail(p, EINVAL, "COPY %s: COPY takes files of the build context, not URLs", SHOW(w));
	if (add && !strncmp(w, "git@", 4))
		return df_fail(p, ENOTSUP, "ADD %s: git sources are not supported (builds have no network)", SHOW(w));
	if (w[0] == '/')
		return df_fail(p, EINVAL, "%s %s: a source is a path in the build context, not an absolute one", instr,
			       SHOW(w));
	return norm(p, instr, NULL, w, false, out);
}

static int do_copy(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	const char *instr = s->kind == DOCKERFILE_ADD ? "ADD" : "COPY", *d;
	struct dockerfile_copy *c = &s->copy;
	struct slices *w = &p->words;
	int rc = copy_flags(p, instr, c);
	if (rc)
		return rc;
	if (!args.n || args.s[0] != '[' || (rc = df_json_array(p, args, w)) == 0) {
		if ((rc = df_no_heredoc(p, instr, args)) || (rc = df_split_blank(p, args, w)))
			return rc;
	} else if (rc < 0) {
		return rc;
	}
	if (w->n < 2)
		return df_fail(p, EINVAL, "%s needs a source and a destination: %s SRC... DEST", instr, instr);
	const char **src = df_mem_alloc(p, w->n * sizeof(*src));
	if (!src)
		return df_nomem(p);
	c->n_src = w->n - 1;
	c->src = src;
	for (size_t i = 0; i < c->n_src; i++)
		if ((rc = df_word(p, w->v[i], &d)) || (rc = copy_source(p, instr, d, &src[i])))
			return rc;
	src[c->n_src] = NULL;
	if ((rc = df_word(p, w->v[c->n_src], &d)))
		return rc;
	if (!*d)
		return df_fail(p, EINVAL, "%s: the destination is empty", instr);
	const char *last = strrchr(d, '/') ? strrchr(d, '/') + 1 : d;
	c->dest_dir = d[strlen(d) - 1] == '/' || !strcmp(last, ".") || !strcmp(last, "..");
	if (c->n_src > 1 && !c->dest_dir)
		return df_fail(p, EINVAL, "%s with more than one source needs a destination ending in /", instr);
	return norm(p, instr, p->ctx.workdir, d, true, &c->dest);
}

static int do_env(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = df_no_flags(p, "ENV");
	if (rc || (rc = kv_list(p, "ENV", args, &s->pairs)))
		return rc;
	for (size_t i = 0; i < s->pairs.n; i++) {
		struct var *v;
		if ((rc = df_var_slot(p, p->vars, s->pairs.kv[i].key, &v)))
			return rc;
		v->env = &s->pairs.kv[i];
		v->base = false;
	}
	p->env_dirty = true;
	return 0;
}

static int do_arg(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = df_no_flags(p, "ARG");
	if (rc || (rc = kv_list(p, "ARG", args, &s->pairs)))
		return rc;
	struct dockerfile_kv *kv = (struct dockerfile_kv *)s->pairs.kv;
	for (size_t i = 0; i < s->pairs.n; i++) {
		size_t n = strlen(kv[i].key);
		struct var *v;
		for (size_t b = 0; b < p->in->n_build_args; b++) {
			const char *a = p->in->build_args[b];
			if (!strncmp(a, kv[i].key, n) && a[n] == '=') {
				p->declared |= 1ull << b;
				if ((rc = df_mem_dup(p, a + n + 1, strlen(a + n + 1), &kv[i].value)))
					return rc;
			}
		}
		if (!kv[i].value && p->vars == &p->stage && (v = df_var_find(&p->meta, kv[i].key, n)) && v->arg)
			kv[i].value = v->arg->value; /* ARG NAME in the stage: the value NAME had before FROM */
		if ((rc = df_var_slot(p, p->vars, kv[i].key, &v)))
			return rc;
		v->arg = &kv[i];
	}
	p->env_dirty = true;
	return 0;
}

static int do_label(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = df_no_flags(p, "LABEL");
	if (rc || (rc = kv_list(p, "LABEL", args, &s->pairs)))
		return rc;
	for (size_t i = 0; i < s->pairs.n; i++) {
		const struct dockerfile_kv *kv = &s->pairs.kv[i];
		size_t k = 0;
		while (k < p->n_labels && strcmp(p->labels[k]->key, kv->key))
			k++;
		if (k == DOCKERFILE_LABELS_MAX)
			return df_fail(p, E2BIG, "more than %d labels", DOCKERFILE_LABELS_MAX);
		p->n_labels += k == p->n_labels;
		p->labels[k] = kv;
		if (!strcmp(kv->key, "space.start"))
			p->df->start = kv->value;
		if (!strcmp(kv->key, "space.ready"))
			p->df->ready = kv->value;
		if (!strcmp(kv->key, "space.pool")) {
			const char *v = kv->value;
			size_t digits = strspn(v, "0123456789");
			if (!digits || v[digits] || digits > 2 || atoi(v) > DOCKERFILE_POOL_MAX)
				return df_fail(p, EINVAL, "LABEL space.pool=%s: the warm pool's size is 0 to %d sandboxes",
					       df_show(v, strlen(v)).s, DOCKERFILE_POOL_MAX);
			p->df->pool = atoi(v);
		}
	}
	return 0;
}

static int do_workdir(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	const char *w;
	int rc = df_no_flags(p, "WORKDIR");
	if (rc)
		return rc;
	if (!args.n)
		return df_fail(p, EINVAL, "WORKDIR needs a path");
	if ((rc = df_word(p, args, &w)))
		return rc;
	if (!*w)
		return df_fail(p, EINVAL, "WORKDIR: the path is empty after substitution");
	if ((rc = norm(p, "WORKDIR", p->ctx.workdir, w, true, &s->workdir)))
		return rc;
	p->ctx.workdir = p->df->workdir = s->workdir;
	return 0;
}

static int do_user(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	const char *w;
	int rc = df_no_flags(p, "USER");
	if (rc)
		return rc;
	if (!args.n)
		return df_fail(p, EINVAL, "USER needs a user: USER NAME[:GROUP]");
	if ((rc = df_word(p, args, &w)) || (rc = user_spec(p, "USER", w, &s->user)))
		return rc;
	p->ctx.user = p->df->user = w;
	return 0;
}

static const struct instruction {
	const char *name;
	enum dockerfile_kind kind;
	int (*parse)(struct parser *p, struct dockerfile_step *s, struct slice args);
} INSTRUCTIONS[] = {
	{ "FROM", DOCKERFILE_FROM, do_from },          { "RUN", DOCKERFILE_RUN, do_run },
	{ "COPY", DOCKERFILE_COPY, do_copy },          { "ADD", DOCKERFILE_ADD, do_copy },
	{ "ENV", DOCKERFILE_ENV, do_env },             { "ARG", DOCKERFILE_ARG, do_arg },
	{ "WORKDIR", DOCKERFILE_WORKDIR, do_workdir }, { "USER", DOCKERFILE_USER, do_user },
	{ "LABEL", DOCKERFILE_LABEL, do_label },
};

/* Docker's instructions that space does not build, and what to write instead. */
static const struct {
	const char *name, *hint;
} UNSUPPORTED[] = {
	{ "CMD", "; a template's start command is LABEL space.start=\"...\"" },
	{ "ENTRYPOINT", "; a template's start command is LABEL space.start=\"...\"" },
	{ "HEALTHCHECK", "; a template's readiness check is LABEL space.ready=\"...\"" },
	{ "MAINTAINER", "; write LABEL maintainer=\"...\"" },
	{ "EXPOSE", "" },
	{ "VOLUME", "" },
	{ "ONBUILD", "" },
	{ "STOPSIGNAL", "" },
	{ "SHELL", "" },
};

/* The driver */

static int check_assignments(struct parser *p, const char *what, const char *const *list, size_t n, size_t max)
{
	if (n > max)
		return df_fail(p, E2BIG, "more than %zu %ss", max, what);
	for (size_t i = 0; i < n; i++) {
		const char *a = list[i], *eq = a ? strchr(a, '=') : NULL;
		size_t k = eq ? (size_t)(eq - a) : 0;
		if (!eq || !is_name(a, k))
			return df_fail(p, EINVAL, "%s %s: NAME=VALUE, NAME [A-Za-z_][A-Za-z0-9_]*", what,
				       a ? SHOW(a) : "NULL");
		if (k > DOCKERFILE_KEY_MAX)
			return df_fail(p, E2BIG, "%s: a name is longer than %d bytes", what, DOCKERFILE_KEY_MAX);
		if (strlen(eq + 1) > DOCKERFILE_VALUE_MAX)
			return df_fail(p, E2BIG, "%s %s: the value is longer than %d bytes", what, df_show(a, k).s,
				       DOCKERFILE_VALUE_MAX);
		for (size_t j = 0; j < i; j++)
			if (!strncmp(list[j], a, k + 1))
				return df_fail(p, EINVAL, "%s %s is given twice", what, df_show(a, k).s);
	}
	return 0;
}

/* The base's environment, in force from FROM on. */
static int load_base(struct parser *p)
{
	struct dockerfile_kv *kv = df_mem_alloc(p, p->in->n_base_env * sizeof(*kv));
	if (!kv)
		return df_nomem(p);
	for (size_t i = 0; i < p->in->n_base_env; i++) {
		const char *a = p->in->base_env[i], *eq = strchr(a, '=');
		struct var *v;
		int rc = df_mem_dup(p, a, (size_t)(eq - a), &kv[i].key);
		if (rc || (rc = df_mem_dup(p, eq + 1, strlen(eq + 1), &kv[i].value)) ||
		    (rc = df_var_slot(p, &p->stage, kv[i].key, &v)))
			return rc;
		v->env = &kv[i];
		v->base = true;
	}
	p->env_dirty = true;
	return 0;
}

/* p->ctx.env made again from the variables in force, when they changed. */
static int ctx_env(struct parser *p)
{
	if (!p->env_dirty)
		return 0;
	const struct dockerfile_kv **env = df_mem_alloc(p, (p->vars->n + 1) * sizeof(*env));
	if (!env)
		return df_nomem(p);
	size_t n = 0;
	for (size_t i = 0; i < p->vars->n; i++)
		if (df_var_kv(&p->vars->v[i]))
			env[n++] = df_var_kv(&p->vars->v[i]);
	p->ctx.env = env;
	p->ctx.n_env = n;
	p->env_dirty = false;
	return 0;
}

static int steps(struct parser *p)
{
	struct dockerfile *df = p->df;
	size_t from = SIZE_MAX;
	int rc = 0;
	for (size_t i = 0; i < p->n_raw && from == SIZE_MAX; i++)
		if (df_eq_nocase((struct slice){ p->raw[i].text.s, strcspn(p->raw[i].text.s, " \t\v\f\r") }, "FROM"))
			from = i;
	if (!(df->steps = df_mem_alloc(p, p->n_raw * sizeof(*df->steps))))
		return df_nomem(p);
	memset(df->steps, 0, p->n_raw * sizeof(*df->steps));
	df->n_steps = p->n_raw;
	p->ctx.workdir = "/";
	p->vars = from == SIZE_MAX ? &p->stage : &p->meta;
	if (from == SIZE_MAX) {
		df->from = (struct dockerfile_from){ .base = DOCKERFILE_BASE_DEFAULT,
						     .name = DOCKERFILE_DEFAULT_TEMPLATE,
						     .tag = "latest" };
		rc = load_base(p);
	}
	for (size_t i = 0; !rc && i < p->n_raw; i++) {
		struct dockerfile_step *s = &df->steps[i];
		struct slice text = p->raw[i].text, kw = { text.s, strcspn(text.s, " \t\v\f\r") };
		struct slice args = df_trim((struct slice){ text.s + kw.n, text.n - kw.n });
		const struct instruction *ins = NULL;
		p->line = p->raw[i].line;
		for (size_t k = 0; k < sizeof(INSTRUCTIONS) / sizeof(INSTRUCTIONS[0]); k++)
			if (df_eq_nocase(kw, INSTRUCTIONS[k].name))
				ins = &INSTRUCTIONS[k];
		for (size_t k = 0; !ins && k < sizeof(UNSUPPORTED) / sizeof(UNSUPPORTED[0]); k++)
			if (df_eq_nocase(kw, UNSUPPORTED[k].name))
				return df_fail(p, ENOTSUP, "%s is not supported (space builds: " SUPPORTED "%s)",
					       UNSUPPORTED[k].name, UNSUPPORTED[k].hint);
		if (!ins)
			return df_fail(p, EINVAL, "unknown instruction %s (space builds: " SUPPORTED ")", SHOWS(kw));
		if (from != SIZE_MAX && i < from && ins->kind != DOCKERFILE_ARG)
			return df_fail(p, EINVAL, "%s before FROM: only ARG may come before FROM", ins->name);
		if (ins->kind == DOCKERFILE_FROM && i != from)
			return df_fail(p, ENOTSUP,
				       "a second FROM (the first is on line %d): multi-stage builds are not supported",
				       p->raw[from].line);
		if ((rc = ctx_env(p)))
			return rc;
		s->kind = ins->kind;
		s->line = p->line;
		s->text = text.s;
		s->ctx = p->ctx;
		if ((rc = df_take_flags(p, &args)) || (rc = ins->parse(p, s, args)))
			return rc;
		if (ins->kind == DOCKERFILE_FROM) {
			df->from = s->from;
			p->vars = &p->stage;
			rc = load_base(p);
		}
	}
	p->line = 0;
	return rc;
}

/* Build arguments no ARG declares; the template's ENV and labels. */
static int finish(struct parser *p)
{
	struct dockerfile *df = p->df;
	char list[256] = "";
	size_t used = 0;
	for (size_t b = 0; b < p->in->n_build_args; b++)
		if (!(p->declared >> b & 1) && used < sizeof(list))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%.*s", used ? ", " : "",
						 (int)strcspn(p->in->build_args[b], "="), p->in->build_args[b]);
	if (used)
		return df_fail(p, EINVAL, "build arguments no ARG declares: %s", list);
	const struct dockerfile_kv **env = df_mem_alloc(p, (p->stage.n + 1) * sizeof(*env));
	const struct dockerfile_kv **labels = df_mem_alloc(p, (p->n_labels + 1) * sizeof(*labels));
	if (!env || !labels)
		return df_nomem(p);
	for (size_t i = 0; i < p->stage.n; i++)
		if (p->stage.v[i].env && !p->stage.v[i].base)
			env[df->n_env++] = p->stage.v[i].env;
	memcpy(labels, p->labels, p->n_labels * sizeof(*labels));
	df->env = env;
	df->labels = labels;
	df->n_labels = p->n_labels;
	return 0;
}

int dockerfile_parse(const struct dockerfile_input *in, struct dockerfile **out, struct err *e)
{
	struct parser *p = calloc(1, sizeof(*p));
	struct dockerfile *df = calloc(1, sizeof(*df));
	int rc;
	*out = NULL;
	if (!p || !df) {
		free(p);
		free(df);
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory reading the Dockerfile");
	}
	p->in = in;
	p->df = df;
	df->pool = -1;
	p->e = e;
	p->esc = '\\';
	p->tmp.max = DOCKERFILE_VALUE_MAX;
	const char *nul = in->len ? memchr(in->text, '\0', in->len) : NULL;
	if (in->len > DOCKERFILE_SIZE_MAX) {
		rc = df_fail(p, E2BIG, "the Dockerfile is larger than %d bytes", DOCKERFILE_SIZE_MAX);
	} else if (nul) {
		p->line = 1;
		for (const char *c = in->text; c < nul; c++)
			p->line += *c == '\n';
		rc = df_fail(p, EINVAL, "a NUL byte");
	} else if (!(rc = check_assignments(p, "build argument", in->build_args, in->n_build_args,
					     DOCKERFILE_BUILD_ARGS_MAX)) &&
		   !(rc = check_assignments(p, "base environment variable", in->base_env, in->n_base_env,
					     DOCKERFILE_VARS_MAX)) &&
		   !(rc = df_lex(p)) && !(rc = steps(p))) {
		rc = finish(p);
	}
	free(p->raw);
	free(p->words.v);
	free(p->flags.v);
	free(p->tmp.s);
	free(p);
	if (rc) {
		dockerfile_free(df);
		return rc;
	}
	*out = df;
	return 0;
}

void dockerfile_free(struct dockerfile *df)
{
	if (!df)
		return;
	for (struct dockerfile_mem *m = df->mem, *next; m; m = next) {
		next = m->next;
		free(m);
	}
	free(df);
}

int dockerfile_err_line(const struct err *e)
{
	if (!e || strncmp(e->msg, "line ", 5) || !is_digit(e->msg[5]))
		return 0;
	return atoi(e->msg + 5);
}

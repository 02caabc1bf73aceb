/*
 * lib/host/dockerfile_words.c - the Dockerfile parser's words (see dockerfile_int.h).
 *
 * An instruction's arguments split into words as Docker splits them (at blanks for FROM, COPY
 * and ADD; with quotes kept together for ENV, ARG and LABEL), the check for here-documents,
 * and Docker's variable substitution: the variables in force, $NAME and the ${NAME...} forms,
 * quotes and the escape character undone, into a string in the arena.
 */
#include "lib/host/dockerfile_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Shell words */

/* Words split at blanks, quotes or not: how Docker splits FROM, COPY and ADD. */
int df_split_blank(struct parser *p, struct slice s, struct slices *out)
{
	int rc = 0;
	out->n = 0;
	for (size_t i = 0; !rc && i < s.n;) {
		while (i < s.n && is_space(s.s[i]))
			i++;
		size_t start = i;
		while (i < s.n && !is_space(s.s[i]))
			i++;
		if (i > start)
			rc = df_push(p, out, s.s + start, i - start);
	}
	return rc;
}

/* Words as Docker's parseWords splits ENV, LABEL and ARG: blanks in quotes do not split, and the
 * quotes and escapes stay in the word (substitution undoes them); an escape at the end goes. */
int df_split_words(struct parser *p, struct slice s, struct slices *out)
{
	int rc = 0;
	out->n = 0;
	for (size_t i = 0; !rc && i < s.n;) {
		while (i < s.n && is_space(s.s[i]))
			i++;
		size_t start = i, end = s.n;
		char quote = 0;
		for (; i < s.n; i++) {
			char c = s.s[i];
			if (!quote && is_space(c)) {
				end = i;
				break;
			}
			if (quote && c == quote)
				quote = 0;
			else if (!quote && (c == '"' || c == '\''))
				quote = c;
			else if (c == p->esc && quote != '\'') {
				if (i + 1 == s.n) {
					end = i;
					i = s.n;
					break;
				}
				i++;
			}
		}
		if (end > start)
			rc = df_push(p, out, s.s + start, end - start);
	}
	return rc;
}

/* A word like "<<EOF", "<<-'EOF'" or "2<<X" starts a here-document in BuildKit. */
int df_no_heredoc(struct parser *p, const char *instr, struct slice args)
{
	for (size_t i = 0; i < args.n;) {
		while (i < args.n && is_space(args.s[i]))
			i++;
		size_t k = i;
		while (k < args.n && is_digit(args.s[k]))
			k++;
		bool starts = k + 1 < args.n && args.s[k] == '<' && args.s[k + 1] == '<';
		k += 2;
		if (starts && k < args.n && args.s[k] == '-')
			k++;
		size_t rest = k;
		while (k < args.n && !is_space(args.s[k]) && args.s[k] != '<')
			k++;
		if (starts && k > rest && (k == args.n || is_space(args.s[k])))
			return df_fail(p, ENOTSUP,
				       "%s: here-documents (<<EOF) are not supported; COPY a script and run it", instr);
		while (i < args.n && !is_space(args.s[i]))
			i++;
	}
	return 0;
}

/* Variables and substitution */

struct var *df_var_find(struct vars *t, const char *name, size_t len)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].len == len && !memcmp(t->v[i].name, name, len))
			return &t->v[i];
	return NULL;
}

int df_var_slot(struct parser *p, struct vars *t, const char *name, struct var **out)
{
	struct var *v = df_var_find(t, name, strlen(name));
	if (!v) {
		if (t->n == DOCKERFILE_VARS_MAX)
			return df_fail(p, E2BIG, "more than %d variables (the names ENV and ARG set)",
				       DOCKERFILE_VARS_MAX);
		v = &t->v[t->n++];
		*v = (struct var){ .name = name, .len = strlen(name) };
	}
	*out = v;
	return 0;
}

/* The pair that gives v its value, or NULL when it has none. */
const struct dockerfile_kv *df_var_kv(const struct var *v)
{
	if (v->env)
		return v->env;
	return v->arg && v->arg->value ? v->arg : NULL;
}

static const char *var_get(struct parser *p, const char *name, size_t len)
{
	struct var *v = df_var_find(p->vars, name, len);
	const struct dockerfile_kv *kv = v ? df_var_kv(v) : NULL;
	return kv ? kv->value : NULL;
}

/* The length of the name after '$': a run of digits, one of Docker's special parameters, or
 * [A-Za-z0-9_]+. Those that are no variable's name expand to nothing, as in Docker. */
static size_t name_len(const char *s, size_t n)
{
	size_t i = 0;
	if (n && is_digit(s[0])) {
		while (i < n && is_digit(s[i]))
			i++;
		return i;
	}
	if (n && s[0] && strchr("@*#?-$!", s[0]))
		return 1;
	while (i < n && (is_alnum(s[i]) || s[i] == '_'))
		i++;
	return i;
}

static int put_var(struct parser *p, struct sbuf *out, const char *name, size_t len)
{
	const char *v = var_get(p, name, len);
	size_t n = v ? strlen(v) : 0;
	if (n > DOCKERFILE_SUBST_MAX - p->subst)
		return df_fail(p, E2BIG, "substitution inserts more than %d bytes in all", DOCKERFILE_SUBST_MAX);
	p->subst += n;
	return df_sb_put(p, out, v, n);
}

static int word_run(struct parser *p, const char *in, size_t n, size_t *pos, char stop, struct sbuf *out);

static int unterminated(struct parser *p)
{
	return df_fail(p, EINVAL, "unterminated ${: the closing } is missing");
}

/* The substitution at in[*pos] == '$', as Docker's processDollar. */
static int dollar(struct parser *p, const char *in, size_t n, size_t *pos, struct sbuf *out)
{
	size_t i = *pos + 1;
	if (i == n || in[i] != '{') {
		size_t len = name_len(in + i, n - i);
		*pos = i + len;
		return len ? put_var(p, out, in + i, len) : df_sb_put(p, out, "$", 1);
	}
	if (++i == n)
		return unterminated(p);
	const char *name = in + i;
	size_t len = in[i] == ':' || in[i] == '{' || in[i] == '}' ? 0 : name_len(name, n - i);
	i += len;
	if (i == n)
		return unterminated(p);
	if (!len)
		return df_fail(p, EINVAL, "bad substitution: ${ is not followed by a name");
	char c = in[i++];
	if (c == '}') {
		*pos = i;
		return put_var(p, out, name, len);
	}
	bool colon = c == ':';
	if (colon && i == n)
		return unterminated(p);
	if (colon)
		c = in[i++];
	if (c != '-' && c != '+' && c != '?') {
		if (colon || c == '#' || c == '%' || c == '/')
			return df_fail(p, ENOTSUP, "${%s%s%s...} is not supported", df_show(name, len).s,
				       colon ? ":" : "", df_show(&c, 1).s);
		return df_fail(p, EINVAL, "bad substitution ${%s%s...}", df_show(name, len).s, df_show(&c, 1).s);
	}
	if (p->depth == DOCKERFILE_NEST_MAX)
		return df_fail(p, E2BIG, "${...} nested more than %d deep", DOCKERFILE_NEST_MAX);
	struct sbuf w = { .max = DOCKERFILE_VALUE_MAX };
	p->depth++;
	int rc = word_run(p, in, n, &i, '}', &w);
	p->depth--;
	const char *v = var_get(p, name, len);
	bool fallback = colon ? !v || !*v : !v; /* NAME unset, or (with ':') empty */
	if (rc == 0 && c == '?' && fallback)
		rc = df_fail(p, EINVAL, "%s: %s", df_show(name, len).s, w.len ? df_show(w.s, w.len).s : "is not set");
	else if (rc == 0 && ((c == '-' && fallback) || (c == '+' && !fallback)))
		rc = df_sb_put(p, out, w.s, w.len);
	else if (rc == 0 && c != '+')
		rc = put_var(p, out, name, len);
	free(w.s);
	*pos = i;
	return rc;
}

/* in[*pos..n) as Docker's ProcessWord reads one word: quotes removed, the escape character
 * applied, variables substituted; up to `stop` ('}' ending a ${NAME:-word}) or the end. */
static int word_run(struct parser *p, const char *in, size_t n, size_t *pos, char stop, struct sbuf *out)
{
	size_t i = *pos;
	int rc = 0;
	while (!rc && i < n) {
		char c = in[i];
		if (stop && c == stop) {
			*pos = i + 1;
			return 0;
		}
		if (c == '$') {
			rc = dollar(p, in, n, &i, out);
		} else if (c == '\'') {
			size_t end = i + 1;
			while (end < n && in[end] != '\'')
				end++;
			if (end == n)
				return df_fail(p, EINVAL, "unterminated single quote");
			rc = df_sb_put(p, out, in + i + 1, end - i - 1);
			i = end + 1;
		} else if (c == '"') {
			for (i++; !rc; i++) {
				if (i == n)
					return df_fail(p, EINVAL, "unterminated double quote");
				c = in[i];
				if (c == '"')
					break;
				if (c == '$') {
					rc = dollar(p, in, n, &i, out);
					i--;
					continue;
				}
				char next = i + 1 < n ? in[i + 1] : '\0'; /* in "...", it escapes only " $ and itself */
				if (c == p->esc && (next == '"' || next == '$' || next == p->esc))
					c = in[++i];
				else if (c == p->esc && i + 1 == n)
					continue;
				rc = df_sb_putc(p, out, c);
			}
			i++;
		} else {
			if (c == p->esc && ++i == n)
				break; /* an escape at the end goes */
			rc = df_sb_putc(p, out, in[i++]);
		}
	}
	if (!rc && stop)
		return unterminated(p);
	*pos = i;
	return rc;
}

/* w substituted into a string in the arena. */
int df_word(struct parser *p, struct slice w, const char **out)
{
	size_t pos = 0;
	p->tmp.len = 0;
	int rc = word_run(p, w.s, w.n, &pos, 0, &p->tmp);
	return rc ? rc : df_mem_dup(p, p->tmp.s, p->tmp.len, out);
}

/*
 * daemon/template/dockerfile.c - the Dockerfile subset's parser (see dockerfile.h).
 *
 * Three passes: lex the text into instructions (directives, comments, continuations); find
 * the FROM; then run each instruction through its handler in INSTRUCTIONS, which splits its
 * arguments as Docker does (flags, shell words, JSON arrays), substitutes variables and fills
 * its step. Everything the result holds comes from one arena (struct dockerfile_mem), so the
 * result is freed in one walk; scratch memory lives in struct parser and goes with it.
 */
#include "daemon/template/dockerfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_CHUNK (64 * 1024)
#define SUPPORTED "FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, LABEL"

struct dockerfile_mem {
	struct dockerfile_mem *next;
	size_t used, size;
	max_align_t data[];
};

struct slice {
	const char *s;
	size_t n;
};

struct slices {
	struct slice *v;
	size_t n, cap;
};

/* A growing string of at most max bytes (then a NUL). */
struct sbuf {
	char *s;
	size_t len, cap, max;
};

/* A variable in force: set by ENV (or the base), declared by ARG, or both (ENV wins). */
struct var {
	const char *name;
	size_t len;
	const struct dockerfile_kv *env, *arg;
	bool base; /* env is the base's, not this file's */
};

struct vars {
	struct var v[DOCKERFILE_VARS_MAX];
	size_t n;
};

/* An instruction as lexed: its first line and its text, continuations joined (in the arena). */
struct raw {
	int line;
	struct slice text;
};

struct parser {
	const struct dockerfile_input *in;
	struct dockerfile *df;
	struct err *e;
	char esc;     /* the escape character: '\\' or '`' */
	int line;     /* of the instruction at hand, for messages; 0 for none */
	size_t subst; /* bytes substitution inserted so far */
	int depth;    /* ${...} open around the word at hand */
	struct vars meta, stage, *vars; /* before FROM, after it, and the one in force */
	const struct dockerfile_kv *labels[DOCKERFILE_LABELS_MAX];
	size_t n_labels;
	uint64_t declared;         /* bit i: some ARG declares build argument i */
	struct dockerfile_ctx ctx; /* in force for the next step */
	bool env_dirty;            /* ctx.env is out of date */
	struct raw *raw;
	size_t n_raw, cap_raw;
	struct slices words, flags; /* of the instruction at hand; flags without their "--" */
	struct sbuf tmp;            /* the word being substituted */
};

/* Messages, memory and strings */

static int fail(struct parser *p, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct parser *p, int err, const char *fmt, ...)
{
	char msg[sizeof(p->e->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->line > 0)
		return err_set(p->e, 400, "invalid_argument", err, "line %d: %s", p->line, msg);
	return err_set(p->e, 400, "invalid_argument", err, "%s", msg);
}

static int nomem(struct parser *p)
{
	return err_set(p->e, 500, "internal", ENOMEM, "out of memory reading the Dockerfile");
}

/* Up to 40 bytes of what a user wrote, for a message: bytes other than printable ASCII as '?'. */
struct shown {
	char s[48];
};

static struct shown show(const char *s, size_t n)
{
	struct shown r;
	size_t k = 0;
	for (size_t i = 0; i < n && k < 40; i++)
		r.s[k++] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	if (n > 40) {
		memcpy(r.s + k, "...", 3);
		k += 3;
	}
	r.s[k] = '\0';
	return r;
}

#define SHOW(str) (show((str), strlen(str)).s)
#define SHOWS(sl) (show((sl).s, (sl).n).s)

static void *mem_alloc(struct parser *p, size_t n)
{
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	struct dockerfile_mem *m = p->df->mem;
	if (m && m->size - m->used >= n) {
		void *r = (char *)m->data + m->used;
		m->used += n;
		return r;
	}
	bool own = n > MEM_CHUNK / 4; /* a large block gets a chunk of its own, behind the current one */
	struct dockerfile_mem *c = malloc(sizeof(*c) + (own ? n : MEM_CHUNK));
	if (!c)
		return NULL;
	c->size = own ? n : MEM_CHUNK;
	c->used = n;
	if (own && m) {
		c->next = m->next;
		m->next = c;
	} else {
		c->next = m;
		p->df->mem = c;
	}
	return c->data;
}

static int mem_dup(struct parser *p, const char *s, size_t n, const char **out)
{
	char *d = mem_alloc(p, n + 1);
	if (!d)
		return nomem(p);
	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
	*out = d;
	return 0;
}

static int sb_put(struct parser *p, struct sbuf *b, const char *s, size_t n)
{
	if (n > b->max - b->len)
		return fail(p, E2BIG, "a word is longer than %zu bytes after substitution", b->max);
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *s2 = realloc(b->s, cap);
		if (!s2)
			return nomem(p);
		b->s = s2;
		b->cap = cap;
	}
	if (n)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int sb_putc(struct parser *p, struct sbuf *b, char c)
{
	return sb_put(p, b, &c, 1);
}

static int push(struct parser *p, struct slices *v, const char *s, size_t n)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		struct slice *n2 = realloc(v->v, cap * sizeof(*n2));
		if (!n2)
			return nomem(p);
		v->v = n2;
		v->cap = cap;
	}
	v->v[v->n++] = (struct slice){ s, n };
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_alpha(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z'); }
static bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }

static struct slice ltrim(struct slice l)
{
	while (l.n && is_space(l.s[0])) {
		l.s++;
		l.n--;
	}
	return l;
}

static struct slice trim(struct slice l)
{
	l = ltrim(l);
	while (l.n && is_space(l.s[l.n - 1]))
		l.n--;
	return l;
}

static bool eq_nocase(struct slice a, const char *b)
{
	size_t i = 0;
	for (; i < a.n && b[i]; i++)
		if ((is_alpha(a.s[i]) ? (a.s[i] | 0x20) : a.s[i]) != (is_alpha(b[i]) ? (b[i] | 0x20) : b[i]))
			return false;
	return i == a.n && !b[i];
}

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

/* Lexing: lines, directives, comments and continuations into p->raw */

static struct slice next_line(const struct dockerfile_input *in, size_t *pos)
{
	size_t start = *pos, end = start;
	while (end < in->len && in->text[end] != '\n')
		end++;
	*pos = end < in->len ? end + 1 : end;
	if (end > start && in->text[end - 1] == '\r')
		end--;
	return (struct slice){ in->text + start, end - start };
}

/* Docker's parser directive: "#[ \t]*name[ \t]*=[ \t]*value[ \t]*", name [A-Za-z][A-Za-z0-9]*. */
static bool directive(struct slice l, struct slice *name, struct slice *value)
{
	size_t i = 1, end = l.n;
	if (!l.n || l.s[0] != '#')
		return false;
	while (i < l.n && (l.s[i] == ' ' || l.s[i] == '\t'))
		i++;
	if (i == l.n || !is_alpha(l.s[i]))
		return false;
	name->s = l.s + i;
	while (i < l.n && is_alnum(l.s[i]))
		i++;
	name->n = (size_t)(l.s + i - name->s);
	while (i < l.n && (l.s[i] == ' ' || l.s[i] == '\t'))
		i++;
	if (i == l.n || l.s[i++] != '=')
		return false;
	while (i < l.n && (l.s[i] == ' ' || l.s[i] == '\t'))
		i++;
	while (end > i && (l.s[end - 1] == ' ' || l.s[end - 1] == '\t'))
		end--;
	*value = (struct slice){ l.s + i, end - i };
	return end > i;
}

/* Whether line l ends in the escape character (then blanks); if so, l loses them. */
static bool continues(const struct parser *p, struct slice *l)
{
	size_t n = l->n;
	while (n && (l->s[n - 1] == ' ' || l->s[n - 1] == '\t'))
		n--;
	if (!n || l->s[n - 1] != p->esc)
		return false;
	l->n = n - 1;
	return true;
}

static int add_raw(struct parser *p, int line, struct slice text)
{
	if (p->n_raw == DOCKERFILE_STEPS_MAX)
		return fail(p, E2BIG, "more than %d instructions", DOCKERFILE_STEPS_MAX);
	if (text.n > DOCKERFILE_LINE_MAX)
		return fail(p, E2BIG, "the instruction is longer than %d bytes (continuation lines joined)",
			    DOCKERFILE_LINE_MAX);
	if (p->n_raw == p->cap_raw) {
		size_t cap = p->cap_raw ? p->cap_raw * 2 : 64;
		struct raw *r = realloc(p->raw, cap * sizeof(*r));
		if (!r)
			return nomem(p);
		p->raw = r;
		p->cap_raw = cap;
	}
	struct raw *r = &p->raw[p->n_raw++];
	r->line = line;
	r->text.n = text.n;
	return mem_dup(p, text.s, text.n, &r->text.s);
}

static int lex(struct parser *p)
{
	const struct dockerfile_input *in = p->in;
	struct sbuf join = { .max = DOCKERFILE_SIZE_MAX };
	size_t pos = in->len >= 3 && memcmp(in->text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	bool directives = true, escape_seen = false;
	int line = 0, rc = 0;
	while (!rc && pos < in->len) {
		struct slice l = ltrim(next_line(in, &pos)), name = { 0 }, value = { 0 };
		p->line = ++line;
		if (directives && directive(l, &name, &value)) {
			if (!eq_nocase(name, "escape"))
				continue; /* syntax=, check= and others: BuildKit's, comments here */
			if (escape_seen)
				rc = fail(p, EINVAL, "the escape directive is given twice");
			else if (value.n != 1 || (value.s[0] != '\\' && value.s[0] != '`'))
				rc = fail(p, EINVAL, "escape=%s: the escape character is \\ or `", SHOWS(value));
			p->esc = value.n ? value.s[0] : '\\';
			escape_seen = true;
			continue;
		}
		directives = false;
		if (!trim(l).n || l.s[0] == '#')
			continue;
		bool more = continues(p, &l);
		join.len = 0;
		rc = sb_put(p, &join, l.s, l.n);
		while (!rc && more && pos < in->len) {
			struct slice c = next_line(in, &pos), t = trim(c);
			line++;
			if (!t.n || t.s[0] == '#')
				continue; /* comment and blank lines inside an instruction */
			more = continues(p, &c);
			rc = sb_put(p, &join, c.s, c.n);
		}
		struct slice text = trim((struct slice){ join.s, join.len });
		if (!rc && text.n)
			rc = add_raw(p, p->line, text);
	}
	free(join.s);
	if (!rc && !p->n_raw) {
		p->line = 0;
		rc = fail(p, EINVAL, "the Dockerfile holds no instruction");
	}
	return rc;
}

/* Words: flags, shell words, JSON arrays */

/* Leading "--name[=value]" words of args, as Docker's extractBuilderFlags reads them (quotes and
 * backslashes undone), into p->flags without their "--"; args keeps what follows. */
static int take_flags(struct parser *p, struct slice *args)
{
	const char *s = args->s;
	size_t n = args->n, i = 0;
	struct sbuf w = { .max = DOCKERFILE_LINE_MAX };
	int rc = 0;
	p->flags.n = 0;
	for (;;) {
		while (i < n && is_space(s[i]))
			i++;
		if (i + 1 >= n || s[i] != '-' || s[i + 1] != '-')
			break;
		char quote = 0;
		w.len = 0;
		for (; !rc && i < n && (quote || !is_space(s[i])); i++) {
			char c = s[i];
			if (c == quote) {
				quote = 0;
				continue;
			}
			if (!quote && (c == '\'' || c == '"')) {
				quote = c;
				continue;
			}
			if (c == '\\') {
				if (i + 1 == n)
					continue;
				c = s[++i];
			}
			rc = sb_putc(p, &w, c);
		}
		if (rc)
			break;
		if (w.len == 2 && !memcmp(w.s, "--", 2))
			break; /* "--" ends the flags */
		const char *f;
		if ((rc = mem_dup(p, w.s + 2, w.len - 2, &f)) || (rc = push(p, &p->flags, f, w.len - 2)))
			break;
	}
	free(w.s);
	*args = trim((struct slice){ s + i, n - i });
	return rc;
}

/* The flag f ("chown=x", "link") is name; *value is what follows '=', or NULL. */
static bool flag_is(struct slice f, const char *name, const char **value)
{
	size_t k = strcspn(f.s, "=");
	if (k != strlen(name) || memcmp(f.s, name, k))
		return false;
	*value = f.s[k] ? f.s + k + 1 : NULL;
	return true;
}

static int bad_flag(struct parser *p, const char *instr, struct slice f)
{
	static const char *const docker[] = { "mount", "network", "security", "platform", "from", "link",
					      "parents", "exclude", "checksum", "keep-git-dir", "unpack", "chown",
					      "chmod" };
	const char *v;
	for (size_t i = 0; i < sizeof(docker) / sizeof(docker[0]); i++)
		if (flag_is(f, docker[i], &v))
			return fail(p, ENOTSUP, "%s --%s is not supported", instr, docker[i]);
	return fail(p, EINVAL, "%s: unknown flag --%s", instr, show(f.s, strcspn(f.s, "=")).s);
}

static int no_flags(struct parser *p, const char *instr)
{
	return p->flags.n ? bad_flag(p, instr, p->flags.v[0]) : 0;
}

/* Words split at blanks, quotes or not: how Docker splits FROM, COPY and ADD. */
static int split_blank(struct parser *p, struct slice s, struct slices *out)
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
			rc = push(p, out, s.s + start, i - start);
	}
	return rc;
}

/* Words as Docker's parseWords splits ENV, LABEL and ARG: blanks in quotes do not split, and the
 * quotes and escapes stay in the word (substitution undoes them); an escape at the end goes. */
static int split_words(struct parser *p, struct slice s, struct slices *out)
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
			rc = push(p, out, s.s + start, end - start);
	}
	return rc;
}

/* A word like "<<EOF", "<<-'EOF'" or "2<<X" starts a here-document in BuildKit. */
static int no_heredoc(struct parser *p, const char *instr, struct slice args)
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
			return fail(p, ENOTSUP,
				    "%s: here-documents (<<EOF) are not supported; COPY a script and run it", instr);
		while (i < args.n && !is_space(args.s[i]))
			i++;
	}
	return 0;
}

static size_t json_ws(struct slice s, size_t i)
{
	while (i < s.n && (s.s[i] == ' ' || s.s[i] == '\t' || s.s[i] == '\n' || s.s[i] == '\r'))
		i++;
	return i;
}

static bool hex4(struct slice s, size_t i, unsigned *out)
{
	unsigned v = 0;
	if (i + 4 > s.n)
		return false;
	for (size_t k = i; k < i + 4; k++) {
		char c = s.s[k];
		int d = is_digit(c) ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
		if (d < 0)
			return false;
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return true;
}

/* The JSON string at s[*i] == '"', decoded into out (if not NULL) as Go decodes it (a lone
 * surrogate becomes U+FFFD); \u0000 sets *nul. 1, or 0 when it is no JSON string, or an error. */
static int json_string(struct parser *p, struct slice s, size_t *pos, struct sbuf *out, bool *nul)
{
	size_t i = *pos + 1;
	while (i < s.n) {
		char c = s.s[i];
		char u[4];
		size_t un = 1;
		int rc;
		if (c == '"') {
			*pos = i + 1;
			return 1;
		}
		if ((unsigned char)c < 0x20)
			return 0;
		u[0] = c;
		if (c == '\\') {
			const char *esc = strchr("\"\\/bfnrt", ++i < s.n ? s.s[i] : '\0');
			unsigned cp, lo;
			if (esc && *esc) {
				u[0] = "\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrt"];
			} else if (i < s.n && s.s[i] == 'u' && hex4(s, i + 1, &cp)) {
				i += 4;
				if (cp >= 0xd800 && cp < 0xdc00 && i + 2 < s.n && s.s[i + 1] == '\\' &&
				    s.s[i + 2] == 'u' && hex4(s, i + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					i += 6;
				} else if (cp >= 0xd800 && cp < 0xe000) {
					cp = 0xfffd;
				}
				if (cp == 0 && nul)
					*nul = true;
				un = cp == 0 ? 0 : cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
				static const unsigned char lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };
				for (size_t k = un; k > 1; k--, cp >>= 6)
					u[k - 1] = (char)(0x80 | (cp & 0x3f));
				u[0] = (char)(un == 1 ? cp : lead[un] | cp);
			} else {
				return 0;
			}
		}
		if (out && (rc = sb_put(p, out, u, un)))
			return rc;
		i++;
	}
	return 0;
}

static bool json_scalar(struct slice s, size_t *pos)
{
	static const char *const lits[] = { "true", "false", "null" };
	size_t i = *pos;
	for (size_t k = 0; k < 3; k++)
		if (s.n - i >= strlen(lits[k]) && !memcmp(s.s + i, lits[k], strlen(lits[k]))) {
			*pos = i + strlen(lits[k]);
			return true;
		}
	if (i < s.n && s.s[i] == '-')
		i++;
	if (i == s.n || !is_digit(s.s[i]))
		return false;
	if (s.s[i] == '0')
		i++;
	else
		while (i < s.n && is_digit(s.s[i]))
			i++;
	if (i < s.n && s.s[i] == '.') {
		if (++i == s.n || !is_digit(s.s[i]))
			return false;
		while (i < s.n && is_digit(s.s[i]))
			i++;
	}
	if (i < s.n && (s.s[i] == 'e' || s.s[i] == 'E')) {
		if (++i < s.n && (s.s[i] == '+' || s.s[i] == '-'))
			i++;
		if (i == s.n || !is_digit(s.s[i]))
			return false;
		while (i < s.n && is_digit(s.s[i]))
			i++;
	}
	*pos = i;
	return true;
}

/* `"key" :` at s[*pos] (after blanks), skipped. */
static bool json_key(struct parser *p, struct slice s, size_t *pos)
{
	size_t i = json_ws(s, *pos);
	if (i == s.n || s.s[i] != '"' || json_string(p, s, &i, NULL, NULL) != 1)
		return false;
	i = json_ws(s, i);
	if (i == s.n || s.s[i] != ':')
		return false;
	*pos = i + 1;
	return true;
}

/* Skips one JSON value at s[*pos], nested to any depth without recursion (a bit a level says
 * object or array). 1 when it is one, 0 when not, or an error. */
static int json_skip(struct parser *p, struct slice s, size_t *pos)
{
	unsigned char *obj = NULL;
	size_t depth = 0, i = *pos;
	int rc = 0;
	for (;;) {
		i = json_ws(s, i);
		if (i == s.n)
			goto out;
		char c = s.s[i];
		if (c == '[' || c == '{') {
			if (!obj && !(obj = calloc(s.n / 8 + 1, 1))) {
				rc = nomem(p);
				goto out;
			}
			unsigned bit = 1u << depth % 8;
			obj[depth / 8] = (unsigned char)(c == '{' ? obj[depth / 8] | bit : obj[depth / 8] & ~bit);
			depth++;
			i = json_ws(s, i + 1);
			if (i < s.n && s.s[i] == (c == '[' ? ']' : '}')) {
				depth--;
				i++;
			} else if (c == '[' || json_key(p, s, &i)) {
				continue;
			} else {
				goto out;
			}
		} else if (c == '"' ? json_string(p, s, &i, NULL, NULL) != 1 : !json_scalar(s, &i)) {
			goto out;
		}
		for (;;) { /* after a value: the next one, or the end of what holds it */
			if (!depth) {
				*pos = i;
				rc = 1;
				goto out;
			}
			bool in_obj = obj[(depth - 1) / 8] >> (depth - 1) % 8 & 1;
			i = json_ws(s, i);
			if (i < s.n && s.s[i] == ',') {
				i++;
				if (in_obj && !json_key(p, s, &i))
					goto out;
				break;
			}
			if (i == s.n || s.s[i] != (in_obj ? '}' : ']'))
				goto out;
			depth--;
			i++;
		}
	}
out:
	free(obj);
	return rc;
}

/* s (starting with '[') as Docker reads an exec form: 1 with its strings decoded into out (in the
 * arena); 0 when s is not JSON (it is shell form then); an error when it is JSON but not an array
 * of strings, or a string holds \u0000. */
static int json_array(struct parser *p, struct slice s, struct slices *out)
{
	struct sbuf str = { .max = DOCKERFILE_LINE_MAX };
	bool other = false, nul = false;
	size_t i = json_ws(s, 1);
	int rc = 0;
	out->n = 0;
	if (i < s.n && s.s[i] == ']') {
		i++;
	} else {
		for (;;) {
			if (i < s.n && s.s[i] == '"') {
				const char *d;
				str.len = 0;
				if ((rc = json_string(p, s, &i, &str, &nul)) != 1)
					goto out;
				if ((rc = mem_dup(p, str.s, str.len, &d)) || (rc = push(p, out, d, str.len)))
					goto out;
			} else {
				if ((rc = json_skip(p, s, &i)) != 1)
					goto out;
				other = true;
			}
			i = json_ws(s, i);
			if (i < s.n && s.s[i] == ',') {
				i = json_ws(s, i + 1);
				continue;
			}
			rc = 0;
			if (i == s.n || s.s[i] != ']')
				goto out;
			i++;
			break;
		}
	}
	if (json_ws(s, i) != s.n)
		rc = 0;
	else if (other)
		rc = fail(p, EINVAL, "a JSON array in a Dockerfile holds strings only");
	else if (nul)
		rc = fail(p, EINVAL, "a JSON string holds \\u0000");
	else
		rc = 1;
out:
	free(str.s);
	return rc;
}

/* Variables and substitution */

static struct var *var_find(struct vars *t, const char *name, size_t len)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].len == len && !memcmp(t->v[i].name, name, len))
			return &t->v[i];
	return NULL;
}

static int var_slot(struct parser *p, struct vars *t, const char *name, struct var **out)
{
	struct var *v = var_find(t, name, strlen(name));
	if (!v) {
		if (t->n == DOCKERFILE_VARS_MAX)
			return fail(p, E2BIG, "more than %d variables (the names ENV and ARG set)",
				    DOCKERFILE_VARS_MAX);
		v = &t->v[t->n++];
		*v = (struct var){ .name = name, .len = strlen(name) };
	}
	*out = v;
	return 0;
}

/* The pair that gives v its value, or NULL when it has none. */
static const struct dockerfile_kv *var_kv(const struct var *v)
{
	if (v->env)
		return v->env;
	return v->arg && v->arg->value ? v->arg : NULL;
}

static const char *var_get(struct parser *p, const char *name, size_t len)
{
	struct var *v = var_find(p->vars, name, len);
	const struct dockerfile_kv *kv = v ? var_kv(v) : NULL;
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
		return fail(p, E2BIG, "substitution inserts more than %d bytes in all", DOCKERFILE_SUBST_MAX);
	p->subst += n;
	return sb_put(p, out, v, n);
}

static int word_run(struct parser *p, const char *in, size_t n, size_t *pos, char stop, struct sbuf *out);

static int unterminated(struct parser *p)
{
	return fail(p, EINVAL, "unterminated ${: the closing } is missing");
}

/* The substitution at in[*pos] == '$', as Docker's processDollar. */
static int dollar(struct parser *p, const char *in, size_t n, size_t *pos, struct sbuf *out)
{
	size_t i = *pos + 1;
	if (i == n || in[i] != '{') {
		size_t len = name_len(in + i, n - i);
		*pos = i + len;
		return len ? put_var(p, out, in + i, len) : sb_put(p, out, "$", 1);
	}
	if (++i == n)
		return unterminated(p);
	const char *name = in + i;
	size_t len = in[i] == ':' || in[i] == '{' || in[i] == '}' ? 0 : name_len(name, n - i);
	i += len;
	if (i == n)
		return unterminated(p);
	if (!len)
		return fail(p, EINVAL, "bad substitution: ${ is not followed by a name");
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
			return fail(p, ENOTSUP, "${%s%s%s...} is not supported", show(name, len).s, colon ? ":" : "",
				    show(&c, 1).s);
		return fail(p, EINVAL, "bad substitution ${%s%s...}", show(name, len).s, show(&c, 1).s);
	}
	if (p->depth == DOCKERFILE_NEST_MAX)
		return fail(p, E2BIG, "${...} nested more than %d deep", DOCKERFILE_NEST_MAX);
	struct sbuf w = { .max = DOCKERFILE_VALUE_MAX };
	p->depth++;
	int rc = word_run(p, in, n, &i, '}', &w);
	p->depth--;
	const char *v = var_get(p, name, len);
	bool fallback = colon ? !v || !*v : !v; /* NAME unset, or (with ':') empty */
	if (rc == 0 && c == '?' && fallback)
		rc = fail(p, EINVAL, "%s: %s", show(name, len).s, w.len ? show(w.s, w.len).s : "is not set");
	else if (rc == 0 && ((c == '-' && fallback) || (c == '+' && !fallback)))
		rc = sb_put(p, out, w.s, w.len);
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
				return fail(p, EINVAL, "unterminated single quote");
			rc = sb_put(p, out, in + i + 1, end - i - 1);
			i = end + 1;
		} else if (c == '"') {
			for (i++; !rc; i++) {
				if (i == n)
					return fail(p, EINVAL, "unterminated double quote");
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
				rc = sb_putc(p, out, c);
			}
			i++;
		} else {
			if (c == p->esc && ++i == n)
				break; /* an escape at the end goes */
			rc = sb_putc(p, out, in[i++]);
		}
	}
	if (!rc && stop)
		return unterminated(p);
	*pos = i;
	return rc;
}

/* w substituted into a string in the arena. */
static int word(struct parser *p, struct slice w, const char **out)
{
	size_t pos = 0;
	p->tmp.len = 0;
	int rc = word_run(p, w.s, w.n, &pos, 0, &p->tmp);
	return rc ? rc : mem_dup(p, p->tmp.s, p->tmp.len, out);
}

/* Checks of what the handlers read */

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
		return nomem(p);
	if ((bl && !norm_add(buf, &len, base, true)) || !norm_add(buf, &len, path, image))
		rc = fail(p, EINVAL, "%s %s: the path leaves the build context", what, SHOW(path));
	else if (len > DOCKERFILE_PATH_MAX + (size_t)!image)
		rc = fail(p, E2BIG, "%s: a path is longer than %d bytes", what, DOCKERFILE_PATH_MAX);
	else if (!len)
		rc = mem_dup(p, image ? "/" : ".", 1, out);
	else
		rc = mem_dup(p, buf + !image, len - !image, out);
	free(buf);
	return rc;
}

/* One side of USER[:GROUP]: a name or a number. */
static int user_part(struct parser *p, const char *what, const char *s, size_t n)
{
	if (n > DOCKERFILE_USER_MAX)
		return fail(p, E2BIG, "%s: a user or group name is longer than %d bytes", what, DOCKERFILE_USER_MAX);
	size_t digits = strspn(s, "0123456789");
	if (n && digits >= n) {
		if (n <= 10 && strtoull(s, NULL, 10) <= 4294967294ull)
			return 0;
		return fail(p, EINVAL, "%s %s: a user or group number is at most 4294967294", what, show(s, n).s);
	}
	bool ok = n && (is_alpha(s[0]) || s[0] == '_');
	for (size_t i = 1; ok && i < n; i++)
		ok = is_alnum(s[i]) || strchr("_.-", s[i]) || (s[i] == '$' && i == n - 1);
	if (!ok)
		return fail(p, EINVAL, "%s %s: a user and a group are names ([A-Za-z_][A-Za-z0-9_.-]*) or numbers",
			    what, show(s, n).s);
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
		rc = mem_dup(p, w, n, &u->user);
	if (!rc && u && colon)
		rc = mem_dup(p, colon + 1, strlen(colon + 1), &u->group);
	return rc;
}

/* NAME or TAG of space:NAME[:TAG]. */
static int template_part(struct parser *p, const char *ref, const char *what, const char *s, size_t n)
{
	if (n > DOCKERFILE_TEMPLATE_NAME_MAX)
		return fail(p, E2BIG, "FROM %s: a template's %s is longer than %d bytes", SHOW(ref), what,
			    DOCKERFILE_TEMPLATE_NAME_MAX);
	bool ok = n && is_alnum(s[0]);
	for (size_t i = 1; ok && i < n; i++)
		ok = is_alnum(s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-';
	return ok ? 0 : fail(p, EINVAL, "FROM %s: a template's %s is [A-Za-z0-9][A-Za-z0-9._-]*", SHOW(ref), what);
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

static int image_ref(struct parser *p, const char *ref, struct dockerfile_from *f)
{
	const char *c0;
	int rc = mem_dup(p, ref, strlen(ref), &c0);
	if (rc)
		return rc;
	char *c = (char *)c0, *at = strchr(c, '@');
	if (at) {
		*at = '\0';
		f->digest = at + 1;
		if (strncmp(f->digest, "sha256:", 7) || strlen(f->digest) != 7 + 64 ||
		    strspn(f->digest + 7, "0123456789abcdef") != 64)
			return fail(p, EINVAL, "FROM %s: a digest is sha256: and 64 lower-case hex digits", SHOW(ref));
	}
	char *slash = strrchr(c, '/'), *colon = strrchr(c, ':');
	if (colon && (!slash || colon > slash)) {
		*colon = '\0';
		f->tag = colon + 1;
		size_t n = strlen(f->tag);
		if (n > DOCKERFILE_IMAGE_TAG_MAX)
			return fail(p, E2BIG, "FROM %s: a tag is longer than %d bytes", SHOW(ref),
				    DOCKERFILE_IMAGE_TAG_MAX);
		bool ok = n && (is_alnum(f->tag[0]) || f->tag[0] == '_');
		for (size_t i = 1; ok && i < n; i++)
			ok = is_alnum(f->tag[i]) || strchr("_.-", f->tag[i]);
		if (!ok)
			return fail(p, EINVAL, "FROM %s: a tag is [A-Za-z0-9_][A-Za-z0-9_.-]*", SHOW(ref));
	}
	if (strlen(c) > DOCKERFILE_IMAGE_NAME_MAX)
		return fail(p, E2BIG, "FROM %s: an image's name is longer than %d bytes", SHOW(ref),
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
				return fail(p, EINVAL, "FROM %s: a registry is host[:port]", SHOW(ref));
		}
	}
	for (const char *s = f->name;; s += strcspn(s, "/") + 1) {
		if (!repo_part(s, strcspn(s, "/")))
			return fail(p, EINVAL,
				    "FROM %s: not an image: [REGISTRY/]REPOSITORY[:TAG][@DIGEST], the "
				    "repository's parts lower-case letters and digits joined by . _ __ or -",
				    SHOW(ref));
		if (!s[strcspn(s, "/")])
			break;
	}
	f->base = DOCKERFILE_BASE_IMAGE;
	return 0;
}

/* A name ENV or ARG sets, or a LABEL key: its length, and its rule. */
static int key_ok(struct parser *p, const char *instr, const char *k)
{
	size_t n = strlen(k);
	if (n > DOCKERFILE_KEY_MAX)
		return fail(p, E2BIG, "%s: a name is longer than %d bytes", instr, DOCKERFILE_KEY_MAX);
	if (strcmp(instr, "LABEL")) {
		if (!is_name(k, n))
			return fail(p, EINVAL, "%s %s: a name is [A-Za-z_][A-Za-z0-9_]*", instr, show(k, n).s);
		return 0;
	}
	if (!n)
		return fail(p, EINVAL, "LABEL: a key is empty");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)k[i] < 0x20 || k[i] == 0x7f)
			return fail(p, EINVAL, "LABEL %s: a key holds a control character", show(k, n).s);
	if (!strncmp(k, "space.", 6) && strcmp(k, "space.start") && strcmp(k, "space.ready"))
		return fail(p, EINVAL, "LABEL %s: the space.* keys are space.start and space.ready", show(k, n).s);
	return 0;
}

/* The pairs of ENV, LABEL (NAME=VALUE words, or the legacy NAME VALUE) or ARG (NAME[=DEFAULT]
 * words, value NULL without '='), each side substituted with the variables in force. */
static int kv_list(struct parser *p, const char *instr, struct slice args, struct dockerfile_pairs *out)
{
	bool arg = !strcmp(instr, "ARG");
	struct slices *w = &p->words;
	int rc = split_words(p, args, w);
	if (rc)
		return rc;
	if (!w->n)
		return fail(p, EINVAL, arg ? "ARG needs a name: ARG NAME[=DEFAULT]" : "%s needs NAME=VALUE", instr);
	bool legacy = !arg && !memchr(w->v[0].s, '=', w->v[0].n);
	struct slice lkey = { 0 }, lval = { 0 };
	if (legacy) { /* NAME VALUE: the value is the rest of the line */
		size_t k = 0, v;
		while (k < args.n && !is_space(args.s[k]))
			k++;
		for (v = k; v < args.n && is_space(args.s[v]);)
			v++;
		if (v == args.n)
			return fail(p, EINVAL, "%s %s needs a value: %s NAME=VALUE", instr, show(args.s, k).s, instr);
		lkey = (struct slice){ args.s, k };
		lval = (struct slice){ args.s + v, args.n - v };
	}
	size_t n = legacy ? 1 : w->n;
	struct dockerfile_kv *kv = mem_alloc(p, n * sizeof(*kv));
	if (!kv)
		return nomem(p);
	for (size_t i = 0; !rc && i < n; i++) {
		struct slice key = legacy ? lkey : w->v[i], val = lval;
		const char *eq = legacy ? NULL : memchr(key.s, '=', key.n);
		if (eq) {
			val = (struct slice){ eq + 1, (size_t)(key.s + key.n - eq - 1) };
			key.n = (size_t)(eq - key.s);
		} else if (!legacy && !arg) {
			return fail(p, EINVAL, "%s: %s is not NAME=VALUE", instr, SHOWS(key));
		}
		kv[i].value = NULL;
		if (!(rc = word(p, key, &kv[i].key)) && !(rc = key_ok(p, instr, kv[i].key)) && (eq || legacy))
			rc = word(p, val, &kv[i].value);
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
	int rc = no_flags(p, "FROM");
	if (rc || (rc = split_blank(p, args, w)))
		return rc;
	if (w->n == 3 && eq_nocase(w->v[1], "as"))
		return fail(p, ENOTSUP, "FROM ... AS %s: multi-stage builds are not supported", SHOWS(w->v[2]));
	if (w->n != 1)
		return fail(p, EINVAL, "FROM takes one base: scratch, space:NAME[:TAG] or an image");
	if ((rc = word(p, w->v[0], &f->ref)))
		return rc;
	if (!*f->ref)
		return fail(p, EINVAL, "FROM: the base is empty after substitution");
	if (!strcmp(f->ref, "scratch")) {
		f->base = DOCKERFILE_BASE_SCRATCH;
		return 0;
	}
	if (strncmp(f->ref, "space:", 6))
		return image_ref(p, f->ref, f);
	const char *name = f->ref + 6, *colon = strchr(name, ':');
	size_t n = colon ? (size_t)(colon - name) : strlen(name);
	f->tag = colon ? colon + 1 : "latest";
	if ((rc = template_part(p, f->ref, "name", name, n)) ||
	    (rc = template_part(p, f->ref, "tag", f->tag, strlen(f->tag))))
		return rc;
	f->base = DOCKERFILE_BASE_TEMPLATE;
	return mem_dup(p, name, n, &f->name);
}

static int do_run(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = no_flags(p, "RUN");
	if (rc)
		return rc;
	if (!args.n)
		return fail(p, EINVAL, "RUN needs a command");
	if (args.s[0] == '[' && (rc = json_array(p, args, &p->words)) != 0) {
		if (rc < 0)
			return rc;
		if (!p->words.n)
			return fail(p, EINVAL, "RUN [] needs a command");
		const char **argv = mem_alloc(p, (p->words.n + 1) * sizeof(*argv));
		if (!argv)
			return nomem(p);
		for (size_t i = 0; i < p->words.n; i++)
			argv[i] = p->words.v[i].s;
		argv[p->words.n] = NULL;
		s->run.argv = argv;
		s->run.argc = p->words.n;
		return 0;
	}
	if ((rc = no_heredoc(p, "RUN", args)))
		return rc;
	return mem_dup(p, args.s, args.n, &s->run.shell);
}

static int copy_flags(struct parser *p, const char *instr, struct dockerfile_copy *c)
{
	const char *v;
	int rc = 0;
	c->chmod = -1;
	for (size_t i = 0; !rc && i < p->flags.n; i++) {
		struct slice f = p->flags.v[i];
		if (flag_is(f, "from", &v)) {
			rc = fail(p, ENOTSUP, "%s --from: multi-stage builds are not supported", instr);
		} else if (flag_is(f, "chown", &v)) {
			if (c->chown || !v || !*v)
				rc = fail(p, EINVAL, "%s: --chown=USER[:GROUP], once", instr);
			else if (!(rc = word(p, (struct slice){ v, strlen(v) }, &c->chown)))
				rc = user_spec(p, "--chown", c->chown, NULL);
		} else if (flag_is(f, "chmod", &v)) {
			size_t n = v ? strlen(v) : 0;
			if (c->chmod >= 0 || !n || n > 4 || strspn(v, "01234567") != n)
				rc = fail(p, EINVAL, "%s: --chmod=MODE, 1 to 4 octal digits, once", instr);
			else
				c->chmod = (int)strtol(v, NULL, 8);
		} else {
			rc = bad_flag(p, instr, f);
		}
	}
	return rc;
}

static int copy_source(struct parser *p, const char *instr, const char *w, const char **out)
{
	bool add = !strcmp(instr, "ADD");
	if (!*w)
		return fail(p, EINVAL, "%s: a source is empty", instr);
	if (strstr(w, "://") && add)
		return fail(p, ENOTSUP, "ADD %s: URLs are not supported (builds have no network)", SHOW(w));
	if (strstr(w, "://"))
		return fail(p, EINVAL, "COPY %s: COPY takes files of the build context, not URLs", SHOW(w));
	if (add && !strncmp(w, "git@", 4))
		return fail(p, ENOTSUP, "ADD %s: git sources are not supported (builds have no network)", SHOW(w));
	if (w[0] == '/')
		return fail(p, EINVAL, "%s %s: a source is a path in the build context, not an absolute one", instr,
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
	if (!args.n || args.s[0] != '[' || (rc = json_array(p, args, w)) == 0) {
		if ((rc = no_heredoc(p, instr, args)) || (rc = split_blank(p, args, w)))
			return rc;
	} else if (rc < 0) {
		return rc;
	}
	if (w->n < 2)
		return fail(p, EINVAL, "%s needs a source and a destination: %s SRC... DEST", instr, instr);
	const char **src = mem_alloc(p, w->n * sizeof(*src));
	if (!src)
		return nomem(p);
	c->n_src = w->n - 1;
	c->src = src;
	for (size_t i = 0; i < c->n_src; i++)
		if ((rc = word(p, w->v[i], &d)) || (rc = copy_source(p, instr, d, &src[i])))
			return rc;
	src[c->n_src] = NULL;
	if ((rc = word(p, w->v[c->n_src], &d)))
		return rc;
	if (!*d)
		return fail(p, EINVAL, "%s: the destination is empty", instr);
	const char *last = strrchr(d, '/') ? strrchr(d, '/') + 1 : d;
	c->dest_dir = d[strlen(d) - 1] == '/' || !strcmp(last, ".") || !strcmp(last, "..");
	if (c->n_src > 1 && !c->dest_dir)
		return fail(p, EINVAL, "%s with more than one source needs a destination ending in /", instr);
	return norm(p, instr, p->ctx.workdir, d, true, &c->dest);
}

static int do_env(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = no_flags(p, "ENV");
	if (rc || (rc = kv_list(p, "ENV", args, &s->pairs)))
		return rc;
	for (size_t i = 0; i < s->pairs.n; i++) {
		struct var *v;
		if ((rc = var_slot(p, p->vars, s->pairs.kv[i].key, &v)))
			return rc;
		v->env = &s->pairs.kv[i];
		v->base = false;
	}
	p->env_dirty = true;
	return 0;
}

static int do_arg(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = no_flags(p, "ARG");
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
				if ((rc = mem_dup(p, a + n + 1, strlen(a + n + 1), &kv[i].value)))
					return rc;
			}
		}
		if (!kv[i].value && p->vars == &p->stage && (v = var_find(&p->meta, kv[i].key, n)) && v->arg)
			kv[i].value = v->arg->value; /* ARG NAME in the stage: the value NAME had before FROM */
		if ((rc = var_slot(p, p->vars, kv[i].key, &v)))
			return rc;
		v->arg = &kv[i];
	}
	p->env_dirty = true;
	return 0;
}

static int do_label(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	int rc = no_flags(p, "LABEL");
	if (rc || (rc = kv_list(p, "LABEL", args, &s->pairs)))
		return rc;
	for (size_t i = 0; i < s->pairs.n; i++) {
		const struct dockerfile_kv *kv = &s->pairs.kv[i];
		size_t k = 0;
		while (k < p->n_labels && strcmp(p->labels[k]->key, kv->key))
			k++;
		if (k == DOCKERFILE_LABELS_MAX)
			return fail(p, E2BIG, "more than %d labels", DOCKERFILE_LABELS_MAX);
		p->n_labels += k == p->n_labels;
		p->labels[k] = kv;
		if (!strcmp(kv->key, "space.start"))
			p->df->start = kv->value;
		if (!strcmp(kv->key, "space.ready"))
			p->df->ready = kv->value;
	}
	return 0;
}

static int do_workdir(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	const char *w;
	int rc = no_flags(p, "WORKDIR");
	if (rc)
		return rc;
	if (!args.n)
		return fail(p, EINVAL, "WORKDIR needs a path");
	if ((rc = word(p, args, &w)))
		return rc;
	if (!*w)
		return fail(p, EINVAL, "WORKDIR: the path is empty after substitution");
	if ((rc = norm(p, "WORKDIR", p->ctx.workdir, w, true, &s->workdir)))
		return rc;
	p->ctx.workdir = p->df->workdir = s->workdir;
	return 0;
}

static int do_user(struct parser *p, struct dockerfile_step *s, struct slice args)
{
	const char *w;
	int rc = no_flags(p, "USER");
	if (rc)
		return rc;
	if (!args.n)
		return fail(p, EINVAL, "USER needs a user: USER NAME[:GROUP]");
	if ((rc = word(p, args, &w)) || (rc = user_spec(p, "USER", w, &s->user)))
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
		return fail(p, E2BIG, "more than %zu %ss", max, what);
	for (size_t i = 0; i < n; i++) {
		const char *a = list[i], *eq = a ? strchr(a, '=') : NULL;
		size_t k = eq ? (size_t)(eq - a) : 0;
		if (!eq || !is_name(a, k))
			return fail(p, EINVAL, "%s %s: NAME=VALUE, NAME [A-Za-z_][A-Za-z0-9_]*", what,
				    a ? SHOW(a) : "NULL");
		if (k > DOCKERFILE_KEY_MAX)
			return fail(p, E2BIG, "%s: a name is longer than %d bytes", what, DOCKERFILE_KEY_MAX);
		if (strlen(eq + 1) > DOCKERFILE_VALUE_MAX)
			return fail(p, E2BIG, "%s %s: the value is longer than %d bytes", what, show(a, k).s,
				    DOCKERFILE_VALUE_MAX);
		for (size_t j = 0; j < i; j++)
			if (!strncmp(list[j], a, k + 1))
				return fail(p, EINVAL, "%s %s is given twice", what, show(a, k).s);
	}
	return 0;
}

/* The base's environment, in force from FROM on. */
static int load_base(struct parser *p)
{
	struct dockerfile_kv *kv = mem_alloc(p, p->in->n_base_env * sizeof(*kv));
	if (!kv)
		return nomem(p);
	for (size_t i = 0; i < p->in->n_base_env; i++) {
		const char *a = p->in->base_env[i], *eq = strchr(a, '=');
		struct var *v;
		int rc = mem_dup(p, a, (size_t)(eq - a), &kv[i].key);
		if (rc || (rc = mem_dup(p, eq + 1, strlen(eq + 1), &kv[i].value)) ||
		    (rc = var_slot(p, &p->stage, kv[i].key, &v)))
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
	const struct dockerfile_kv **env = mem_alloc(p, (p->vars->n + 1) * sizeof(*env));
	if (!env)
		return nomem(p);
	size_t n = 0;
	for (size_t i = 0; i < p->vars->n; i++)
		if (var_kv(&p->vars->v[i]))
			env[n++] = var_kv(&p->vars->v[i]);
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
		if (eq_nocase((struct slice){ p->raw[i].text.s, strcspn(p->raw[i].text.s, " \t\v\f\r") }, "FROM"))
			from = i;
	if (!(df->steps = mem_alloc(p, p->n_raw * sizeof(*df->steps))))
		return nomem(p);
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
		struct slice args = trim((struct slice){ text.s + kw.n, text.n - kw.n });
		const struct instruction *ins = NULL;
		p->line = p->raw[i].line;
		for (size_t k = 0; k < sizeof(INSTRUCTIONS) / sizeof(INSTRUCTIONS[0]); k++)
			if (eq_nocase(kw, INSTRUCTIONS[k].name))
				ins = &INSTRUCTIONS[k];
		for (size_t k = 0; !ins && k < sizeof(UNSUPPORTED) / sizeof(UNSUPPORTED[0]); k++)
			if (eq_nocase(kw, UNSUPPORTED[k].name))
				return fail(p, ENOTSUP, "%s is not supported (space builds: " SUPPORTED "%s)",
					    UNSUPPORTED[k].name, UNSUPPORTED[k].hint);
		if (!ins)
			return fail(p, EINVAL, "unknown instruction %s (space builds: " SUPPORTED ")", SHOWS(kw));
		if (from != SIZE_MAX && i < from && ins->kind != DOCKERFILE_ARG)
			return fail(p, EINVAL, "%s before FROM: only ARG may come before FROM", ins->name);
		if (ins->kind == DOCKERFILE_FROM && i != from)
			return fail(p, ENOTSUP,
				    "a second FROM (the first is on line %d): multi-stage builds are not supported",
				    p->raw[from].line);
		if ((rc = ctx_env(p)))
			return rc;
		s->kind = ins->kind;
		s->line = p->line;
		s->text = text.s;
		s->ctx = p->ctx;
		if ((rc = take_flags(p, &args)) || (rc = ins->parse(p, s, args)))
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
		return fail(p, EINVAL, "build arguments no ARG declares: %s", list);
	const struct dockerfile_kv **env = mem_alloc(p, (p->stage.n + 1) * sizeof(*env));
	const struct dockerfile_kv **labels = mem_alloc(p, (p->n_labels + 1) * sizeof(*labels));
	if (!env || !labels)
		return nomem(p);
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
		return err_set(e, 500, "internal", ENOMEM, "out of memory reading the Dockerfile");
	}
	p->in = in;
	p->df = df;
	p->e = e;
	p->esc = '\\';
	p->tmp.max = DOCKERFILE_VALUE_MAX;
	const char *nul = in->len ? memchr(in->text, '\0', in->len) : NULL;
	if (in->len > DOCKERFILE_SIZE_MAX) {
		rc = fail(p, E2BIG, "the Dockerfile is larger than %d bytes", DOCKERFILE_SIZE_MAX);
	} else if (nul) {
		p->line = 1;
		for (const char *c = in->text; c < nul; c++)
			p->line += *c == '\n';
		rc = fail(p, EINVAL, "a NUL byte");
	} else if (!(rc = check_assignments(p, "build argument", in->build_args, in->n_build_args,
					     DOCKERFILE_BUILD_ARGS_MAX)) &&
		   !(rc = check_assignments(p, "base environment variable", in->base_env, in->n_base_env,
					     DOCKERFILE_VARS_MAX)) &&
		   !(rc = lex(p)) && !(rc = steps(p))) {
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

/* The canonical text */

struct out {
	char *s;
	size_t n, len;
};

static void out_put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->n) {
		size_t k = o->n - 1 - o->len < n ? o->n - 1 - o->len : n;
		memcpy(o->s + o->len, s, k);
		o->s[o->len + k] = '\0';
	}
	o->len += n;
}

static void field(struct out *o, const char *name, const char *v)
{
	char num[32];
	int k = snprintf(num, sizeof(num), "=%zu:", strlen(v));
	out_put(o, name, strlen(name));
	out_put(o, num, (size_t)k);
	out_put(o, v, strlen(v));
	out_put(o, "\n", 1);
}

size_t dockerfile_canonical(const struct dockerfile_step *s, char *buf, size_t n)
{
	static const char *const bases[] = { "default", "scratch", "template", "image" };
	struct out o = { buf, n, 0 };
	char mode[8];
	if (n)
		buf[0] = '\0';
	field(&o, "kind", dockerfile_kind_name(s->kind));
	switch (s->kind) {
	case DOCKERFILE_FROM: {
		const char *const names[] = { "ref", "registry", "name", "tag", "digest" };
		const char *const parts[] = { s->from.ref, s->from.registry, s->from.name, s->from.tag,
					      s->from.digest };
		field(&o, "base", bases[s->from.base]);
		for (size_t i = 0; i < 5; i++)
			if (parts[i])
				field(&o, names[i], parts[i]);
		break;
	}
	case DOCKERFILE_RUN:
		if (s->run.shell)
			field(&o, "shell", s->run.shell);
		for (size_t i = 0; i < s->run.argc; i++)
			field(&o, "arg", s->run.argv[i]);
		for (size_t i = 0; i < s->ctx.n_env; i++) {
			field(&o, "env", s->ctx.env[i]->key);
			field(&o, "value", s->ctx.env[i]->value);
		}
		field(&o, "workdir", s->ctx.workdir);
		if (s->ctx.user)
			field(&o, "user", s->ctx.user);
		break;
	case DOCKERFILE_COPY:
	case DOCKERFILE_ADD:
		for (size_t i = 0; i < s->copy.n_src; i++)
			field(&o, "src", s->copy.src[i]);
		field(&o, "dest", s->copy.dest);
		field(&o, "dest_dir", s->copy.dest_dir ? "1" : "0");
		if (s->copy.chown)
			field(&o, "chown", s->copy.chown);
		if (s->copy.chmod >= 0) {
			snprintf(mode, sizeof(mode), "%04o", (unsigned)s->copy.chmod & 07777);
			field(&o, "chmod", mode);
		}
		break;
	case DOCKERFILE_ENV:
	case DOCKERFILE_ARG:
	case DOCKERFILE_LABEL:
		for (size_t i = 0; i < s->pairs.n; i++) {
			field(&o, "key", s->pairs.kv[i].key);
			const char *v = s->pairs.kv[i].value;
			field(&o, v ? "value" : "unset", v ? v : "");
		}
		break;
	case DOCKERFILE_WORKDIR:
		field(&o, "path", s->workdir);
		break;
	case DOCKERFILE_USER:
		field(&o, "user", s->user.user);
		if (s->user.group)
			field(&o, "group", s->user.group);
		break;
	}
	return o.len;
}

const char *dockerfile_kind_name(enum dockerfile_kind k)
{
	static const char *const names[] = { [DOCKERFILE_FROM] = "FROM",       [DOCKERFILE_RUN] = "RUN",
					     [DOCKERFILE_COPY] = "COPY",       [DOCKERFILE_ADD] = "ADD",
					     [DOCKERFILE_ENV] = "ENV",         [DOCKERFILE_ARG] = "ARG",
					     [DOCKERFILE_WORKDIR] = "WORKDIR", [DOCKERFILE_USER] = "USER",
					     [DOCKERFILE_LABEL] = "LABEL" };
	return k <= DOCKERFILE_LABEL ? names[k] : "?";
}

int dockerfile_err_line(const struct err *e)
{
	if (!e || strncmp(e->msg, "line ", 5) || !is_digit(e->msg[5]))
		return 0;
	return atoi(e->msg + 5);
}

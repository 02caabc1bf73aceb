/*
 * lib/host/dockerfile_lex.c - the Dockerfile parser's bottom layer (see dockerfile_int.h).
 *
 * What the other two files build on: messages, the arena the result lives in, growing strings
 * and lists of slices; then the first pass, which lexes the text into instructions (parser
 * directives, comment and blank lines, continuations) into p->raw; then what an instruction's
 * handler reads before its words: the leading --flags, and a JSON array (the exec form).
 */
#include "lib/host/dockerfile_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEM_CHUNK (64 * 1024)

/* Messages, memory and strings */

int df_fail(struct parser *p, int err, const char *fmt, ...)
{
	char msg[sizeof(p->e->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->line > 0)
		return err_set(p->e, ERR_INVALID, err, "line %d: %s", p->line, msg);
	return err_set(p->e, ERR_INVALID, err, "%s", msg);
}

int df_nomem(struct parser *p)
{
	return err_set(p->e, ERR_INTERNAL, ENOMEM, "out of memory reading the Dockerfile");
}

struct shown df_show(const char *s, size_t n)
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

void *df_mem_alloc(struct parser *p, size_t n)
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

int df_mem_dup(struct parser *p, const char *s, size_t n, const char **out)
{
	char *d = df_mem_alloc(p, n + 1);
	if (!d)
		return df_nomem(p);
	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
	*out = d;
	return 0;
}

int df_sb_put(struct parser *p, struct sbuf *b, const char *s, size_t n)
{
	if (n > b->max - b->len)
		return df_fail(p, E2BIG, "a word is longer than %zu bytes after substitution", b->max);
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *s2 = realloc(b->s, cap);
		if (!s2)
			return df_nomem(p);
		b->s = s2;
		b->cap = cap;
	}
	if (n)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int df_sb_putc(struct parser *p, struct sbuf *b, char c)
{
	return df_sb_put(p, b, &c, 1);
}

int df_push(struct parser *p, struct slices *v, const char *s, size_t n)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		struct slice *n2 = realloc(v->v, cap * sizeof(*n2));
		if (!n2)
			return df_nomem(p);
		v->v = n2;
		v->cap = cap;
	}
	v->v[v->n++] = (struct slice){ s, n };
	return 0;
}

static struct slice ltrim(struct slice l)
{
	while (l.n && is_space(l.s[0])) {
		l.s++;
		l.n--;
	}
	return l;
}

struct slice df_trim(struct slice l)
{
	l = ltrim(l);
	while (l.n && is_space(l.s[l.n - 1]))
		l.n--;
	return l;
}

bool df_eq_nocase(struct slice a, const char *b)
{
	size_t i = 0;
	for (; i < a.n && b[i]; i++)
		if ((is_alpha(a.s[i]) ? (a.s[i] | 0x20) : a.s[i]) != (is_alpha(b[i]) ? (b[i] | 0x20) : b[i]))
			return false;
	return i == a.n && !b[i];
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
		return df_fail(p, E2BIG, "more than %d instructions", DOCKERFILE_STEPS_MAX);
	if (text.n > DOCKERFILE_LINE_MAX)
		return df_fail(p, E2BIG, "the instruction is longer than %d bytes (continuation lines joined)",
			       DOCKERFILE_LINE_MAX);
	if (p->n_raw == p->cap_raw) {
		size_t cap = p->cap_raw ? p->cap_raw * 2 : 64;
		struct raw *r = realloc(p->raw, cap * sizeof(*r));
		if (!r)
			return df_nomem(p);
		p->raw = r;
		p->cap_raw = cap;
	}
	struct raw *r = &p->raw[p->n_raw++];
	r->line = line;
	r->text.n = text.n;
	return df_mem_dup(p, text.s, text.n, &r->text.s);
}

int df_lex(struct parser *p)
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
			if (!df_eq_nocase(name, "escape"))
				continue; /* syntax=, check= and others: BuildKit's, comments here */
			if (escape_seen)
				rc = df_fail(p, EINVAL, "the escape directive is given twice");
			else if (value.n != 1 || (value.s[0] != '\\' && value.s[0] != '`'))
				rc = df_fail(p, EINVAL, "escape=%s: the escape character is \\ or `", SHOWS(value));
			p->esc = value.n ? value.s[0] : '\\';
			escape_seen = true;
			continue;
		}
		directives = false;
		if (!df_trim(l).n || l.s[0] == '#')
			continue;
		bool more = continues(p, &l);
		join.len = 0;
		rc = df_sb_put(p, &join, l.s, l.n);
		while (!rc && more && pos < in->len) {
			struct slice c = next_line(in, &pos), t = df_trim(c);
			line++;
			if (!t.n || t.s[0] == '#')
				continue; /* comment and blank lines inside an instruction */
			more = continues(p, &c);
			rc = df_sb_put(p, &join, c.s, c.n);
		}
		struct slice text = df_trim((struct slice){ join.s, join.len });
		if (!rc && text.n)
			rc = add_raw(p, p->line, text);
	}
	free(join.s);
	if (!rc && !p->n_raw) {
		p->line = 0;
		rc = df_fail(p, EINVAL, "the Dockerfile holds no instruction");
	}
	return rc;
}

/* Flags and JSON arrays */

/* Leading "--name[=value]" words of args, as Docker's extractBuilderFlags reads them (quotes and
 * backslashes undone), into p->flags without their "--"; args keeps what follows. */
int df_take_flags(struct parser *p, struct slice *args)
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
			rc = df_sb_putc(p, &w, c);
		}
		if (rc)
			break;
		if (w.len == 2 && !memcmp(w.s, "--", 2))
			break; /* "--" ends the flags */
		const char *f = NULL; /* for GCC, which cannot see that df_mem_dup sets it when it returns 0 */
		if ((rc = df_mem_dup(p, w.s + 2, w.len - 2, &f)) || (rc = df_push(p, &p->flags, f, w.len - 2)))
			break;
	}
	free(w.s);
	*args = df_trim((struct slice){ s + i, n - i });
	return rc;
}

/* The flag f ("chown=x", "link") is name; *value is what follows '=', or NULL. */
bool df_flag_is(struct slice f, const char *name, const char **value)
{
	size_t k = strcspn(f.s, "=");
	if (k != strlen(name) || memcmp(f.s, name, k))
		return false;
	*value = f.s[k] ? f.s + k + 1 : NULL;
	return true;
}

int df_bad_flag(struct parser *p, const char *instr, struct slice f)
{
	static const char *const docker[] = { "mount", "network", "security", "platform", "from", "link",
					      "parents", "exclude", "checksum", "keep-git-dir", "unpack", "chown",
					      "chmod" };
	const char *v;
	for (size_t i = 0; i < sizeof(docker) / sizeof(docker[0]); i++)
		if (df_flag_is(f, docker[i], &v))
			return df_fail(p, ENOTSUP, "%s --%s is not supported", instr, docker[i]);
	return df_fail(p, EINVAL, "%s: unknown flag --%s", instr, df_show(f.s, strcspn(f.s, "=")).s);
}

int df_no_flags(struct parser *p, const char *instr)
{
	return p->flags.n ? df_bad_flag(p, instr, p->flags.v[0]) : 0;
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
		if (out && (rc = df_sb_put(p, out, u, un)))
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
				rc = df_nomem(p);
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
int df_json_array(struct parser *p, struct slice s, struct slices *out)
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
				if ((rc = df_mem_dup(p, str.s, str.len, &d)) || (rc = df_push(p, out, d, str.len)))
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
		rc = df_fail(p, EINVAL, "a JSON array in a Dockerfile holds strings only");
	else if (nul)
		rc = df_fail(p, EINVAL, "a JSON string holds \\u0000");
	else
		rc = 1;
out:
	free(str.s);
	return rc;
}

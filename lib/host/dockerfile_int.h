/*
 * lib/host/dockerfile_int.h - what the files of the Dockerfile parser share.
 *
 * Internal: only lib/host/dockerfile*.c include it; the module's interface is
 * dockerfile.h. The parser is five files in layers, each calling only those listed before it
 * (scripts/layers.py fails on a circle):
 *   dockerfile_lex.c    messages, the arena, strings; lexing; an instruction's flags, JSON arrays
 *   dockerfile_words.c  shell words: splitting, quoting and variable substitution
 *   dockerfile_ref.c    what FROM names: a template, an image reference
 *   dockerfile_canon.c  a step's canonical text, the instructions' names
 *   dockerfile.c        the instructions, the result, the public functions
 *
 * Every function below works for one dockerfile_parse call, on its struct parser. Those that
 * return int return 0 or a negative errno with p->e filled (by df_fail or df_nomem), unless they say
 * otherwise; what they put in the arena lives until dockerfile_free, and nothing else they
 * allocate outlives them (struct sbuf and struct slices memory is the caller's to free).
 * Their names start with df_: they are global symbols in spaced, where a plain json_array
 * would take the place of jansson's.
 */
#ifndef SPACE_LIB_HOST_DOCKERFILE_INT_H
#define SPACE_LIB_HOST_DOCKERFILE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/host/err.h"
#include "lib/host/dockerfile.h"

/* The arena the result lives in: chunks, the one being filled first (df_mem_alloc, dockerfile_free). */
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

/* Character classes: ASCII only, whatever the locale. */

static inline bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
static inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static inline bool is_alpha(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z'); }
static inline bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }

/* dockerfile_lex.c: messages */

/* Fills p->e (status 400, "line N: " first while p->line > 0) and returns -err. */
int df_fail(struct parser *p, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Fills p->e for out of memory (status 500) and returns -ENOMEM. */
int df_nomem(struct parser *p);

/* Up to 40 bytes of what a user wrote, for a message: bytes other than printable ASCII as '?'. */
struct shown {
	char s[48];
};

struct shown df_show(const char *s, size_t n);

#define SHOW(str) (df_show((str), strlen(str)).s)
#define SHOWS(sl) (df_show((sl).s, (sl).n).s)

/* dockerfile_lex.c: memory and strings */

/* n bytes in the arena (p->df->mem), aligned for any type; NULL when out of memory (p->e unset). */
void *df_mem_alloc(struct parser *p, size_t n);

/* s[0..n) and a NUL, copied into the arena, at *out. */
int df_mem_dup(struct parser *p, const char *s, size_t n, const char **out);

/* s[0..n), or c, appended to b (a NUL kept after it); -E2BIG past b->max. */
int df_sb_put(struct parser *p, struct sbuf *b, const char *s, size_t n);
int df_sb_putc(struct parser *p, struct sbuf *b, char c);

/* The slice s[0..n) appended to v. */
int df_push(struct parser *p, struct slices *v, const char *s, size_t n);

/* l without its blanks at either end. */
struct slice df_trim(struct slice l);

/* Whether a is b, the case of ASCII letters aside. */
bool df_eq_nocase(struct slice a, const char *b);

/* dockerfile_lex.c: lexing, flags and JSON arrays */

/* The first pass: p->in into p->raw, an instruction each, its text in the arena; p->esc as the
 * directives set it. -EINVAL when there is no instruction. */
int df_lex(struct parser *p);

/* The leading "--name[=value]" words of args into p->flags, without their "--"; args keeps
 * what follows. */
int df_take_flags(struct parser *p, struct slice *args);

/* Whether the flag f ("chown=x", "link") is name; *value is what follows '=', or NULL. */
bool df_flag_is(struct slice f, const char *name, const char **value);

/* The error for the flag f, which instr does not take. */
int df_bad_flag(struct parser *p, const char *instr, struct slice f);

/* 0 when the instruction at hand has no flag, else df_bad_flag's error for the first. */
int df_no_flags(struct parser *p, const char *instr);

/* s (starting with '[') as an exec form: 1 with its strings decoded into out (in the arena); 0
 * when s is not JSON (shell form then); an error when it is JSON but not an array of strings. */
int df_json_array(struct parser *p, struct slice s, struct slices *out);

/* dockerfile_words.c: shell words */

/* s split at blanks into out (emptied first): how Docker splits FROM, COPY and ADD. */
int df_split_blank(struct parser *p, struct slice s, struct slices *out);

/* s split as Docker's parseWords splits ENV, LABEL and ARG, quotes and escapes left in the
 * words, into out (emptied first). */
int df_split_words(struct parser *p, struct slice s, struct slices *out);

/* -ENOTSUP when a word of args starts a here-document ("<<EOF"), else 0. */
int df_no_heredoc(struct parser *p, const char *instr, struct slice args);

/* dockerfile_words.c: variables and substitution */

/* The variable name[0..len) in t, or NULL. */
struct var *df_var_find(struct vars *t, const char *name, size_t len);

/* The variable name in t at *out, added without a value when t lacks it; -E2BIG past
 * DOCKERFILE_VARS_MAX. name must outlive t. */
int df_var_slot(struct parser *p, struct vars *t, const char *name, struct var **out);

/* The pair that gives v its value, or NULL when it has none. */
const struct dockerfile_kv *df_var_kv(const struct var *v);

/* w as Docker reads one word (quotes removed, the escape character applied, the variables in
 * p->vars substituted), as a string in the arena at *out. */
int df_word(struct parser *p, struct slice w, const char **out);

/* dockerfile_ref.c: what FROM names */

/* NAME or TAG of space:NAME[:TAG] (what: "name" or "tag"), s[0..n) of FROM ref. */
int df_template_part(struct parser *p, const char *ref, const char *what, const char *s, size_t n);

/* ref, an image reference, checked and split into f's registry, name, tag and digest (in the
 * arena). */
int df_image_ref(struct parser *p, const char *ref, struct dockerfile_from *f);

#endif

/*
 * lib/host/dockerfile.h - the Dockerfile subset templates are built from.
 *
 * dockerfile_parse reads a Dockerfile's bytes and the build arguments given with it, and
 * returns the steps a builder runs, each checked, with its fields parsed and its variables
 * substituted, or one error naming the line. It is pure: no I/O, no globals, no logging; its
 * only allocations are the result (freed with dockerfile_free) and scratch memory freed
 * before it returns, all of it bounded by the limits below.
 *
 * Lexing is Docker's. A line whose first non-blank character is '#' is a comment (a '#'
 * anywhere else is an ordinary character); blank lines are skipped; a line ending in the
 * escape character (then optional blanks) continues on the next one, which is appended as
 * it is, its leading blanks kept, and comment and blank lines inside a continued
 * instruction are skipped. Keywords are case-insensitive. A UTF-8 byte-order mark is
 * skipped, a CR before a newline dropped; a NUL byte anywhere is an error. Parser
 * directives, lines "# name=value" at the very top, are read until the first line that
 * is not one: "# escape=`" makes the backtick the escape character in place of the
 * backslash (for continuations and quoting alike; "# escape=\" restores it; any other
 * value is an error); "# syntax=..." and "# check=..." address BuildKit, which takes no
 * part here, and are comments.
 *
 * Instructions: FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, LABEL. Any other word
 * (CMD, ENTRYPOINT, EXPOSE, VOLUME, HEALTHCHECK, ONBUILD, STOPSIGNAL, SHELL, MAINTAINER or
 * anything unknown) is an error naming it and its line; nothing is skipped silently. Leading
 * "--flag[=value]" words are read as Docker reads them, and a flag an instruction does not
 * take is an error.
 *
 *   FROM scratch | space:NAME[:TAG] | [REGISTRY[:PORT]/]REPOSITORY[:TAG][@sha256:HEX]
 *        At most one FROM, the first instruction: only ARG may come before it, and those
 *        ARGs are in force in FROM alone (a stage sees one only if it declares it again,
 *        "ARG NAME", as in Docker). A space template: NAME and TAG are
 *        [A-Za-z0-9][A-Za-z0-9._-]*, at most DOCKERFILE_TEMPLATE_NAME_MAX bytes each (the
 *        template names of daemon/store/template.h); TAG defaults to "latest". An image:
 *        Docker's grammar, with lower-case repository path components, a registry taken
 *        from the first component when it holds '.' or ':' or is "localhost", and only
 *        sha256 digests. "FROM x AS name" (multi-stage builds) and --platform are refused.
 *        A Dockerfile with no FROM builds on the default template: the result says so with
 *        DOCKERFILE_BASE_DEFAULT (and there is no FROM step).
 *   RUN  Shell form: the rest of the instruction, handed to /bin/sh -c as written (the
 *        shell substitutes variables; the parser does not). Exec form: a JSON array of
 *        strings (all JSON escapes, \uXXXX with surrogate pairs; \u0000 is refused); a
 *        line starting with '[' that is not valid JSON is shell form, as in Docker, and
 *        valid JSON holding anything but strings is an error. Flags (--mount, --network,
 *        --security) and here-documents (<<EOF) are refused.
 *   COPY, ADD  [--chown=USER[:GROUP]] [--chmod=OCTAL] SRC... DEST, or the JSON form.
 *        Sources are relative to the build context, normalised ("./a//b" is "a/b", the
 *        whole context is "."), and may hold wildcards for the builder to match; an
 *        absolute source, one that climbs out of the context ("../x", "a/../../b"), and a
 *        URL are refused (builds have no network), so is ADD of a git source; ADD of a
 *        local archive is a plain ADD step (the builder decides on extraction). DEST is
 *        resolved against the WORKDIR in force; more than one source needs a DEST that
 *        names a directory (ending in '/'). --chmod takes 1 to 4 octal digits; --from
 *        (multi-stage), --link, --parents, --exclude, --checksum, --keep-git-dir and
 *        --unpack are refused.
 *   ENV  NAME=VALUE [NAME=VALUE...], or the legacy ENV NAME VALUE (the rest of the line).
 *        Words are quoted as Docker quotes them: "..." (where the escape character escapes
 *        only '"', '$' and itself), '...' (literal), and the escape character outside quotes.
 *        NAME is [A-Za-z_][A-Za-z0-9_]*.
 *   ARG  NAME[=DEFAULT] [NAME[=DEFAULT]...]: the build argument given for NAME, else the
 *        default, else (in the stage) the value of an ARG NAME before FROM, else unset
 *        (it expands to nothing). A build argument that no ARG of the file declares is an
 *        error listing the names (Docker only warns).
 *   WORKDIR  A path; a relative one is resolved against the WORKDIR in force, which starts
 *        at "/". The result is absolute and normalised ("..", ".", "//" resolved).
 *   USER  USER[:GROUP], each a name ([A-Za-z_][A-Za-z0-9_.-]*, '$' allowed last) or a
 *        number (0 to 4294967294), at most DOCKERFILE_USER_MAX bytes.
 *   LABEL  KEY=VALUE pairs quoted as ENV's (and the legacy LABEL KEY VALUE). Keys starting
 *        with "space." are the template's own, and only two exist:
 *          space.start  the command line (for /bin/sh -c) a sandbox made from the
 *                       template starts with;
 *          space.ready  a command line that succeeds once the start command is ready
 *                       (the daemon runs it until it does);
 *          space.pool   the size of the template's warm pool, 0 to DOCKERFILE_POOL_MAX
 *                       sandboxes (decimal digits).
 *        The last value of each is in dockerfile.start, .ready and .pool; any other
 *        "space." key is an error.
 *
 * Variables are substituted as Docker substitutes them in FROM, COPY/ADD (sources, DEST and
 * --chown), ENV (names and values), ARG (names and defaults), WORKDIR, USER and LABEL, not in
 * RUN: $NAME, ${NAME}, ${NAME:-word} (word when NAME is unset or empty), ${NAME-word} (when
 * unset), ${NAME:+word} (word when NAME is set and not empty, else nothing), ${NAME+word}
 * (when set), ${NAME:?message} and ${NAME?message} (an error when empty / unset); words
 * nest. The escape character before '$' makes it literal, and a '$' before no name stays.
 * The values are the ARGs and ENVs in force before the instruction (so within one ENV line
 * all pairs see the values from before it), ENV overriding an ARG of the same name, and the
 * base's environment when the caller gives it (dockerfile_input.base_env; without it, a
 * base's variables such as PATH expand to nothing). An unterminated "${" is an error, and so
 * are ${NAME#...}, ${NAME%...} and ${NAME/...}.
 *
 * Order of calls: dockerfile_parse, then read the result (every string in it lives until
 * dockerfile_free), dockerfile_canonical for each step the builder hashes, dockerfile_free.
 */
#ifndef SPACE_LIB_HOST_DOCKERFILE_H
#define SPACE_LIB_HOST_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/host/err.h"

/* Limits; exceeding one is an error (-E2BIG) that names it. */
#define DOCKERFILE_SIZE_MAX (1 << 20)      /* bytes of the Dockerfile */
#define DOCKERFILE_STEPS_MAX 1000          /* instructions */
#define DOCKERFILE_LINE_MAX 65536          /* bytes of one instruction, continuation lines joined */
#define DOCKERFILE_BUILD_ARGS_MAX 64       /* build arguments given */
#define DOCKERFILE_VARS_MAX 256            /* names ENV and ARG set (the base's environment with them),
					    * in the stage; the same again before FROM */
#define DOCKERFILE_LABELS_MAX 256          /* label keys */
#define DOCKERFILE_POOL_MAX 64             /* LABEL space.pool: as spaced --pool's (core/pool.h) */
#define DOCKERFILE_KEY_MAX 256             /* bytes of a variable's name or a label's key */
#define DOCKERFILE_VALUE_MAX 32768         /* bytes of one word after substitution: a value, a source ... */
#define DOCKERFILE_PATH_MAX 4095           /* bytes of a path once normalised (WORKDIR, DEST, a source) */
#define DOCKERFILE_SUBST_MAX (1 << 20)     /* bytes variables' values insert, all instructions together */
#define DOCKERFILE_NEST_MAX 8              /* ${NAME:-word} nested in one another */
#define DOCKERFILE_USER_MAX 32             /* bytes of a user or group name */
#define DOCKERFILE_TEMPLATE_NAME_MAX 63    /* bytes of a space template's name, and of its tag */
#define DOCKERFILE_IMAGE_NAME_MAX 255      /* bytes of an image's name, registry included (Docker's) */
#define DOCKERFILE_IMAGE_TAG_MAX 128       /* bytes of an image's tag (Docker's) */

/* The template FROM-less Dockerfiles build on (TEMPLATE_DEFAULT of lib/host/names.h). */
#define DOCKERFILE_DEFAULT_TEMPLATE "default"

enum dockerfile_kind {
	DOCKERFILE_FROM,
	DOCKERFILE_RUN,
	DOCKERFILE_COPY,
	DOCKERFILE_ADD,
	DOCKERFILE_ENV,
	DOCKERFILE_ARG,
	DOCKERFILE_WORKDIR,
	DOCKERFILE_USER,
	DOCKERFILE_LABEL,
};

enum dockerfile_base {
	DOCKERFILE_BASE_DEFAULT,  /* no FROM: the default template */
	DOCKERFILE_BASE_SCRATCH,  /* FROM scratch: an empty root */
	DOCKERFILE_BASE_TEMPLATE, /* FROM space:NAME[:TAG] */
	DOCKERFILE_BASE_IMAGE,    /* FROM an image reference */
};

struct dockerfile_from {
	enum dockerfile_base base;
	const char *ref;      /* FROM's argument after substitution; NULL for BASE_DEFAULT */
	const char *name;     /* TEMPLATE and DEFAULT: the template; IMAGE: the repository path; else NULL */
	const char *tag;      /* TEMPLATE and DEFAULT: the tag, "latest" when none; IMAGE: the tag or NULL */
	const char *registry; /* IMAGE: "host[:port]", NULL for none (Docker Hub) */
	const char *digest;   /* IMAGE: "sha256:<64 hex>" or NULL */
};

struct dockerfile_kv {
	const char *key;
	const char *value; /* NULL only for an ARG that got no value */
};

struct dockerfile_run {
	const char *shell;       /* shell form: the command line for /bin/sh -c; NULL in exec form */
	const char *const *argv; /* exec form: argc (>= 1) strings, then NULL; NULL in shell form */
	size_t argc;
};

struct dockerfile_copy { /* COPY and ADD */
	const char *const *src; /* n_src (>= 1) paths in the context, normalised; "." is all of it */
	size_t n_src;
	const char *dest;       /* absolute and normalised, resolved against the WORKDIR in force */
	bool dest_dir;          /* DEST names a directory to copy into (written ending in '/', or as "." or "..") */
	const char *chown;      /* --chown: "user" or "user:group"; NULL when not given */
	int chmod;              /* --chmod: 0 to 07777; -1 when not given */
};

struct dockerfile_pairs { /* ENV, ARG, LABEL: the pairs as written, in order */
	const struct dockerfile_kv *kv;
	size_t n;
};

struct dockerfile_user {
	const char *user;
	const char *group; /* NULL when none */
};

/* What is in force when a step runs, as the step before left it. */
struct dockerfile_ctx {
	const char *workdir;                    /* absolute; "/" until a WORKDIR */
	const char *user;                       /* "user[:group]"; NULL until a USER (the base's) */
	const struct dockerfile_kv *const *env; /* n_env variables with a value, in the order their names
						 * first appeared: ENV's and the base's, and the ARGs
						 * of the stage no ENV overrides; what RUN's command gets */
	size_t n_env;
};

struct dockerfile_step {
	enum dockerfile_kind kind;
	int line;         /* the instruction's first line, from 1 */
	const char *text; /* as written, continuation lines joined, comment lines in it dropped */
	struct dockerfile_ctx ctx;
	union {
		struct dockerfile_from from;   /* FROM */
		struct dockerfile_run run;     /* RUN */
		struct dockerfile_copy copy;   /* COPY, ADD */
		struct dockerfile_pairs pairs; /* ENV, ARG, LABEL */
		const char *workdir;           /* WORKDIR: the new one, absolute */
		struct dockerfile_user user;   /* USER */
	};
};

struct dockerfile_mem; /* private: where everything in a struct dockerfile lives */

struct dockerfile {
	struct dockerfile_from from;   /* the base: the FROM step's, or BASE_DEFAULT */
	struct dockerfile_step *steps; /* n_steps (>= 1), in order; ARGs before FROM among them */
	size_t n_steps;
	/* The template's settings once every step ran, as far as this file sets them. */
	const struct dockerfile_kv *const *env;    /* n_env: the last value of each name ENV set */
	size_t n_env;
	const struct dockerfile_kv *const *labels; /* n_labels: the last value of each key, space.* included */
	size_t n_labels;
	const char *workdir; /* the last WORKDIR, NULL when none */
	const char *user;    /* the last USER, "user[:group]", NULL when none */
	const char *start;   /* LABEL space.start, NULL when not set */
	const char *ready;   /* LABEL space.ready, NULL when not set */
	int pool;            /* LABEL space.pool, -1 when not set */
	struct dockerfile_mem *mem;
};

struct dockerfile_input {
	const char *text;              /* the Dockerfile: len bytes, no NUL needed after them */
	size_t len;
	const char *const *build_args; /* n_build_args "NAME=VALUE", as docker build --build-arg; a name
					* at most once */
	size_t n_build_args;
	const char *const *base_env;   /* n_base_env "NAME=VALUE": the base's environment if the caller
					* knows it, in force from FROM on as if set by ENV; may be 0 */
	size_t n_base_env;
};

/*
 * Parses in->text. Returns 0 with *out set (free it with dockerfile_free), or a negative errno
 * with e filled (status 400, code "invalid_argument"; 500 for -ENOMEM) and *out NULL:
 *   -EINVAL   malformed: no instruction at all, an unknown word, a missing argument, bad JSON,
 *             a bad name, an unterminated quote or "${", a path leaving the context, FROM not
 *             first, a build argument no ARG declares
 *   -ENOTSUP  outside the subset: one of Docker's instructions, a flag, multi-stage builds, a
 *             URL source, here-documents, a substitution form
 *   -E2BIG    a limit above exceeded
 *   -ENOMEM   out of memory
 * A message about a line starts "line N: " (dockerfile_err_line reads N back), e.g.
 * "line 7: EXPOSE is not supported (space builds: FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR,
 * USER, LABEL)". The input is only read.
 */
int dockerfile_parse(const struct dockerfile_input *in, struct dockerfile **out, struct err *e);

/* Frees what dockerfile_parse returned; NULL is fine. */
void dockerfile_free(struct dockerfile *df);

/*
 * The canonical text of step s, for a cache key: its kind and parsed fields after
 * substitution, each field as "name=LENGTH:VALUE\n" (so no two steps share a text), and for
 * RUN the environment, WORKDIR and USER in force; not its line, nor its text as written.
 * Writes at most n bytes into out, NUL-terminated when n > 0, and returns the length of the
 * whole text (as snprintf: call with n 0 to size the buffer). The files COPY and ADD read
 * are for the builder to hash beside it.
 */
size_t dockerfile_canonical(const struct dockerfile_step *s, char *out, size_t n);

/* "FROM", "RUN", ... */
const char *dockerfile_kind_name(enum dockerfile_kind k);

/* The line an error of dockerfile_parse names, or 0 when it names none (a build argument's). */
int dockerfile_err_line(const struct err *e);

#endif

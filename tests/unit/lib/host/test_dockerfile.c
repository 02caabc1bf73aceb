/*
 * tests/unit/lib/host/test_dockerfile.c - the Dockerfile subset (lib/host/dockerfile.c,
 * dockerfile_ref.c): every instruction in every form, WORKDIR resolution, the space.* labels,
 * the FROM forms, every instruction outside the subset and every malformed line refused with
 * its line, every limit at its edge. Docker's quoting, continuations, comments and
 * substitution are test_dockerfile_words.c's; the canonical text, test_dockerfile_canon.c's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/host/dockerfile.h"
#include "tests/unit/lib/host/dockerfile_check.h"

#define SHA "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void from_takes_scratch_templates_and_images(void **state)
{
	(void)state;
	struct dockerfile *df = good("FROM scratch\n");
	assert_int_equal(df->from.base, DOCKERFILE_BASE_SCRATCH);
	assert_int_equal(df->n_steps, 1);
	assert_int_equal(df->steps[0].kind, DOCKERFILE_FROM);
	dockerfile_free(df);

	df = good("from space:python\n");
	assert_int_equal(df->from.base, DOCKERFILE_BASE_TEMPLATE);
	assert_string_equal(df->from.name, "python");
	assert_string_equal(df->from.tag, "latest");
	dockerfile_free(df);
	df = good("FROM space:Py_3.12-slim:v2.b_c-d\n");
	assert_string_equal(df->from.name, "Py_3.12-slim");
	assert_string_equal(df->from.tag, "v2.b_c-d");
	dockerfile_free(df);

	static const struct {
		const char *ref, *registry, *name, *tag, *digest;
	} images[] = {
		{ "debian", NULL, "debian", NULL, NULL },
		{ "debian:bookworm-slim", NULL, "debian", "bookworm-slim", NULL },
		{ "library/python:3.12", NULL, "library/python", "3.12", NULL },
		{ "ghcr.io/org/team/app:v1", "ghcr.io", "org/team/app", "v1", NULL },
		{ "localhost:5000/a__b.c--d:_t", "localhost:5000", "a__b.c--d", "_t", NULL },
		{ "localhost/app", "localhost", "app", NULL, NULL },
		{ "Registry.Example-1.com:443/x/y", "Registry.Example-1.com:443", "x/y", NULL, NULL },
		{ "UPPER/app", "UPPER", "app", NULL, NULL }, /* an upper-case first part is a host, as in Docker */
		{ "alpine@" SHA, NULL, "alpine", NULL, SHA },
		{ "r.io:1/a:1@" SHA, "r.io:1", "a", "1", SHA },
	};
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		df = good(fmt("FROM %s\n", images[i].ref));
		assert_int_equal(df->from.base, DOCKERFILE_BASE_IMAGE);
		assert_string_equal(df->from.ref, images[i].ref);
		assert_string_equal(df->from.name, images[i].name);
		if (images[i].registry)
			assert_string_equal(df->from.registry, images[i].registry);
		else
			assert_null(df->from.registry);
		if (images[i].tag)
			assert_string_equal(df->from.tag, images[i].tag);
		else
			assert_null(df->from.tag);
		if (images[i].digest)
			assert_string_equal(df->from.digest, images[i].digest);
		else
			assert_null(df->from.digest);
		dockerfile_free(df);
	}

	static const char *const bad[] = {
		"Ubuntu", "app/Upper", "a//b", "a/", "/a", "a__-b", "a..b", "-a", "a-", "a_", ":tag", "a:", "a:-x",
		"a:x!", "a@sha256:abc", "a@md5:0123456789abcdef0123456789abcdef", "a@", "a@SHA256:0123456789abcdef",
		"a@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "host:0/a", "host:65536/a",
		"host:/a", "-h.io/a", "h-.io/a", "h..io/a", "h.io./a", "[::1]/a", "a b.io/c", "space", "space:",
		"space:a:", "space:-a", "space:a:b:c", "space:a/b", "space:.a",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *text = fmt("# the base\nFROM %s\n", bad[i]);
		if (!strcmp(bad[i], "space")) { /* an image named space is fine */
			dockerfile_free(good(text));
			continue;
		}
		refused(text, -EINVAL, 2, "FROM");
	}

	/* without FROM: the default template, said so, and no FROM step */
	df = good("RUN true\n");
	assert_int_equal(df->from.base, DOCKERFILE_BASE_DEFAULT);
	assert_string_equal(df->from.name, DOCKERFILE_DEFAULT_TEMPLATE);
	assert_string_equal(df->from.tag, "latest");
	assert_null(df->from.ref);
	assert_int_equal(df->n_steps, 1);
	assert_int_equal(df->steps[0].kind, DOCKERFILE_RUN);
	dockerfile_free(df);

	/* FROM's argument is substituted with the ARGs before it */
	df = good("ARG TAG=3.12\nARG REG=ghcr.io\nFROM ${REG}/app:$TAG\n");
	assert_string_equal(df->from.registry, "ghcr.io");
	assert_string_equal(df->from.tag, "3.12");
	assert_int_equal(df->n_steps, 3);
	dockerfile_free(df);
}

static void run_forms(void **state)
{
	(void)state;
	struct dockerfile *df = good("FROM scratch\n"
				     "RUN apt-get update && apt-get install -y curl   \n"
				     "RUN [\"/bin/echo\", \"a\\\"b\", \"c\\\\d\", \"e\\nf\\tg\\/\", "
				     "\"\\u00e9\\u0041\", \"\\ud83d\\ude00\", \"\\ud800x\", \"\"]\n"
				     "RUN [[ -f /x ]] && echo $HOME\n"
				     "RUN [\"a\"] && b\n"
				     "RUN [\"a\",]\n"
				     "RUN [\"a\" \"b\"]\n"
				     "run  [\"a\"]  \n");
	assert_int_equal(df->n_steps, 8);
	const struct dockerfile_run *r = &df->steps[1].run;
	assert_string_equal(r->shell, "apt-get update && apt-get install -y curl");
	assert_null(r->argv);
	r = &df->steps[2].run;
	assert_null(r->shell);
	assert_int_equal(r->argc, 8);
	assert_string_equal(r->argv[0], "/bin/echo");
	assert_string_equal(r->argv[1], "a\"b");
	assert_string_equal(r->argv[2], "c\\d");
	assert_string_equal(r->argv[3], "e\nf\tg/");
	assert_string_equal(r->argv[4], "\xc3\xa9" "A");
	assert_string_equal(r->argv[5], "\xf0\x9f\x98\x80");
	assert_string_equal(r->argv[6], "\xef\xbf\xbdx"); /* a lone surrogate: U+FFFD, as Go */
	assert_string_equal(r->argv[7], "");
	assert_null(r->argv[8]);
	/* not JSON: shell form, as written (the shell substitutes, not the parser) */
	assert_string_equal(df->steps[3].run.shell, "[[ -f /x ]] && echo $HOME");
	assert_string_equal(df->steps[4].run.shell, "[\"a\"] && b");
	assert_string_equal(df->steps[5].run.shell, "[\"a\",]");
	assert_string_equal(df->steps[6].run.shell, "[\"a\" \"b\"]");
	assert_int_equal(df->steps[7].run.argc, 1);
	assert_string_equal(df->steps[7].run.argv[0], "a");
	dockerfile_free(df);

	/* valid JSON that is not an array of strings is an error, as in Docker */
	refused("RUN [\"a\", 1]\n", -EINVAL, 1, "strings only");
	refused("RUN [\"a\", [\"b\", {\"c\": [1, true, null, -1.5e3]}]]\n", -EINVAL, 1, "strings only");
	refused("RUN [{}]\n", -EINVAL, 1, "strings only");
	refused("RUN [\"a\\u0000\"]\n", -EINVAL, 1, "\\u0000");
	/* ... while anything not JSON falls back */
	static const char *const shell[] = { "[1, 2",	     "[{\"a\" 1}]", "[01]",	   "[1.]",
					     "[tru]",	     "[\"\\x\"]",   "[\"\\u12\"]", "[\"a\tb\"]",
					     "[[[[[[[[[[", "[\"a\"] x",   "[{\"a\":1,}]", "[1e]" };
	for (size_t i = 0; i < sizeof(shell) / sizeof(shell[0]); i++) {
		df = good(fmt("RUN %s\n", shell[i]));
		assert_string_equal(df->steps[0].run.shell, shell[i]);
		dockerfile_free(df);
	}
}

static void copy_and_add_take_their_forms(void **state)
{
	(void)state;
	struct dockerfile *df = good("FROM scratch\n"
				     "WORKDIR /app\n"
				     "COPY a.txt .\n"
				     "COPY ./src//b/./c/ x/../lib/ /opt/x/\n"
				     "COPY --chown=app:staff --chmod=0640 ['x'] dest\n"
				     "ADD [\"site.tar.gz\", \"with space/\"]\n"
				     "ADD --chown=1000 * /srv\n"
				     "COPY . ..\n"
				     "copy --chmod=7 a/b/../c ./\n");
	const struct dockerfile_copy *c = &df->steps[2].copy;
	assert_int_equal(df->steps[2].kind, DOCKERFILE_COPY);
	assert_int_equal(c->n_src, 1);
	assert_string_equal(c->src[0], "a.txt");
	assert_null(c->src[1]);
	assert_string_equal(c->dest, "/app");
	assert_true(c->dest_dir);
	assert_null(c->chown);
	assert_int_equal(c->chmod, -1);
	c = &df->steps[3].copy;
	assert_int_equal(c->n_src, 2);
	assert_string_equal(c->src[0], "src/b/c");
	assert_string_equal(c->src[1], "lib");
	assert_string_equal(c->dest, "/opt/x");
	assert_true(c->dest_dir);
	c = &df->steps[4].copy; /* not JSON ('...' is no JSON string): split at blanks, quotes removed */
	assert_string_equal(c->src[0], "[x]");
	assert_string_equal(c->dest, "/app/dest");
	assert_false(c->dest_dir);
	assert_string_equal(c->chown, "app:staff");
	assert_int_equal(c->chmod, 0640);
	c = &df->steps[5].copy;
	assert_int_equal(df->steps[5].kind, DOCKERFILE_ADD);
	assert_string_equal(c->src[0], "site.tar.gz"); /* a local archive: a plain ADD */
	assert_string_equal(c->dest, "/app/with space");
	assert_true(c->dest_dir);
	c = &df->steps[6].copy;
	assert_string_equal(c->src[0], "*");
	assert_string_equal(c->chown, "1000");
	assert_string_equal(c->dest, "/srv");
	c = &df->steps[7].copy;
	assert_string_equal(c->src[0], ".");
	assert_string_equal(c->dest, "/");
	assert_true(c->dest_dir);
	c = &df->steps[8].copy;
	assert_string_equal(c->src[0], "a/c");
	assert_int_equal(c->chmod, 7);
	dockerfile_free(df);

	/* the JSON form is substituted too, as in Docker */
	df = good("FROM scratch\nARG F=app.py\nARG D=/srv/\n"
		  "COPY [\"$F\", \"${D}\"]\nCOPY --chown=${U:-nobody} $F $D\n");
	assert_string_equal(df->steps[3].copy.src[0], "app.py");
	assert_string_equal(df->steps[3].copy.dest, "/srv");
	assert_string_equal(df->steps[4].copy.chown, "nobody");
	dockerfile_free(df);

	refused("FROM scratch\nCOPY ../x /\n", -EINVAL, 2, "leaves the build context");
	refused("FROM scratch\nCOPY a/../../b /\n", -EINVAL, 2, "leaves the build context");
	refused("FROM scratch\nADD [\"ok\", \"./..\", \"/d/\"]\n", -EINVAL, 2, "leaves the build context");
	refused("FROM scratch\nARG UP=..\nCOPY $UP/etc /\n", -EINVAL, 3, "leaves the build context");
	refused("FROM scratch\nCOPY /etc/passwd /\n", -EINVAL, 2, "not an absolute one");
	refused("FROM scratch\nADD http://example.com/a /\n", -ENOTSUP, 2, "no network");
	refused("FROM scratch\nADD https://example.com/a.tar.gz /\n", -ENOTSUP, 2, "URLs are not supported");
	refused("FROM scratch\nADD git@github.com:a/b.git /\n", -ENOTSUP, 2, "git sources");
	refused("FROM scratch\nCOPY https://example.com/a /\n", -EINVAL, 2, "not URLs");
	refused("FROM scratch\nCOPY --from=build /a /\n", -ENOTSUP, 2, "multi-stage");
	refused("FROM scratch\nADD --from=build /a /\n", -ENOTSUP, 2, "multi-stage");
	refused("FROM scratch\nCOPY --link a /\n", -ENOTSUP, 2, "--link is not supported");
	refused("FROM scratch\nADD --checksum=sha256:00 a /\n", -ENOTSUP, 2, "--checksum is not supported");
	refused("FROM scratch\nCOPY --own=x a /\n", -EINVAL, 2, "unknown flag --own");
	refused("FROM scratch\nCOPY a b dest\n", -EINVAL, 2, "more than one source");
	refused("FROM scratch\nCOPY a\n", -EINVAL, 2, "needs a source and a destination");
	refused("FROM scratch\nCOPY\n", -EINVAL, 2, "needs a source and a destination");
	refused("FROM scratch\nCOPY [\"a\"]\n", -EINVAL, 2, "needs a source and a destination");
	refused("FROM scratch\nCOPY [\"a\", 1]\n", -EINVAL, 2, "strings only");
	refused("FROM scratch\nCOPY $NONE /x\n", -EINVAL, 2, "a source is empty");
	refused("FROM scratch\nCOPY a $NONE\n", -EINVAL, 2, "the destination is empty");
	refused("FROM scratch\nCOPY --chown= a /\n", -EINVAL, 2, "--chown=USER[:GROUP]");
	refused("FROM scratch\nCOPY --chown a /\n", -EINVAL, 2, "--chown=USER[:GROUP]");
	refused("FROM scratch\nCOPY --chown=a --chown=b a /\n", -EINVAL, 2, "once");
	refused("FROM scratch\nCOPY --chown=a:b:c a /\n", -EINVAL, 2, "--chown");
	refused("FROM scratch\nCOPY --chmod=8 a /\n", -EINVAL, 2, "octal");
	refused("FROM scratch\nCOPY --chmod=07777 a /\n", -EINVAL, 2, "octal");
	refused("FROM scratch\nCOPY --chmod=u+x a /\n", -EINVAL, 2, "octal");
	refused("FROM scratch\nCOPY <<EOF /x\n", -ENOTSUP, 2, "here-documents");
	refused("FROM scratch\nCOPY \"a b\" /x\n", -EINVAL, 2, "unterminated double quote");
}

static void env_label_and_arg_take_their_forms(void **state)
{
	(void)state;
	struct dockerfile *df = good("ENV A=1 B=\"two words\" C='single $A' D=three\\ words E= F=\"\"\n"
				     "ENV G the rest  of the line\n"
				     "ENV H \"quoted rest\"\n"
				     "LABEL version=1.0 \"com.example.vendor\"=\"ACME Inc\" description=\"x=y\"\n"
				     "LABEL legacy some value\n"
				     "ARG X Y=dflt Z=\"a b\"\n");
	const struct dockerfile_pairs *p = &df->steps[0].pairs;
	assert_int_equal(p->n, 6);
	assert_string_equal(value_of(p, "A"), "1");
	assert_string_equal(value_of(p, "B"), "two words");
	assert_string_equal(value_of(p, "C"), "single $A");
	assert_string_equal(value_of(p, "D"), "three words");
	assert_string_equal(value_of(p, "E"), "");
	assert_string_equal(value_of(p, "F"), "");
	assert_string_equal(value_of(&df->steps[1].pairs, "G"), "the rest  of the line");
	assert_string_equal(value_of(&df->steps[2].pairs, "H"), "quoted rest");
	p = &df->steps[3].pairs;
	assert_string_equal(value_of(p, "version"), "1.0");
	assert_string_equal(value_of(p, "com.example.vendor"), "ACME Inc");
	assert_string_equal(value_of(p, "description"), "x=y");
	assert_string_equal(value_of(&df->steps[4].pairs, "legacy"), "some value");
	p = &df->steps[5].pairs;
	assert_int_equal(p->n, 3);
	assert_null(value_of(p, "X")); /* declared, no value */
	assert_string_equal(value_of(p, "Y"), "dflt");
	assert_string_equal(value_of(p, "Z"), "a b");
	/* the template's settings: the ENV names this file set, in order, and its labels */
	assert_int_equal(df->n_env, 8);
	assert_string_equal(df->env[0]->key, "A");
	assert_string_equal(df->env[7]->key, "H");
	assert_int_equal(df->n_labels, 4);
	assert_null(df->start);
	dockerfile_free(df);

	refused("ENV\n", -EINVAL, 1, "ENV needs NAME=VALUE");
	refused("ENV A\n", -EINVAL, 1, "needs a value");
	refused("ENV A=1 B\n", -EINVAL, 1, "B is not NAME=VALUE");
	refused("ENV A=1 # a comment\n", -EINVAL, 1, "# is not NAME=VALUE");
	refused("ENV 1A=x\n", -EINVAL, 1, "a name is [A-Za-z_]");
	refused("ENV A-B=x\n", -EINVAL, 1, "a name is [A-Za-z_]");
	refused("ENV =x\n", -EINVAL, 1, "a name is [A-Za-z_]");
	refused("ENV --x=1 A=1\n", -EINVAL, 1, "unknown flag --x");
	refused("ARG\n", -EINVAL, 1, "ARG needs a name");
	refused("ARG 9x=1\n", -EINVAL, 1, "a name is");
	refused("ARG A=\"x\n", -EINVAL, 1, "unterminated double quote");
	refused("LABEL\n", -EINVAL, 1, "LABEL needs NAME=VALUE");
	refused("LABEL a\n", -EINVAL, 1, "needs a value");
	refused("LABEL =x\n", -EINVAL, 1, "a key is empty");
	refused("LABEL \"a\tb\"=x\n", -EINVAL, 1, "control character");
	refused("LABEL a=1 b\n", -EINVAL, 1, "b is not NAME=VALUE");
}

static void workdir_user_and_the_special_labels(void **state)
{
	(void)state;
	struct dockerfile *df = good("FROM scratch\n"
				     "RUN pwd\n"
				     "WORKDIR app\n"
				     "WORKDIR ../srv/./x//y/\n"
				     "WORKDIR /../../opt\n"
				     "ENV SUB=data\n"
				     "WORKDIR $SUB/\"with space\"\n"
				     "USER app\n"
				     "USER 1000:staff\n"
				     "RUN id\n"
				     "LABEL space.start=\"python3 -m http.server 8000\" "
				     "space.ready='curl -fs localhost:8000'\n"
				     "LABEL space.start=./serve\n");
	assert_string_equal(df->steps[1].ctx.workdir, "/");
	assert_null(df->steps[1].ctx.user);
	assert_string_equal(df->steps[2].workdir, "/app");
	assert_string_equal(df->steps[3].ctx.workdir, "/app"); /* in force before the step */
	assert_string_equal(df->steps[3].workdir, "/srv/x/y");
	assert_string_equal(df->steps[4].workdir, "/opt"); /* ".." stops at the root */
	assert_string_equal(df->steps[6].workdir, "/opt/data/with space");
	assert_string_equal(df->steps[7].user.user, "app");
	assert_null(df->steps[7].user.group);
	assert_string_equal(df->steps[8].user.user, "1000");
	assert_string_equal(df->steps[8].user.group, "staff");
	assert_string_equal(df->steps[9].ctx.user, "1000:staff");
	assert_string_equal(df->steps[9].ctx.workdir, "/opt/data/with space");
	assert_string_equal(df->workdir, "/opt/data/with space");
	assert_string_equal(df->user, "1000:staff");
	assert_string_equal(df->start, "./serve"); /* the last one */
	assert_string_equal(df->ready, "curl -fs localhost:8000");
	assert_int_equal(df->n_labels, 2);
	assert_int_equal(df->pool, -1);
	dockerfile_free(df);

	df = good("LABEL space.pool=64\nLABEL space.pool=0\n");
	assert_int_equal(df->pool, 0); /* the last one */
	dockerfile_free(df);
	df = good("LABEL space.pool=64\n");
	assert_int_equal(df->pool, DOCKERFILE_POOL_MAX);
	dockerfile_free(df);
	refused("LABEL space.pool=65\n", -EINVAL, 1, "the warm pool's size is 0 to 64");
	refused("LABEL space.pool=-1\n", -EINVAL, 1, "the warm pool's size is 0 to 64");
	refused("LABEL space.pool=\"\"\n", -EINVAL, 1, "the warm pool's size is 0 to 64");
	refused("LABEL space.pool=2x\n", -EINVAL, 1, "the warm pool's size is 0 to 64");

	df = good("USER _svc$:0\nUSER root:4294967294\n");
	assert_string_equal(df->steps[0].user.user, "_svc$");
	dockerfile_free(df);

	refused("LABEL space.strat=x\n", -EINVAL, 1, "space.start, space.ready and space.pool");
	refused("LABEL space.=x\n", -EINVAL, 1, "space.start, space.ready and space.pool");
	refused("WORKDIR\n", -EINVAL, 1, "WORKDIR needs a path");
	refused("WORKDIR $NONE\n", -EINVAL, 1, "empty after substitution");
	refused("USER\n", -EINVAL, 1, "USER needs a user");
	refused("USER a b\n", -EINVAL, 1, "names ([A-Za-z_]");
	refused("USER a:b:c\n", -EINVAL, 1, "names");
	refused("USER root:\n", -EINVAL, 1, "names");
	refused("USER :root\n", -EINVAL, 1, "names");
	refused("USER 1a\n", -EINVAL, 1, "names");
	refused("USER 'a$b'\n", -EINVAL, 1, "names");
	refused("USER 4294967295\n", -EINVAL, 1, "at most 4294967294");
	refused("USER 12345678901\n", -EINVAL, 1, "at most 4294967294");
}

static void every_unsupported_instruction_is_named_with_its_line(void **state)
{
	(void)state;
	static const char *const words[] = { "CMD",     "ENTRYPOINT", "EXPOSE", "VOLUME",    "HEALTHCHECK",
					     "ONBUILD", "STOPSIGNAL", "SHELL",  "MAINTAINER" };
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		char lower[32];
		for (size_t k = 0; k <= strlen(words[i]); k++)
			lower[k] = (char)(words[i][k] >= 'A' && words[i][k] <= 'Z' ? words[i][k] + 32 : words[i][k]);
		const char *text = fmt("FROM scratch\n# a comment\n\nRUN a \\\n  b\n%s x\n", i % 2 ? lower : words[i]);
		refused(text, -ENOTSUP, 6,
			fmt("line 6: %s is not supported (space builds: FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, "
			    "LABEL",
			    words[i]));
	}
	refused("FROM scratch\nCMD [\"x\"]\n", -ENOTSUP, 2, "LABEL space.start");
	refused("FROM scratch\nHEALTHCHECK CMD true\n", -ENOTSUP, 2, "LABEL space.ready");
	refused("FROM scratch\nFOO bar\n", -EINVAL, 2, "line 2: unknown instruction FOO (space builds: FROM,");
	refused("FROM scratch\nRUNN x\n", -EINVAL, 2, "unknown instruction RUNN");
	refused("FROM scratch\n\n\xff\x01 x\n", -EINVAL, 3, "unknown instruction ??");
	refused("FROM scratch\nRUN=x\n", -EINVAL, 2, "unknown instruction RUN=x");
}

static void from_must_be_first_and_alone(void **state)
{
	(void)state;
	refused("RUN a\nFROM scratch\n", -EINVAL, 1, "RUN before FROM");
	refused("ARG A\nENV B=1\nFROM scratch\n", -EINVAL, 2, "ENV before FROM");
	refused("ARG A\nLABEL a=b\nFROM scratch\n", -EINVAL, 2, "LABEL before FROM");
	refused("FROM scratch\nRUN a\nFROM scratch\n", -ENOTSUP, 3, "the first is on line 1");
	refused("FROM a AS build\n", -ENOTSUP, 1, "multi-stage builds are not supported");
	refused("FROM a as build\n", -ENOTSUP, 1, "multi-stage");
	refused("FROM\n", -EINVAL, 1, "FROM takes one base");
	refused("FROM a b\n", -EINVAL, 1, "FROM takes one base");
	refused("FROM a AS\n", -EINVAL, 1, "FROM takes one base");
	refused("FROM $NONE\n", -EINVAL, 1, "empty after substitution");
	refused("FROM --platform=linux/arm64 debian\n", -ENOTSUP, 1, "--platform is not supported");
	refused("FROM scratch\nRUN --network=none true\n", -ENOTSUP, 2, "RUN --network is not supported");
	refused("FROM scratch\nRUN --mount=type=cache,target=/x true\n", -ENOTSUP, 2, "RUN --mount is not supported");
	refused("FROM scratch\nRUN\n", -EINVAL, 2, "RUN needs a command");
	refused("FROM scratch\nRUN []\n", -EINVAL, 2, "RUN [] needs a command");
	refused("FROM scratch\nRUN <<EOF\necho hi\nEOF\n", -ENOTSUP, 2, "here-documents");
	refused("FROM scratch\nRUN python3 <<-'EOF'\n", -ENOTSUP, 2, "here-documents");
	dockerfile_free(good("FROM scratch\nRUN cat <<< hi && a<<b && echo '<<'\n"));
	refused("FROM scratch\nWORKDIR --x /a\n", -EINVAL, 2, "unknown flag --x");
}

static void build_arguments_are_checked(void **state)
{
	(void)state;
	const char *one[] = { "A=1" };
	struct dockerfile *df = good_args("ARG A\nRUN echo\n", one, 1);
	assert_string_equal(env_of(&df->steps[1].ctx, "A"), "1");
	dockerfile_free(df);
	df = good_args("ARG A=dflt\nFROM scratch\n", one, 1); /* declared before FROM: consumed */
	dockerfile_free(df);

	const char *undeclared[] = { "A=1", "B=2", "C=" };
	refused_len("ARG A\n", 6, undeclared, 3, -EINVAL, 0, "build arguments no ARG declares: B, C");
	const char *twice[] = { "A=1", "A=2" };
	refused_len("ARG A\n", 6, twice, 2, -EINVAL, 0, "build argument A is given twice");
	const char *bare[] = { "A" };
	refused_len("ARG A\n", 6, bare, 1, -EINVAL, 0, "NAME=VALUE");
	const char *badname[] = { "1A=x" };
	refused_len("ARG A\n", 6, badname, 1, -EINVAL, 0, "NAME=VALUE");
}

/* Every limit: the largest accepted, then one more refused. */
static void limits_hold_at_their_edges(void **state)
{
	(void)state;
	char *buf = malloc(DOCKERFILE_SIZE_MAX + 64);
	struct dockerfile *df;
	struct err e;

	/* the file's size: a comment pads it to the byte */
	for (size_t size = DOCKERFILE_SIZE_MAX; size <= DOCKERFILE_SIZE_MAX + 1; size++) {
		memcpy(buf, "FROM scratch\n#", 14);
		memset(buf + 14, 'x', size - 15);
		buf[size - 1] = '\n';
		if (size == DOCKERFILE_SIZE_MAX) {
			assert_int_equal(parse_with(buf, size, NULL, 0, &df, &e), 0);
			dockerfile_free(df);
		} else {
			refused_len(buf, size, NULL, 0, -E2BIG, 0, "larger than 1048576 bytes");
		}
	}

	/* instructions */
	size_t used = (size_t)sprintf(buf, "FROM scratch\n");
	for (int i = 1; i < DOCKERFILE_STEPS_MAX; i++)
		used += (size_t)sprintf(buf + used, "RUN true\n");
	assert_int_equal(parse_with(buf, used, NULL, 0, &df, &e), 0);
	assert_int_equal(df->n_steps, DOCKERFILE_STEPS_MAX);
	dockerfile_free(df);
	used += (size_t)sprintf(buf + used, "\nRUN one more\n");
	refused_len(buf, used, NULL, 0, -E2BIG, DOCKERFILE_STEPS_MAX + 2, "more than 1000 instructions");

	/* one instruction, continuations joined */
	for (size_t len = DOCKERFILE_LINE_MAX; len <= DOCKERFILE_LINE_MAX + 1; len++) {
		const char *text = fmt("FROM scratch\nRUN %s\\\n%s\n", rep('a', 1000), rep('b', len - 1004));
		if (len == DOCKERFILE_LINE_MAX) {
			df = good(text);
			assert_int_equal(strlen(df->steps[1].text), DOCKERFILE_LINE_MAX);
			dockerfile_free(df);
		} else {
			refused(text, -E2BIG, 2, "longer than 65536 bytes");
		}
	}

	/* build arguments given */
	const char *args[DOCKERFILE_BUILD_ARGS_MAX + 1];
	char names[DOCKERFILE_BUILD_ARGS_MAX + 1][16];
	used = 0;
	for (int i = 0; i <= DOCKERFILE_BUILD_ARGS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "A%d=%d", i, i);
		args[i] = names[i];
		used += (size_t)sprintf(buf + used, "ARG A%d\n", i);
	}
	assert_int_equal(parse_with(buf, used, args, DOCKERFILE_BUILD_ARGS_MAX, &df, &e), 0);
	assert_string_equal(df->steps[DOCKERFILE_BUILD_ARGS_MAX - 1].pairs.kv[0].value, "63");
	dockerfile_free(df);
	refused_len(buf, used, args, DOCKERFILE_BUILD_ARGS_MAX + 1, -E2BIG, 0, "more than 64 build arguments");

	/* variables (names ENV and ARG set), and labels: one line of pairs each */
	used = (size_t)sprintf(buf, "ARG V0");
	for (int i = 1; i < DOCKERFILE_VARS_MAX; i++)
		used += (size_t)sprintf(buf + used, i % 2 ? "\nENV V%d=%d" : " V%d=%d", i, i);
	buf[used++] = '\n';
	assert_int_equal(parse_with(buf, used, NULL, 0, &df, &e), 0);
	assert_int_equal(df->steps[df->n_steps - 1].ctx.n_env, DOCKERFILE_VARS_MAX - 2); /* V0 has no value */
	dockerfile_free(df);
	used += (size_t)sprintf(buf + used, "ENV V1=again\nENV ONE_MORE=1\n");
	refused_len(buf, used, NULL, 0, -E2BIG, 131, "more than 256 variables");
	used = (size_t)sprintf(buf, "LABEL");
	for (int i = 0; i < DOCKERFILE_LABELS_MAX; i++)
		used += (size_t)sprintf(buf + used, " l%d=%d", i, i);
	used += (size_t)sprintf(buf + used, "\nLABEL l0=again\n");
	assert_int_equal(parse_with(buf, used, NULL, 0, &df, &e), 0);
	assert_int_equal(df->n_labels, DOCKERFILE_LABELS_MAX);
	dockerfile_free(df);
	used += (size_t)sprintf(buf + used, "LABEL one.more=1\n");
	refused_len(buf, used, NULL, 0, -E2BIG, 3, "more than 256 labels");

	/* a name's length, and a label key's */
	const char *keys = fmt("ENV %s=1\nLABEL %s=1\n", rep('K', DOCKERFILE_KEY_MAX), rep('k', DOCKERFILE_KEY_MAX));
	dockerfile_free(good(keys));
	refused(fmt("ENV %s=1\n", rep('K', DOCKERFILE_KEY_MAX + 1)), -E2BIG, 1, "a name is longer than 256 bytes");
	refused(fmt("LABEL %s=1\n", rep('k', DOCKERFILE_KEY_MAX + 1)), -E2BIG, 1, "longer than 256 bytes");
	const char *longname[] = { fmt("%s=1", rep('K', DOCKERFILE_KEY_MAX + 1)) };
	refused_len("ARG A\n", 6, longname, 1, -E2BIG, 0, "longer than 256 bytes");

	/* a value: as written, through substitution, and given as a build argument */
	dockerfile_free(good(fmt("ENV A=%s\n", rep('v', DOCKERFILE_VALUE_MAX))));
	refused(fmt("ENV A=%s\n", rep('v', DOCKERFILE_VALUE_MAX + 1)), -E2BIG, 1, "longer than 32768 bytes");
	dockerfile_free(good(fmt("ARG H=%s\nENV A=$H$H\n", rep('h', DOCKERFILE_VALUE_MAX / 2))));
	refused(fmt("ARG H=%s\n\nENV A=$H${H}x\n", rep('h', DOCKERFILE_VALUE_MAX / 2)), -E2BIG, 3, "longer than 32768");
	const char *bigarg[] = { fmt("A=%s", rep('v', DOCKERFILE_VALUE_MAX)) };
	df = good_args("ARG A\n", bigarg, 1);
	assert_int_equal(strlen(df->steps[0].pairs.kv[0].value), DOCKERFILE_VALUE_MAX);
	dockerfile_free(df);
	const char *hugearg[] = { fmt("A=%s", rep('v', DOCKERFILE_VALUE_MAX + 1)) };
	refused_len("ARG A\n", 6, hugearg, 1, -E2BIG, 0, "longer than 32768 bytes");

	/* a path once normalised: in the image and in the context */
	dockerfile_free(good(fmt("WORKDIR /%s/./x/..\n", rep('p', DOCKERFILE_PATH_MAX - 1))));
	refused(fmt("WORKDIR /%s\n", rep('p', DOCKERFILE_PATH_MAX)), -E2BIG, 1, "longer than 4095 bytes");
	dockerfile_free(good(fmt("WORKDIR /%s\nCOPY a ..\n", rep('p', DOCKERFILE_PATH_MAX - 1))));
	refused(fmt("WORKDIR /%s\nCOPY a b\n", rep('p', DOCKERFILE_PATH_MAX - 2)), -E2BIG, 2, "longer than 4095");
	dockerfile_free(good(fmt("COPY ./%s /\n", rep('s', DOCKERFILE_PATH_MAX))));
	refused(fmt("COPY %s /\n", rep('s', DOCKERFILE_PATH_MAX + 1)), -E2BIG, 1, "longer than 4095 bytes");

	/* what substitution inserts, all lines together: 32 lines of 32 x 1 KiB is the limit */
	used = (size_t)sprintf(buf, "ARG K=%s\n", rep('k', 1024));
	for (int i = 0; i < 32; i++) {
		used += (size_t)sprintf(buf + used, "ENV A=");
		for (int k = 0; k < 32; k++)
			used += (size_t)sprintf(buf + used, "$K");
		buf[used++] = '\n';
	}
	assert_int_equal(parse_with(buf, used, NULL, 0, &df, &e), 0);
	dockerfile_free(df);
	used += (size_t)sprintf(buf + used, "ENV B=${NONE:-$K}\n");
	refused_len(buf, used, NULL, 0, -E2BIG, 34, "inserts more than 1048576 bytes");

	/* ${...} nesting */
	char nest[256] = "x";
	for (int depth = 1; depth <= DOCKERFILE_NEST_MAX + 1; depth++) {
		char outer[256];
		snprintf(outer, sizeof(outer), "${N:-%s}", nest);
		strcpy(nest, outer);
		if (depth == DOCKERFILE_NEST_MAX) {
			df = good(fmt("ENV A=%s\n", nest));
			assert_string_equal(df->steps[0].pairs.kv[0].value, "x");
			dockerfile_free(df);
		}
	}
	refused(fmt("ENV A=%s\n", nest), -E2BIG, 1, "nested more than 8 deep");

	/* a user's and a group's name */
	dockerfile_free(good(fmt("USER %s:%s\n", rep('u', DOCKERFILE_USER_MAX), rep('g', DOCKERFILE_USER_MAX))));
	refused(fmt("USER %s\n", rep('u', DOCKERFILE_USER_MAX + 1)), -E2BIG, 1, "longer than 32 bytes");
	refused(fmt("USER u:%s\n", rep('g', DOCKERFILE_USER_MAX + 1)), -E2BIG, 1, "longer than 32 bytes");
	refused(fmt("COPY --chown=%s a /\n", rep('u', DOCKERFILE_USER_MAX + 1)), -E2BIG, 1, "longer than 32 bytes");

	/* a template's name and tag */
	dockerfile_free(good(fmt("FROM space:%s:%s\n", rep('n', 63), rep('t', 63))));
	refused(fmt("FROM space:%s\n", rep('n', 64)), -E2BIG, 1, "name is longer than 63 bytes");
	refused(fmt("FROM space:n:%s\n", rep('t', 64)), -E2BIG, 1, "tag is longer than 63 bytes");

	/* an image's name (registry included) and tag */
	dockerfile_free(good(fmt("FROM r.io/%s:%s\n", rep('n', DOCKERFILE_IMAGE_NAME_MAX - 5), rep('t', 128))));
	refused(fmt("FROM r.io/%s\n", rep('n', DOCKERFILE_IMAGE_NAME_MAX - 4)), -E2BIG, 1, "longer than 255 bytes");
	refused(fmt("FROM a:%s\n", rep('t', DOCKERFILE_IMAGE_TAG_MAX + 1)), -E2BIG, 1, "longer than 128 bytes");
	free(buf);
}

static void error_lines_read_back(void **state)
{
	(void)state;
	struct err e = { 0 };
	assert_int_equal(dockerfile_err_line(&e), 0);
	snprintf(e.msg, sizeof(e.msg), "line 42: x");
	assert_int_equal(dockerfile_err_line(&e), 42);
	snprintf(e.msg, sizeof(e.msg), "lines are fine");
	assert_int_equal(dockerfile_err_line(&e), 0);
	assert_int_equal(dockerfile_err_line(NULL), 0);
	dockerfile_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_takes_scratch_templates_and_images),
		cmocka_unit_test(run_forms),
		cmocka_unit_test(copy_and_add_take_their_forms),
		cmocka_unit_test(env_label_and_arg_take_their_forms),
		cmocka_unit_test(workdir_user_and_the_special_labels),
		cmocka_unit_test(every_unsupported_instruction_is_named_with_its_line),
		cmocka_unit_test(from_must_be_first_and_alone),
		cmocka_unit_test(build_arguments_are_checked),
		cmocka_unit_test(limits_hold_at_their_edges),
		cmocka_unit_test(error_lines_read_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

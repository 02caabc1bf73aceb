/*
 * tests/unit/lib/host/test_dockerfile_words.c - how the Dockerfile subset reads its text
 * (lib/host/dockerfile_lex.c, dockerfile_words.c), as Docker does: quoting and escapes,
 * continuations and comments, and variable substitution.
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

static void quoting_and_escapes_follow_docker(void **state)
{
	(void)state;
	struct dockerfile *df = good("ENV A=\"q \\\" d \\$ b \\\\ n \\n\" B='s \\ $x \"' "
				     "C=\\$lit\\ \\\"x\\\\ D=a\"b c\"'d e'f\n"
				     "LABEL k=\"${UNSET:-dflt}\" 'q'=\"$UNSET\"\n");
	const struct dockerfile_pairs *p = &df->steps[0].pairs;
	assert_string_equal(value_of(p, "A"), "q \" d $ b \\ n \\n"); /* in "...", \ escapes only " $ \ */
	assert_string_equal(value_of(p, "B"), "s \\ $x \"");           /* '...' is literal */
	assert_string_equal(value_of(p, "C"), "$lit \"x\\");
	assert_string_equal(value_of(p, "D"), "ab cd ef");
	assert_string_equal(value_of(&df->steps[1].pairs, "k"), "dflt");
	assert_string_equal(value_of(&df->steps[1].pairs, "q"), "");
	dockerfile_free(df);
	df = good("ENV E=a\\\\"); /* "\\" at the end continues, then the escape left ends the word: it goes */
	assert_string_equal(value_of(&df->steps[0].pairs, "E"), "a");
	dockerfile_free(df);

	/* # escape=` : the backtick continues lines and escapes; the backslash is plain */
	df = good("# escape=`\n"
		  "FROM scratch\n"
		  "RUN dir c:\\ `\n"
		  "    && echo done\n"
		  "ENV P=C:\\path A=`$x B=\"`\"q`\"\"\n"
		  "COPY a\\b c:\\dest\\\n");
	assert_string_equal(df->steps[1].run.shell, "dir c:\\     && echo done");
	assert_string_equal(value_of(&df->steps[2].pairs, "P"), "C:\\path");
	assert_string_equal(value_of(&df->steps[2].pairs, "A"), "$x");
	assert_string_equal(value_of(&df->steps[2].pairs, "B"), "\"q\"");
	assert_string_equal(df->steps[3].copy.src[0], "a\\b");
	assert_string_equal(df->steps[3].copy.dest, "/c:\\dest\\");
	dockerfile_free(df);
	df = good("# Escape = \\ \n# syntax=docker/dockerfile:1\nRUN a \\\n b\n");
	assert_string_equal(df->steps[0].run.shell, "a  b");
	dockerfile_free(df);
	/* a directive after the top is a comment */
	df = good("# a comment first\n# escape=`\nRUN a \\\n b\n");
	assert_string_equal(df->steps[0].run.shell, "a  b");
	dockerfile_free(df);

	refused("# escape=x\nFROM scratch\n", -EINVAL, 1, "the escape character is \\ or `");
	refused("# escape=\\\n# escape=`\nFROM scratch\n", -EINVAL, 2, "given twice");
	refused("ENV A=\"open\n", -EINVAL, 1, "unterminated double quote");
	refused("ENV A='open\n", -EINVAL, 1, "unterminated single quote");
	refused("ENV A=\"x\\\"\n", -EINVAL, 1, "unterminated double quote");
}

static void continuations_and_comments_are_lexed_as_docker_does(void **state)
{
	(void)state;
	static const char text[] = "\xef\xbb\xbf# a comment\r\n"
				   "\r\n"
				   "   # an indented comment\n"
				   "  from scratch \n"
				   "RUN echo a \\\n"
				   "# a comment inside is skipped\n"
				   "\n"
				   "   \t\n"
				   "    && echo b \\  \t\n"
				   "  # indented, skipped too\n"
				   "  && echo c#not-a-comment\n"
				   "Run echo d\\\\\n"
				   "e\n"
				   "\tRuN echo \\\n"
				   "TRAILING JUNK NOT PART OF THE INPUT";
	struct dockerfile *df;
	struct err e;
	/* the length excludes the junk: nothing past it is read, and no NUL is needed */
	size_t len = strlen(text) - strlen("TRAILING JUNK NOT PART OF THE INPUT");
	assert_int_equal(parse_with(text, len, NULL, 0, &df, &e), 0);
	assert_int_equal(df->n_steps, 4);
	assert_int_equal(df->steps[0].line, 4);
	assert_string_equal(df->steps[0].text, "from scratch");
	assert_int_equal(df->steps[1].line, 5);
	assert_string_equal(df->steps[1].run.shell, "echo a     && echo b   && echo c#not-a-comment");
	assert_string_equal(df->steps[1].text, "RUN echo a     && echo b   && echo c#not-a-comment");
	assert_int_equal(df->steps[2].line, 12);
	assert_string_equal(df->steps[2].run.shell, "echo d\\e"); /* "\\" at the end continues too */
	assert_int_equal(df->steps[3].line, 14);
	assert_string_equal(df->steps[3].run.shell, "echo"); /* a continuation at the end of the file */
	dockerfile_free(df);

	/* line numbers count every line, comments and continuations included */
	refused("FROM scratch\nRUN a \\\n# c\n\n  b\nEXPOSE 80\n", -ENOTSUP, 6, "EXPOSE");
	refused("", -EINVAL, 0, "holds no instruction");
	refused("# only a comment\n\n   \n", -EINVAL, 0, "holds no instruction");
	refused_len("FROM scratch\nRUN a\0b\n", 21, NULL, 0, -EINVAL, 2, "NUL");
}

static void substitution_follows_docker(void **state)
{
	(void)state;
	const char *args[] = { "GIVEN=from-cli", "OVER=cli" };
	struct dockerfile *df = good_args("ARG BEFORE=meta\n"
					  "ARG GIVEN\n"
					  "FROM scratch\n"
					  "ENV E1=$BEFORE E2=${GIVEN}\n"
					  "ARG BEFORE\n"
					  "ARG GIVEN OVER=default EMPTY= UNSET\n"
					  "ENV S=$BEFORE T=$GIVEN U=$OVER\n"
					  "ENV A1=${EMPTY:-x} A2=${EMPTY-x} A3=${UNSET-x} A4=${UNSET:-x} "
					  "A5=${OVER:-x}\n"
					  "ENV B1=${EMPTY:+y} B2=${EMPTY+y} B3=${UNSET+y} B4=${OVER:+y} B5=${OVER+y}\n"
					  "ENV C1=${OVER:?need} C2=${EMPTY?need} N=${UNSET:-${EMPTY:-${OVER}}} "
					  "D=$$ E=$1 F=$@x G=$ H=a$.\n"
					  "ENV SELF=1 SEEN=$SELF\n"
					  "ENV OVER=env\n"
					  "ARG OVER=again\n"
					  "RUN echo $OVER\n"
					  "LABEL l=$OVER\n",
					  args, 2);
	const struct dockerfile_step *s = df->steps;
	assert_int_equal(df->from.base, DOCKERFILE_BASE_SCRATCH);
	assert_string_equal(value_of(&s[3].pairs, "E1"), ""); /* ARGs before FROM are FROM's alone */
	assert_string_equal(value_of(&s[3].pairs, "E2"), "");
	assert_string_equal(value_of(&s[6].pairs, "S"), "meta"); /* until declared again */
	assert_string_equal(value_of(&s[6].pairs, "T"), "from-cli");
	assert_string_equal(value_of(&s[6].pairs, "U"), "cli"); /* a build argument beats the default */
	assert_string_equal(value_of(&s[7].pairs, "A1"), "x");
	assert_string_equal(value_of(&s[7].pairs, "A2"), "");
	assert_string_equal(value_of(&s[7].pairs, "A3"), "x");
	assert_string_equal(value_of(&s[7].pairs, "A4"), "x");
	assert_string_equal(value_of(&s[7].pairs, "A5"), "cli");
	assert_string_equal(value_of(&s[8].pairs, "B1"), "");
	assert_string_equal(value_of(&s[8].pairs, "B2"), "y");
	assert_string_equal(value_of(&s[8].pairs, "B3"), "");
	assert_string_equal(value_of(&s[8].pairs, "B4"), "y");
	assert_string_equal(value_of(&s[8].pairs, "B5"), "y");
	assert_string_equal(value_of(&s[9].pairs, "C1"), "cli");
	assert_string_equal(value_of(&s[9].pairs, "C2"), "");
	assert_string_equal(value_of(&s[9].pairs, "N"), "cli");
	assert_string_equal(value_of(&s[9].pairs, "D"), ""); /* Docker's special parameters: never set */
	assert_string_equal(value_of(&s[9].pairs, "E"), "");
	assert_string_equal(value_of(&s[9].pairs, "F"), "x");
	assert_string_equal(value_of(&s[9].pairs, "G"), "$");
	assert_string_equal(value_of(&s[9].pairs, "H"), "a$.");
	assert_string_equal(value_of(&s[10].pairs, "SEEN"), ""); /* a line sees the values from before it */
	assert_string_equal(value_of(&s[12].pairs, "OVER"), "cli");
	assert_string_equal(s[13].run.shell, "echo $OVER"); /* RUN is the shell's */
	assert_string_equal(env_of(&s[13].ctx, "OVER"), "env"); /* ENV overrides ARG */
	assert_string_equal(env_of(&s[13].ctx, "GIVEN"), "from-cli");
	assert_null(env_of(&s[13].ctx, "UNSET"));
	assert_string_equal(env_of(&s[13].ctx, "EMPTY"), "");
	assert_string_equal(value_of(&s[14].pairs, "l"), "env");
	/* the template's environment: what ENV set, not ARGs */
	for (size_t i = 0; i < df->n_env; i++)
		assert_true(strcmp(df->env[i]->key, "GIVEN") && strcmp(df->env[i]->key, "EMPTY"));
	dockerfile_free(df);

	/* the base's environment, when the caller knows it */
	const char *base[] = { "PATH=/usr/bin:/bin", "HOME=/root" };
	struct dockerfile_input in = { .text = "FROM space:py\nENV PATH=/opt/bin:$PATH\nRUN true\n",
				       .base_env = base, .n_base_env = 2 };
	in.len = strlen(in.text);
	struct err e;
	assert_int_equal(dockerfile_parse(&in, &df, &e), 0);
	assert_string_equal(value_of(&df->steps[1].pairs, "PATH"), "/opt/bin:/usr/bin:/bin");
	assert_string_equal(env_of(&df->steps[2].ctx, "HOME"), "/root");
	assert_int_equal(df->n_env, 1); /* the base's own are not the template's additions */
	dockerfile_free(df);

	refused("ENV A=${B\n", -EINVAL, 1, "unterminated ${");
	refused("FROM scratch\n\nENV A=${B:-x\n", -EINVAL, 3, "unterminated ${");
	refused("ENV A=${\n", -EINVAL, 1, "unterminated ${");
	refused("ENV A=\"${B:-\"}\n", -EINVAL, 1, "unterminated");
	refused("ENV A=${}\n", -EINVAL, 1, "bad substitution");
	refused("ENV A=${:-x}\n", -EINVAL, 1, "bad substitution");
	refused("ENV A=\"${B x}\"\n", -EINVAL, 1, "bad substitution");
	refused("ENV A=${B:?}\n", -EINVAL, 1, "B: is not set");
	refused("ENV A=${B?must}\n", -EINVAL, 1, "B: must");
	refused("ENV A=${B:1}\n", -ENOTSUP, 1, "is not supported");
	refused("ENV A=${B#x}\n", -ENOTSUP, 1, "${B#...} is not supported");
	refused("ENV A=${B%x}\n", -ENOTSUP, 1, "is not supported");
	refused("ENV A=${B/x/y}\n", -ENOTSUP, 1, "is not supported");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quoting_and_escapes_follow_docker),
		cmocka_unit_test(continuations_and_comments_are_lexed_as_docker_does),
		cmocka_unit_test(substitution_follows_docker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/lib/host/test_dockerfile_canon.c - the canonical text of a step
 * (lib/host/dockerfile_canon.c), which the builder hashes into its cache keys: what a
 * step does is all in it, and two steps that differ read differently.
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

static void the_canonical_text_holds_what_a_step_does(void **state)
{
	(void)state;
	struct dockerfile *a = good("FROM scratch\n"
				    "# a comment\n"
				    "ENV V=1\n"
				    "RUN   make   all\n"
				    "COPY --chmod=644 src/ /app/\n");
	struct dockerfile *b = good("from scratch\n"
				    "env V=\"1\"\n"
				    "run make   all\n"
				    "copy --chmod=0644 ./src /app/\n");
	struct dockerfile *c = good("FROM scratch\nENV V=2\nRUN make   all\nCOPY --chmod=644 src /app\n");
	char x[1024], y[1024];
	for (size_t i = 0; i < a->n_steps; i++) { /* the same steps written differently: the same text */
		size_t n = dockerfile_canonical(&a->steps[i], x, sizeof(x));
		assert_int_equal(n, strlen(x));
		assert_int_equal(dockerfile_canonical(&b->steps[i], y, sizeof(y)), n);
		assert_string_equal(x, y);
	}
	dockerfile_canonical(&a->steps[2], x, sizeof(x));
	assert_string_equal(x, "kind=3:RUN\nshell=10:make   all\nenv=1:V\nvalue=1:1\nworkdir=1:/\n");
	dockerfile_canonical(&c->steps[2], y, sizeof(y)); /* the environment in force counts for RUN */
	assert_string_not_equal(x, y);
	dockerfile_canonical(&a->steps[3], x, sizeof(x));
	assert_string_equal(x, "kind=4:COPY\nsrc=3:src\ndest=4:/app\ndest_dir=1:1\nchmod=4:0644\n");
	dockerfile_canonical(&c->steps[3], y, sizeof(y));
	assert_string_not_equal(x, y);
	dockerfile_canonical(&a->steps[0], x, sizeof(x));
	assert_string_equal(x, "kind=4:FROM\nbase=7:scratch\nref=7:scratch\n");

	/* sized as snprintf: the whole length, whatever fits, always terminated */
	size_t n = dockerfile_canonical(&a->steps[3], NULL, 0);
	assert_int_equal(n, strlen("kind=4:COPY\nsrc=3:src\ndest=4:/app\ndest_dir=1:1\nchmod=4:0644\n"));
	memset(y, '#', sizeof(y));
	assert_int_equal(dockerfile_canonical(&a->steps[3], y, 8), n);
	assert_string_equal(y, "kind=4:");
	assert_int_equal(y[8], '#');
	assert_int_equal(dockerfile_canonical(&a->steps[3], y, 1), n);
	assert_string_equal(y, "");
	dockerfile_free(a);
	dockerfile_free(b);
	dockerfile_free(c);

	/* every kind has its fields, and the length prefixes keep apart what plain joins would not */
	static const char common[] = "FROM r.io/a:1\nARG X Y=a\nUSER u:g\nWORKDIR /w\nLABEL k=v\n"
				     "ADD [\"a\", \"b c/\"]\n";
	a = good(fmt("%sRUN [\"a\\nb\"]\n", common));
	b = good(fmt("%sRUN [\"a\", \"b\"]\n", common));
	dockerfile_canonical(&a->steps[0], x, sizeof(x));
	assert_string_equal(x, "kind=4:FROM\nbase=5:image\nref=8:r.io/a:1\nregistry=4:r.io\nname=1:a\ntag=1:1\n");
	dockerfile_canonical(&a->steps[1], x, sizeof(x));
	assert_string_equal(x, "kind=3:ARG\nkey=1:X\nunset=0:\nkey=1:Y\nvalue=1:a\n");
	dockerfile_canonical(&a->steps[2], x, sizeof(x));
	assert_string_equal(x, "kind=4:USER\nuser=1:u\ngroup=1:g\n");
	dockerfile_canonical(&a->steps[3], x, sizeof(x));
	assert_string_equal(x, "kind=7:WORKDIR\npath=2:/w\n");
	dockerfile_canonical(&a->steps[4], x, sizeof(x));
	assert_string_equal(x, "kind=5:LABEL\nkey=1:k\nvalue=1:v\n");
	dockerfile_canonical(&a->steps[5], x, sizeof(x));
	assert_string_equal(x, "kind=3:ADD\nsrc=1:a\ndest=6:/w/b c\ndest_dir=1:1\n");
	dockerfile_canonical(&a->steps[6], x, sizeof(x));
	dockerfile_canonical(&b->steps[6], y, sizeof(y));
	assert_string_not_equal(x, y);
	assert_non_null(strstr(x, "arg=3:a\nb\n")); /* one argument holding a newline ... */
	assert_non_null(strstr(y, "arg=1:a\narg=1:b\n")); /* ... is not two */
	assert_string_equal(dockerfile_kind_name(DOCKERFILE_WORKDIR), "WORKDIR");
	dockerfile_free(a);
	dockerfile_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_canonical_text_holds_what_a_step_does),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

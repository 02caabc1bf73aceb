/*
 * tests/unit/daemon/store/test_template.c - the templates spaced makes
 * (daemon/store/template.c): what `spaced --template NAME=PKG,...` accepts and
 * refuses before anything runs, and the cache key, which one package set
 * shares whatever the order it was given in and no other set shares.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/store/template.h"

static void test_parse_sorts_and_drops_repeats(void **state)
{
	struct template_spec t;
	struct err e = { 0 };
	assert_int_equal(template_parse("compat=nodejs,golang,file,golang", &t, &e), 0);
	assert_string_equal(t.name, "compat");
	assert_string_equal(t.extra, "file,golang,nodejs");
	assert_int_equal(template_parse("A-1.b_2=g++,libstdc++6,python3.11", &t, &e), 0);
	assert_string_equal(t.name, "A-1.b_2");
	assert_string_equal(t.extra, "g++,libstdc++6,python3.11");
}

/* Each of these is refused with -EINVAL and a message, and nothing of it is kept. */
static void test_parse_refuses(void **state)
{
	char long_name[TEMPLATE_NAME_MAX + 8], long_list[TEMPLATE_EXTRA_MAX + 16];
	memset(long_name, 'n', TEMPLATE_NAME_MAX + 1);
	strcpy(long_name + TEMPLATE_NAME_MAX + 1, "=file");
	strcpy(long_list, "x=");
	for (size_t i = 2; i < sizeof(long_list) - 1; i++)
		long_list[i] = i % 3 == 1 ? ',' : 'a';
	long_list[sizeof(long_list) - 1] = '\0';
	const char *bad[] = {
		"compat",          /* no '=' */
		"=file",           /* no name */
		"default=file",    /* the default template is spaced's own */
		"-x=file",         /* a name starts with a letter or digit */
		"a/b=file",        /* names are one word */
		"a b=file",
		"../x=file",
		"x=",              /* no package */
		"x=file,",         /* an empty one */
		"x=file,,bash",
		"x=File",          /* package names are lower case */
		"x=f",             /* two characters at least */
		"x=-f",            /* not an option of mmdebstrap */
		"x=file;reboot",   /* nothing for a shell */
		"x=file bash",
		"x=$(id)",
		"x=file=1.0",
		"x=file:amd64",
		long_name,
		long_list,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct template_spec t;
		struct err e = { 0 };
		assert_int_equal(template_parse(bad[i], &t, &e), -EINVAL);
		assert_int_equal(e.kind, ERR_INVALID);
		assert_true(strlen(e.msg) > 0);
		assert_string_equal(t.extra, "");
	}
}

static void test_images_and_loopback_registries(void **state)
{
	(void)state;
	struct template_spec t;
	struct err e = { 0 };
	assert_int_equal(template_parse("app=oci-archive:/srv/app.tar", &t, &e), 0);
	assert_string_equal(t.source, "oci-archive:/srv/app.tar");
	assert_string_equal(t.extra, "");
	/* a ':' is no package's: a source that is no image is refused, not built */
	assert_int_equal(template_parse("app=http://x/y", &t, &e), -EINVAL);
	assert_int_equal(template_parse("app=oci-archive:", &t, &e), -EINVAL);

	const char *loopback[] = { "docker://127.0.0.1:5000/a/b:v1", "docker://127.9.8.7/a", "docker://localhost:5000/a",
				   "docker://localhost/a", "docker://[::1]:5000/a" };
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++)
		assert_true(template_loopback_registry(loopback[i]));
	const char *other[] = { "docker://127.evil.example/a", "docker://127.0.0.1.example:5000/a",
				"docker://10.0.0.1:5000/a", "docker://localhost.example/a", "docker://127.0.0.1",
				"docker://[::2]:5000/a", "oci-archive:/127.0.0.1:5000/a", "docker://:5000/a" };
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_false(template_loopback_registry(other[i]));
}

static void test_key_follows_the_package_set(void **state)
{
	struct template_spec a, b, c;
	struct err e = { 0 };
	char ka[65], kb[65], kc[65], kd[65], kd2[65];
	assert_int_equal(template_parse("one=file,golang", &a, &e), 0);
	assert_int_equal(template_parse("two=golang,file,file", &b, &e), 0);
	assert_int_equal(template_parse("three=file", &c, &e), 0);
	assert_int_equal(template_key(a.extra, ka), 0);
	assert_int_equal(template_key(b.extra, kb), 0);
	assert_int_equal(template_key(c.extra, kc), 0);
	assert_int_equal(template_key("", kd), 0);
	assert_int_equal(template_key("", kd2), 0);
	assert_int_equal(strlen(ka), 64);
	assert_string_equal(ka, kb);     /* one set, one cache entry, whatever its name */
	assert_string_not_equal(ka, kc);
	assert_string_not_equal(kc, kd); /* the default is a set of its own */
	assert_string_equal(kd, kd2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_sorts_and_drops_repeats),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_images_and_loopback_registries),
		cmocka_unit_test(test_key_follows_the_package_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

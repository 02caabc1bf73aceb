/*
 * tests/unit/daemon/driver/test_agent_file.c - the agent files kept by content
 * (daemon/driver/agent_file.c): a file is kept once under its content's SHA-256, read-only;
 * a link to it replaces what was there; the sweep removes what no link points to and what a
 * copy cut short left, and keeps the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon/driver/agent_file.h"

struct where {
	char top[64];
	char agents[96];
	char src[96];
};

static void put(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct where *w = calloc(1, sizeof(*w));
	snprintf(w->top, sizeof(w->top), "/tmp/test_agent_file.XXXXXX");
	if (!mkdtemp(w->top))
		return -1;
	snprintf(w->agents, sizeof(w->agents), "%s/agents", w->top);
	snprintf(w->src, sizeof(w->src), "%s/space-agent", w->top);
	put(w->src, "agent one\n");
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct where *w = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", w->top);
	int rc = system(cmd);
	free(w);
	return rc;
}

static void the_kept_file_is_named_by_its_content_read_only_and_made_once(void **state)
{
	struct where *w = *state;
	struct err e = { 0 };
	char kept[700], again[700];
	assert_int_equal(agent_file_keep(w->agents, w->src, kept, sizeof(kept), &e), 0);
	const char *name = strrchr(kept, '/') + 1;
	assert_int_equal(strlen(name), 64);
	char cmd[256], sum[80] = "";
	snprintf(cmd, sizeof(cmd), "sha256sum < %s", w->src);
	FILE *p = popen(cmd, "r");
	assert_non_null(fgets(sum, sizeof(sum), p));
	pclose(p);
	assert_memory_equal(name, sum, 64);
	struct stat a, b;
	assert_int_equal(stat(kept, &a), 0);
	assert_int_equal(a.st_mode & 07777, 0555);
	assert_int_equal(agent_file_keep(w->agents, w->src, again, sizeof(again), &e), 0);
	assert_string_equal(kept, again);
	assert_int_equal(stat(again, &b), 0);
	assert_true(a.st_ino == b.st_ino); /* the same file: images link it */
	put(w->src, "agent two\n");
	assert_int_equal(agent_file_keep(w->agents, w->src, again, sizeof(again), &e), 0);
	assert_string_not_equal(kept, again);
}

static void a_missing_source_is_an_error_that_keeps_nothing(void **state)
{
	struct where *w = *state;
	struct err e = { 0 };
	char kept[700], gone[128];
	snprintf(gone, sizeof(gone), "%s/none", w->top);
	assert_int_equal(agent_file_keep(w->agents, gone, kept, sizeof(kept), &e), -ENOENT);
	assert_non_null(strstr(e.msg, gone));
	assert_int_equal(agent_file_sweep(w->agents, NULL, 0), 0);
}

static void a_link_replaces_what_was_there_by_the_kept_file(void **state)
{
	struct where *w = *state;
	struct err e = { 0 };
	char kept[700], link[128];
	assert_int_equal(agent_file_keep(w->agents, w->src, kept, sizeof(kept), &e), 0);
	snprintf(link, sizeof(link), "%s/agent", w->top);
	put(link, "another agent\n");
	assert_int_equal(agent_file_link(kept, link, &e), 0);
	struct stat a, b;
	assert_int_equal(stat(kept, &a), 0);
	assert_int_equal(stat(link, &b), 0);
	assert_true(a.st_ino == b.st_ino);
	assert_int_equal(b.st_nlink, 2);
	assert_int_equal(agent_file_link(kept, link, &e), 0); /* already: nothing */
	assert_int_equal(stat(link, &b), 0);
	assert_int_equal(b.st_nlink, 2);
}

static void the_sweep_removes_what_no_link_points_to_and_keeps_the_rest(void **state)
{
	struct where *w = *state;
	struct err e = { 0 };
	char used[700], current[700], unused[700], link[128], half[160], other[160];
	assert_int_equal(agent_file_keep(w->agents, w->src, used, sizeof(used), &e), 0);
	snprintf(link, sizeof(link), "%s/agent", w->top);
	assert_int_equal(agent_file_link(used, link, &e), 0);
	put(w->src, "agent two\n");
	assert_int_equal(agent_file_keep(w->agents, w->src, current, sizeof(current), &e), 0);
	put(w->src, "agent three\n");
	assert_int_equal(agent_file_keep(w->agents, w->src, unused, sizeof(unused), &e), 0);
	snprintf(half, sizeof(half), "%s/.new-42", w->agents);
	put(half, "cut short");
	snprintf(other, sizeof(other), "%s/README", w->agents); /* not a kept file's name */
	put(other, "not ours");

	const char *keep[] = { current, NULL };
	assert_int_equal(agent_file_sweep(w->agents, keep, 2), 2);
	assert_int_equal(access(used, F_OK), 0);    /* linked */
	assert_int_equal(access(current, F_OK), 0); /* this spaced's */
	assert_int_equal(access(unused, F_OK), -1);
	assert_int_equal(access(half, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0);

	unlink(link); /* its last user went: the next sweep removes it */
	assert_int_equal(agent_file_sweep(w->agents, keep, 2), 1);
	assert_int_equal(access(used, F_OK), -1);
	assert_int_equal(access(current, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_kept_file_is_named_by_its_content_read_only_and_made_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_missing_source_is_an_error_that_keeps_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(a_link_replaces_what_was_there_by_the_kept_file, setup, teardown),
		cmocka_unit_test_setup_teardown(the_sweep_removes_what_no_link_points_to_and_keeps_the_rest, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

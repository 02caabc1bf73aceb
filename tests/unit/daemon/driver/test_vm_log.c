/*
 * tests/unit/daemon/driver/test_vm_log.c - a microVM's log keeper (daemon/driver/vm_log.c),
 * run in a child with two pipes as its descriptors 3 and 4 as spaced starts it: what it keeps
 * of a flood stays within VM_LOG_MAX, holds the newest bytes and counts the rest; a little
 * output is kept whole; an earlier file past its bound is dropped, and counted.
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon/driver/vm_log.h"

struct keeper {
	char dir[64];
	int in[VM_LOG_STREAMS]; /* what QEMU would write into */
	pid_t pid;
};

static void keeper_start(struct keeper *k)
{
	int p[VM_LOG_STREAMS][2];
	for (int i = 0; i < VM_LOG_STREAMS; i++)
		assert_int_equal(pipe2(p[i], O_CLOEXEC), 0);
	k->pid = fork();
	assert_true(k->pid >= 0);
	if (k->pid == 0) { /* spaced's ends and nothing else: QEMU's ends closed here */
		for (int i = 0; i < VM_LOG_STREAMS; i++)
			close(p[i][1]);
		if (dup2(p[0][0], 3) < 0 || dup2(p[1][0], 4) < 0)
			_exit(3);
		_exit(vm_log_keep(k->dir));
	}
	for (int i = 0; i < VM_LOG_STREAMS; i++) {
		close(p[i][0]);
		k->in[i] = p[i][1];
	}
}

/* Closes QEMU's ends and waits for the keeper to end by itself. */
static void keeper_end(struct keeper *k)
{
	for (int i = 0; i < VM_LOG_STREAMS; i++)
		close(k->in[i]);
	int st;
	assert_int_equal(waitpid(k->pid, &st, 0), k->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void put(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		assert_true(w > 0);
		s += w;
		n -= (size_t)w;
	}
}

static char *slurp(const char *dir, const char *name, size_t *n)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	*n = 0;
	if (!f)
		return NULL;
	char *buf = malloc(4 * VM_LOG_MAX);
	assert_non_null(buf);
	*n = fread(buf, 1, 4 * VM_LOG_MAX, f);
	fclose(f);
	buf[*n < 4 * VM_LOG_MAX ? *n : 4 * VM_LOG_MAX - 1] = '\0';
	return buf;
}

static int setup(void **state)
{
	struct keeper *k = calloc(1, sizeof(*k));
	snprintf(k->dir, sizeof(k->dir), "/tmp/space-vmlog-XXXXXX");
	assert_non_null(mkdtemp(k->dir));
	*state = k;
	return 0;
}

static int teardown(void **state)
{
	struct keeper *k = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", k->dir);
	if (system(cmd) != 0)
		return -1;
	free(k);
	return 0;
}

static void a_flood_keeps_the_newest_within_the_bound(void **state)
{
	struct keeper *k = *state;
	keeper_start(k);
	/* 8 MiB of numbered lines to the console, then a last one */
	char line[64];
	size_t sent = 0;
	for (int i = 0; sent < 8u * VM_LOG_MAX; i++) {
		int n = snprintf(line, sizeof(line), "line %09d of the flood\n", i);
		put(k->in[VM_LOG_CONSOLE], line, (size_t)n);
		sent += (size_t)n;
	}
	put(k->in[VM_LOG_CONSOLE], "THE END\n", 8);
	put(k->in[VM_LOG_QEMU], "qemu says hello\n", 16);
	keeper_end(k);

	size_t n0, n1, nq;
	char *now = slurp(k->dir, "console.log", &n0), *older = slurp(k->dir, "console.log.1", &n1);
	char *q = slurp(k->dir, "qemu.log", &nq);
	assert_non_null(now);
	assert_non_null(older);
	assert_true(n0 + n1 <= VM_LOG_MAX);
	assert_true(n0 + n1 >= VM_LOG_MAX / 2);
	/* the newest line is the last of the newest file, which starts by counting what went */
	assert_true(n0 >= 8 && memcmp(now + n0 - 8, "THE END\n", 8) == 0);
	unsigned long long dropped = 0;
	assert_int_equal(sscanf(now, "[space: %llu earlier bytes of this log were dropped]", &dropped), 1);
	size_t marker = (size_t)(strchr(now, '\n') - now) + 1;
	/* every byte is either kept (after the markers) or counted as dropped */
	size_t kept = n0 - marker + n1;
	const char *nl = strchr(older, '\n');
	if (strncmp(older, "[space: ", 8) == 0)
		kept -= (size_t)(nl - older) + 1;
	assert_int_equal(dropped + kept, sent + 8);
	/* the other stream is a file of its own, untouched by the flood */
	assert_non_null(q);
	assert_string_equal(q, "qemu says hello\n");
	free(now);
	free(older);
	free(q);
}

static void an_old_file_past_the_bound_is_dropped_and_counted(void **state)
{
	struct keeper *k = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/qemu.log", k->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 3 * VM_LOG_MAX), 0); /* left by a spaced without a keeper */
	close(fd);
	keeper_start(k);
	put(k->in[VM_LOG_QEMU], "fresh\n", 6);
	keeper_end(k);
	size_t n0, n1;
	char *now = slurp(k->dir, "qemu.log", &n0), *older = slurp(k->dir, "qemu.log.1", &n1);
	assert_non_null(now);
	assert_null(older); /* dropped whole, and counted */
	char want[128];
	snprintf(want, sizeof(want), "[space: %d earlier bytes of this log were dropped]\nfresh\n", 3 * VM_LOG_MAX);
	assert_string_equal(now, want);
	free(now);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_flood_keeps_the_newest_within_the_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(an_old_file_past_the_bound_is_dropped_and_counted, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

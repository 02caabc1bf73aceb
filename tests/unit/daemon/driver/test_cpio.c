/*
 * tests/unit/daemon/driver/test_cpio.c - the newc writer (daemon/driver/cpio.c,
 * on libarchive): the exact bytes of a small archive, a read-back of files of every padding
 * remainder (from memory and from host files), names the kernel would
 * misplace refused, sticky errors, and the same entries giving the same bytes.
 * Archives are written into memfds and parsed back by a reader written from
 * the format's description, not from the writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon/driver/cpio.h"

struct entry {
	char name[256];
	unsigned long ino, mode, nlink, size, rmajor, rminor;
	const unsigned char *data;
};

/* The whole of memfd fd into a malloc'd buffer of *n bytes. */
static unsigned char *slurp(int fd, size_t *n)
{
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end >= 0);
	unsigned char *b = malloc((size_t)end + 1);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)end, 0), end);
	*n = (size_t)end;
	return b;
}

static unsigned long hexfield(const unsigned char *h, int i)
{
	char f[9];
	memcpy(f, h + 6 + 8 * i, 8);
	f[8] = '\0';
	return strtoul(f, NULL, 16);
}

/* Parses the archive into out[] (at most max entries, trailer excluded); returns the count. */
static int parse(const unsigned char *b, size_t n, struct entry *out, int max)
{
	size_t off = 0;
	int k = 0;
	for (;;) {
		assert_true(off + 110 <= n);
		assert_memory_equal(b + off, "070701", 6);
		const unsigned char *h = b + off;
		unsigned long namesize = hexfield(h, 11), size = hexfield(h, 6);
		assert_int_equal(hexfield(h, 12), 0); /* check */
		assert_int_equal(hexfield(h, 2), 0);  /* uid */
		assert_int_equal(hexfield(h, 3), 0);  /* gid */
		assert_int_equal(hexfield(h, 5), 0);  /* mtime */
		const char *name = (const char *)h + 110;
		assert_true(off + 110 + namesize <= n);
		assert_int_equal(name[namesize - 1], '\0');
		assert_int_equal(strlen(name) + 1, namesize);
		size_t data = (off + 110 + namesize + 3) & ~(size_t)3;
		for (size_t i = off + 110 + namesize; i < data; i++)
			assert_int_equal(b[i], 0);
		if (strcmp(name, "TRAILER!!!") == 0) {
			assert_int_equal(size, 0);
			assert_int_equal(n % 512, 0);
			for (size_t i = data; i < n; i++)
				assert_int_equal(b[i], 0);
			return k;
		}
		assert_true(k < max);
		assert_true(data + size <= n);
		struct entry *e = &out[k++];
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->ino = hexfield(h, 0);
		e->mode = hexfield(h, 1);
		e->nlink = hexfield(h, 4);
		e->size = size;
		e->rmajor = hexfield(h, 9);
		e->rminor = hexfield(h, 10);
		e->data = b + data;
		off = (data + size + 3) & ~(size_t)3;
		for (size_t i = data + size; i < off; i++)
			assert_int_equal(b[i], 0);
	}
}

static int new_memfd(void)
{
	int fd = memfd_create("cpio", MFD_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void exact_bytes(void **state)
{
	int fd = new_memfd();
	struct cpio w;
	cpio_init(&w, fd);
	assert_int_equal(cpio_file(&w, "init", 0755, "hi\n", 3), 0);
	assert_int_equal(cpio_finish(&w), 0);
	size_t n;
	unsigned char *b = slurp(fd, &n);
	const char *want = "070701"
			   "00000001" "000081ed" "00000000" "00000000" "00000001" "00000000"
			   "00000003" "00000000" "00000000" "00000000" "00000000" "00000005" "00000000"
			   "init\0" /* 110 + 5 = 115: one byte of padding */ "\0"
			   "hi\n\0"
			   "070701"
			   "00000000" "00000000" "00000000" "00000000" "00000001" "00000000"
			   "00000000" "00000000" "00000000" "00000000" "00000000" "0000000b" "00000000"
			   "TRAILER!!!\0" "\0";
	size_t wlen = 110 + 6 + 4 + 110 + 12;
	assert_int_equal(n, 512);
	assert_memory_equal(b, want, wlen);
	for (size_t i = wlen; i < n; i++)
		assert_int_equal(b[i], 0);
	free(b);
	close(fd);
}

static void read_back(void **state)
{
	char dir[] = "/tmp/space-test-cpio-XXXXXX";
	assert_non_null(mkdtemp(dir));
	static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 70001 };
	enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
	unsigned char *blob = malloc(70001);
	assert_non_null(blob);
	for (size_t i = 0; i < 70001; i++)
		blob[i] = (unsigned char)(i * 7 + 1);

	int fd = new_memfd();
	struct cpio w;
	cpio_init(&w, fd);
	assert_int_equal(cpio_dir(&w, "lib", 0755), 0);
	assert_int_equal(cpio_dir(&w, "lib/mod", 0700), 0);
	assert_int_equal(cpio_chardev(&w, "lib/console", 0600, 5, 1), 0);
	char name[64], path[128];
	for (size_t i = 0; i < NS; i++) {
		snprintf(name, sizeof(name), "lib/mod/m%zu", i);
		assert_int_equal(cpio_file(&w, name, 0644, blob, sizes[i]), 0);
		snprintf(path, sizeof(path), "%s/f%zu", dir, i);
		FILE *f = fopen(path, "we");
		assert_non_null(f);
		assert_int_equal(fwrite(blob, 1, sizes[i], f), sizes[i]);
		fclose(f);
		snprintf(name, sizeof(name), "f%zu", i);
		assert_int_equal(cpio_file_from(&w, name, 04711, path), 0);
	}
	assert_int_equal(cpio_finish(&w), 0);

	size_t n;
	unsigned char *b = slurp(fd, &n);
	struct entry e[3 + 2 * NS];
	assert_int_equal(parse(b, n, e, 3 + 2 * NS), 3 + 2 * NS);
	assert_string_equal(e[0].name, "lib");
	assert_int_equal(e[0].mode, S_IFDIR | 0755);
	assert_int_equal(e[0].nlink, 2);
	assert_string_equal(e[1].name, "lib/mod");
	assert_int_equal(e[1].mode, S_IFDIR | 0700);
	assert_string_equal(e[2].name, "lib/console");
	assert_int_equal(e[2].mode, S_IFCHR | 0600);
	assert_int_equal(e[2].size, 0);
	assert_int_equal(e[2].rmajor, 5);
	assert_int_equal(e[2].rminor, 1);
	for (size_t i = 0; i < NS; i++) {
		struct entry *m = &e[3 + 2 * i], *f = &e[4 + 2 * i];
		snprintf(name, sizeof(name), "lib/mod/m%zu", i);
		assert_string_equal(m->name, name);
		assert_int_equal(m->mode, S_IFREG | 0644);
		assert_int_equal(m->size, sizes[i]);
		assert_memory_equal(m->data, blob, sizes[i]);
		snprintf(name, sizeof(name), "f%zu", i);
		assert_string_equal(f->name, name);
		assert_int_equal(f->mode, S_IFREG | 04711);
		assert_int_equal(f->size, sizes[i]);
		assert_memory_equal(f->data, blob, sizes[i]);
		assert_int_equal(f->nlink, 1);
		snprintf(path, sizeof(path), "%s/f%zu", dir, i);
		unlink(path);
	}
	for (size_t i = 0; i < 3 + 2 * NS; i++)
		assert_int_equal(e[i].ino, i + 1); /* distinct: the kernel links equal inos */
	rmdir(dir);
	free(b);
	free(blob);
	close(fd);
}

static void bad_names(void **state)
{
	static const char *bad[] = { "", "/init", "a/../b", "..", "a/./b", ".", "a//b", "a/", "TRAILER!!!" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = new_memfd();
		struct cpio w;
		cpio_init(&w, fd);
		assert_int_equal(cpio_file(&w, bad[i], 0644, "x", 1), -EINVAL);
		/* sticky: nothing more is written, and the archive reports it */
		assert_int_equal(cpio_dir(&w, "ok", 0755), -EINVAL);
		assert_int_equal(cpio_finish(&w), -EINVAL);
		assert_int_equal(lseek(fd, 0, SEEK_END), 0);
		close(fd);
	}
	char longname[CPIO_NAME_MAX + 2];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	int fd = new_memfd();
	struct cpio w;
	assert_int_equal(cpio_init(&w, fd), 0);
	assert_int_equal(cpio_dir(&w, longname, 0755), -EINVAL);
	assert_int_equal(cpio_finish(&w), -EINVAL);
	longname[CPIO_NAME_MAX] = '\0';
	assert_int_equal(cpio_init(&w, fd), 0);
	assert_int_equal(cpio_dir(&w, longname, 0755), 0);
	assert_int_equal(cpio_finish(&w), 0);
	close(fd);
}

static void errors_stick(void **state)
{
	struct cpio w;
	int fd = new_memfd();
	cpio_init(&w, fd);
	assert_int_equal(cpio_file_from(&w, "gone", 0644, "/nonexistent/space-test"), -ENOENT);
	assert_int_equal(cpio_file(&w, "ok", 0644, "x", 1), -ENOENT);
	assert_int_equal(cpio_finish(&w), -ENOENT);
	assert_int_equal(lseek(fd, 0, SEEK_END), 0); /* nothing written after the error */
	close(fd);

	fd = new_memfd();
	cpio_init(&w, fd);
	assert_int_equal(cpio_file_from(&w, "dir", 0644, "/tmp"), -EINVAL); /* not a regular file */
	assert_int_equal(cpio_finish(&w), -EINVAL);
	close(fd);

	/* the read end of a pipe: every write fails, at the latest when the data outgrows what the
	 * writer gathers before writing (far less than 1 MiB) */
	enum { BIG = 1 << 20 };
	unsigned char *big = calloc(1, BIG);
	assert_non_null(big);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(cpio_init(&w, p[0]), 0);
	int rc = cpio_dir(&w, "d", 0755);
	assert_true(rc == 0 || rc == -EBADF);
	assert_int_equal(cpio_file(&w, "big", 0644, big, BIG), -EBADF);
	assert_int_equal(cpio_dir(&w, "e", 0755), -EBADF);
	assert_int_equal(cpio_finish(&w), -EBADF);
	close(p[0]);
	close(p[1]);

	/* a write that fails only at the end: the archive is short of a block */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(cpio_init(&w, p[0]), 0);
	rc = cpio_dir(&w, "d", 0755);
	assert_true(rc == 0 || rc == -EBADF);
	assert_int_equal(cpio_finish(&w), -EBADF);
	close(p[0]);
	close(p[1]);
	free(big);
}

static void same_entries_same_bytes(void **state)
{
	unsigned char *b[2];
	size_t n[2];
	for (int k = 0; k < 2; k++) {
		int fd = new_memfd();
		struct cpio w;
		cpio_init(&w, fd);
		cpio_dir(&w, "dev", 0755);
		cpio_file(&w, "init", 0755, "agent", 5);
		assert_int_equal(cpio_finish(&w), 0);
		b[k] = slurp(fd, &n[k]);
		close(fd);
	}
	assert_int_equal(n[0], n[1]);
	assert_memory_equal(b[0], b[1], n[0]);
	free(b[0]);
	free(b[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exact_bytes),
		cmocka_unit_test(read_back),
		cmocka_unit_test(bad_names),
		cmocka_unit_test(errors_stick),
		cmocka_unit_test(same_entries_same_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

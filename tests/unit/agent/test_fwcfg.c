/*
 * tests/unit/agent/test_fwcfg.c - finding and reading a file of QEMU's fw_cfg device
 * (agent/fwcfg.c) over a device standing in memory: the file among others, a name that is
 * only a prefix of another, a missing file, a file larger than the buffer, an empty file,
 * a directory whose count is beyond reason, a name without its NUL, and a device that fails.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/fwcfg.h"

struct item {
	uint16_t select;
	const char *name;
	const char *data;
	size_t len;
};

struct device {
	const struct item *items;
	size_t n;
	uint32_t count_override; /* nonzero: the directory claims this many files */
	int fail;                /* nonzero: every read fails with it */
	unsigned reads;
	unsigned char dir[4 + 8 * sizeof(struct fwcfg_file)];
};

static void build_dir(struct device *d)
{
	uint32_t count = htobe32(d->count_override ? d->count_override : (uint32_t)d->n);
	memcpy(d->dir, &count, 4);
	for (size_t i = 0; i < d->n; i++) {
		struct fwcfg_file f = { .size = htobe32((uint32_t)d->items[i].len), .select = htobe16(d->items[i].select) };
		memset(f.name, 'x', sizeof(f.name)); /* a name without its NUL stays unterminated */
		if (strlen(d->items[i].name) < sizeof(f.name))
			memcpy(f.name, d->items[i].name, strlen(d->items[i].name) + 1);
		memcpy(d->dir + 4 + i * sizeof(f), &f, sizeof(f));
	}
}

/* An item read from its start, as the device gives it after a selection. */
static int dev_read(uint16_t sel, void *buf, size_t n, void *ctx)
{
	struct device *d = ctx;
	d->reads++;
	if (d->fail)
		return -d->fail;
	if (sel == FWCFG_FILE_DIR) {
		size_t have = 4 + d->n * sizeof(struct fwcfg_file);
		memset(buf, 0, n);
		memcpy(buf, d->dir, n < have ? n : have);
		return 0;
	}
	for (size_t i = 0; i < d->n; i++)
		if (d->items[i].select == sel) {
			assert_true(n <= d->items[i].len);
			memcpy(buf, d->items[i].data, n);
			return 0;
		}
	fail_msg("read of an item that does not exist: %#x", sel);
	return -EIO;
}

static const struct item items[] = {
	{ 0x20, "etc/boot-fail-wait", "\0\0\0\0", 4 },
	{ 0x21, "opt/space/env-old", "OLD=1", 6 },
	{ 0x22, "opt/space/env", "A=1\0B=two\0", 10 },
	{ 0x23, "opt/space/empty", "", 0 },
};

static void test_finds_the_file_among_others(void **state)
{
	(void)state;
	struct device d = { .items = items, .n = 4 };
	build_dir(&d);
	char buf[64];
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/env", buf, sizeof(buf)), 10);
	assert_memory_equal(buf, "A=1\0B=two\0", 10);
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/env-old", buf, sizeof(buf)), 6);
	assert_string_equal(buf, "OLD=1");
}

static void test_prefix_and_missing_names(void **state)
{
	(void)state;
	struct device d = { .items = items, .n = 4 };
	build_dir(&d);
	char buf[64];
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/en", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/environment", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(fwcfg_find_read(dev_read, &d, "", buf, sizeof(buf)), -ENOENT);
}

static void test_too_large_and_empty(void **state)
{
	(void)state;
	struct device d = { .items = items, .n = 4 };
	build_dir(&d);
	char buf[16];
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/env", buf, 9), -EFBIG);
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/env", buf, 10), 10);
	d.reads = 0;
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/empty", buf, sizeof(buf)), 0);
	assert_int_equal(d.reads, 2); /* the count and the directory; nothing of an empty file */
}

static void test_damaged_directories(void **state)
{
	(void)state;
	struct device d = { .items = items, .n = 4, .count_override = 100000 };
	build_dir(&d);
	char buf[64];
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/env", buf, sizeof(buf)), -EPROTO);
	static const struct item unterminated[] = {
		{ 0x30, "opt/space/env-with-a-name-longer-than-the-fifty-six-bytes-it-has", "X=1", 4 },
	};
	struct device u = { .items = unterminated, .n = 1 };
	build_dir(&u);
	assert_int_equal(fwcfg_find_read(dev_read, &u, "opt/space/env-with-a-name-longer-than-the-fifty-six-bytes-it-has",
					 buf, sizeof(buf)), -ENOENT);
}

static void test_device_errors_pass_through(void **state)
{
	(void)state;
	struct device d = { .items = items, .n = 4, .fail = EIO };
	build_dir(&d);
	char buf[64];
	assert_int_equal(fwcfg_find_read(dev_read, &d, "opt/space/env", buf, sizeof(buf)), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finds_the_file_among_others),
		cmocka_unit_test(test_prefix_and_missing_names),
		cmocka_unit_test(test_too_large_and_empty),
		cmocka_unit_test(test_damaged_directories),
		cmocka_unit_test(test_device_errors_pass_through),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

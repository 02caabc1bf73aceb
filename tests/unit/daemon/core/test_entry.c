/*
 * tests/unit/daemon/core/test_entry.c - file entries from the agent's A_STAT frames
 * (daemon/core/entry.c): an older agent's short frame, the extension with owner, group, link
 * target, path and nanoseconds, every way the extension can be cut or broken, and the JSON
 * the files API answers with.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "daemon/core/entry.h"
#include "proto/agent.h"

static uint8_t payload[SP_MAX_PAYLOAD];

/* Builds an A_STAT payload: the fixed part, the name, then `tail` (tail_len bytes, NULs in it). */
static struct frame stat_frame(uint32_t type, uint32_t uid, const char *name, const void *tail, size_t tail_len)
{
	memset(payload, 0, sizeof(payload));
	frame_put_u64(payload + offsetof(struct sp_stat, size), 5);
	frame_put_u64(payload + offsetof(struct sp_stat, mtime), 1796601600); /* 2026-12-07T00:00:00Z */
	frame_put_u32(payload + offsetof(struct sp_stat, mode), 0644);
	frame_put_u32(payload + offsetof(struct sp_stat, type), type);
	frame_put_u32(payload + offsetof(struct sp_stat, uid), uid);
	frame_put_u32(payload + offsetof(struct sp_stat, gid), uid);
	size_t off = sizeof(struct sp_stat);
	memcpy(payload + off, name, strlen(name) + 1);
	off += strlen(name) + 1;
	memcpy(payload + off, tail, tail_len);
	return (struct frame){ .type = SP_A_STAT, .chan = SP_CHAN_REQ | 1, .len = (uint32_t)(off + tail_len),
			       .payload = payload };
}

/* An extension: nanoseconds, then the four strings given as one block with their NULs. */
static size_t ext(uint8_t *out, uint32_t nsec, const char *strs, size_t strs_len)
{
	frame_put_u32(out + offsetof(struct sp_stat_ext, mtime_nsec), nsec);
	frame_put_u32(out + offsetof(struct sp_stat_ext, rsvd), 0);
	memcpy(out + sizeof(struct sp_stat_ext), strs, strs_len);
	return sizeof(struct sp_stat_ext) + strs_len;
}

#define STRS(s) s, sizeof(s) - 1

static const char *str(json_t *j, const char *k)
{
	return json_string_value(json_object_get(j, k));
}

static void test_older_agent(void **state)
{
	struct frame f = stat_frame(SP_TYPE_FILE, 1000, "a.txt", NULL, 0);
	struct entry e;
	assert_int_equal(entry_parse(&f, &e), 0);
	assert_false(e.ext);
	json_t *j = entry_json(&e, "/work/a.txt");
	assert_string_equal(str(j, "name"), "a.txt");
	assert_string_equal(str(j, "path"), "/work/a.txt");
	assert_string_equal(str(j, "mtime"), "2026-12-07T00:00:00Z");
	assert_string_equal(str(j, "mode"), "0644");
	assert_int_equal(json_integer_value(json_object_get(j, "uid")), 1000);
	assert_null(json_object_get(j, "owner")); /* no names from an agent that sends none */
	assert_null(json_object_get(j, "symlink_target"));
	json_decref(j);
}

static void test_extension(void **state)
{
	uint8_t tail[256];
	size_t n = ext(tail, 123456789, STRS("user\0user\0\0/home/user/a.txt\0"));
	struct frame f = stat_frame(SP_TYPE_FILE, 1000, "a.txt", tail, n);
	struct entry e;
	assert_int_equal(entry_parse(&f, &e), 0);
	assert_true(e.ext);
	assert_string_equal(e.path, "/home/user/a.txt");
	json_t *j = entry_json(&e, e.path);
	assert_string_equal(str(j, "owner"), "user");
	assert_string_equal(str(j, "group"), "user");
	assert_string_equal(str(j, "mtime"), "2026-12-07T00:00:00.123456789Z");
	assert_null(json_object_get(j, "symlink_target")); /* a file has none */
	json_decref(j);

	/* ids without names show as numbers; a link has its target; nanoseconds at their edge */
	n = ext(tail, 999999999, STRS("\0\0../b\0/tmp/l\0"));
	f = stat_frame(SP_TYPE_LINK, 4242, "l", tail, n);
	assert_int_equal(entry_parse(&f, &e), 0);
	j = entry_json(&e, e.path);
	assert_string_equal(str(j, "owner"), "4242");
	assert_string_equal(str(j, "group"), "4242");
	assert_string_equal(str(j, "type"), "symlink");
	assert_string_equal(str(j, "symlink_target"), "../b");
	assert_string_equal(str(j, "mtime"), "2026-12-07T00:00:00.999999999Z");
	json_decref(j);

	/* a later agent's fields after the path are left alone */
	n = ext(tail, 0, STRS("root\0root\0\0/x\0more\0"));
	f = stat_frame(SP_TYPE_DIR, 0, "x", tail, n);
	assert_int_equal(entry_parse(&f, &e), 0);
	assert_string_equal(e.owner, "root");
}

static void test_broken_extension(void **state)
{
	uint8_t tail[256];
	struct entry e;
	/* cut anywhere inside the fixed part of the extension */
	for (size_t cut = 1; cut < sizeof(struct sp_stat_ext); cut++) {
		struct frame f = stat_frame(SP_TYPE_FILE, 0, "a", tail, cut);
		assert_int_equal(entry_parse(&f, &e), -EPROTO);
	}
	/* cut anywhere in its strings */
	static const char strs[] = "root\0root\0\0/a";
	for (size_t k = 0; k <= sizeof(strs) - 1; k++) {
		size_t n = ext(tail, 0, strs, k);
		struct frame f = stat_frame(SP_TYPE_FILE, 0, "a", tail, n);
		assert_int_equal(entry_parse(&f, &e), -EPROTO);
	}
	/* nanoseconds past the second */
	size_t n = ext(tail, 1000000000, STRS("root\0root\0\0/a\0"));
	struct frame f = stat_frame(SP_TYPE_FILE, 0, "a", tail, n);
	assert_int_equal(entry_parse(&f, &e), -EPROTO);
	/* no name at all */
	f = stat_frame(SP_TYPE_FILE, 0, "", NULL, 0);
	f.len = sizeof(struct sp_stat);
	assert_int_equal(entry_parse(&f, &e), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_older_agent),
		cmocka_unit_test(test_extension),
		cmocka_unit_test(test_broken_extension),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

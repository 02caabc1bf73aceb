/*
 * tests/unit/lib/test_user.c - users and groups from a sandbox's
 * /etc/passwd and /etc/group (lib/user.c): the uid, gid, home and groups a
 * command runs with, whatever the sandbox's files contain. The files are
 * written into a temporary directory under /tmp and read through
 * user_by_name_in / user_by_id_in.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/user.h"

struct fixture {
	char dir[64];
	char passwd[128];
	char group[128];
};

static struct fixture fx;

static int setup(void **state)
{
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/space-test-user-XXXXXX");
	if (!mkdtemp(fx.dir))
		return -1;
	snprintf(fx.passwd, sizeof(fx.passwd), "%s/passwd", fx.dir);
	snprintf(fx.group, sizeof(fx.group), "%s/group", fx.dir);
	return 0;
}

static int teardown(void **state)
{
	unlink(fx.passwd);
	unlink(fx.group);
	rmdir(fx.passwd); /* when a test made it a directory */
	rmdir(fx.group);
	return rmdir(fx.dir);
}

/* Writes n bytes (NUL bytes included) to path. */
static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void write_files(const char *passwd, const char *group)
{
	write_bytes(fx.passwd, passwd, strlen(passwd));
	write_bytes(fx.group, group, strlen(group));
}

static int by_name(const char *name, struct user_info *u)
{
	return user_by_name_in(fx.passwd, fx.group, name, u);
}

static int by_id(uid_t uid, gid_t gid, struct user_info *u)
{
	return user_by_id_in(fx.passwd, fx.group, uid, gid, u);
}

/* u's groups are exactly the n given, in this order. */
static void expect_groups(const struct user_info *u, size_t n, const gid_t *want)
{
	assert_int_equal(u->ngroups, n);
	for (size_t i = 0; i < n; i++)
		if (u->groups[i] != want[i])
			fail_msg("group %zu is %u, want %u", i, (unsigned)u->groups[i], (unsigned)want[i]);
}

#define GROUPS(u, ...)                                                                    \
	do {                                                                              \
		const gid_t want_[] = { __VA_ARGS__ };                                    \
		expect_groups((u), sizeof(want_) / sizeof(want_[0]), want_);              \
	} while (0)

static const char *PASSWD = "root:x:0:0:root:/root:/bin/bash\n"
			    "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
			    "alice:x:1000:1000:Alice Liddell,,,:/home/alice:/bin/bash\n"
			    "nohome:x:1001:1001:::/bin/sh\n"
			    "bob:x:1002:100::/home/bob:\n";
static const char *GROUP = "root:x:0:\n"
			   "daemon:x:1:\n"
			   "sudo:x:27:alice\n"
			   "audio:x:29:bob,alice,carol\n"
			   "users:x:100:\n"
			   "alice:x:1000:\n"
			   "video:x:44:alicex,xalice,ALICE\n"
			   "plugdev:x:46:carol,alice\n";

static void test_by_name(void **state)
{
	struct user_info u;
	write_files(PASSWD, GROUP);
	assert_int_equal(by_name("alice", &u), 0);
	assert_int_equal(u.uid, 1000);
	assert_int_equal(u.gid, 1000);
	assert_string_equal(u.home, "/home/alice");
	/* primary gid first, then every group listing alice, in file order; names that only
	 * contain "alice" are other users */
	GROUPS(&u, 1000, 27, 29, 46);

	assert_int_equal(by_name("root", &u), 0);
	assert_int_equal(u.uid, 0);
	assert_string_equal(u.home, "/root");
	GROUPS(&u, 0);

	assert_int_equal(by_name("bob", &u), 0);
	assert_int_equal(u.gid, 100);
	GROUPS(&u, 100, 29);

	/* an empty home field means / */
	assert_int_equal(by_name("nohome", &u), 0);
	assert_string_equal(u.home, "/");
	GROUPS(&u, 1001);
}

static void test_missing_user(void **state)
{
	struct user_info u;
	write_files(PASSWD, GROUP);
	assert_int_equal(by_name("mallory", &u), -ENOENT);
	assert_int_equal(by_name("alic", &u), -ENOENT);
	assert_int_equal(by_name("alice2", &u), -ENOENT);
	assert_int_equal(by_name("ALICE", &u), -ENOENT);
	assert_int_equal(by_name("", &u), -ENOENT);
	assert_int_equal(by_name("x", &u), -ENOENT); /* a password field is not a name */
	assert_int_equal(by_name("1000", &u), -ENOENT);

	write_files("", "");
	assert_int_equal(by_name("root", &u), -ENOENT);
}

static void test_by_id(void **state)
{
	struct user_info u;
	write_files(PASSWD, GROUP);
	/* the uid's entry gives home and groups; the caller's gid is the primary one */
	assert_int_equal(by_id(1000, 50, &u), 0);
	assert_int_equal(u.uid, 1000);
	assert_int_equal(u.gid, 50);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 50, 27, 29, 46);

	/* a primary gid that is also a supplementary group is listed once, first */
	assert_int_equal(by_id(1000, 29, &u), 0);
	GROUPS(&u, 29, 27, 46);

	/* a uid without an entry: home /, only the given gid */
	assert_int_equal(by_id(4242, 4343, &u), 0);
	assert_int_equal(u.uid, 4242);
	assert_int_equal(u.gid, 4343);
	assert_string_equal(u.home, "/");
	GROUPS(&u, 4343);

	/* ... and uid 0 without an entry gets /root */
	write_files("alice:x:1000:1000::/home/alice:/bin/sh\n", "");
	assert_int_equal(by_id(0, 0, &u), 0);
	assert_string_equal(u.home, "/root");
	GROUPS(&u, 0);
}

/* The first entry of a name or uid is the one that counts. */
static void test_first_entry_wins(void **state)
{
	struct user_info u;
	write_files("alice:x:1000:1000::/home/first:/bin/sh\n"
		    "alice:x:2000:2000::/home/second:/bin/sh\n"
		    "other:x:1000:1000::/home/other:/bin/sh\n",
		    "");
	assert_int_equal(by_name("alice", &u), 0);
	assert_int_equal(u.uid, 1000);
	assert_string_equal(u.home, "/home/first");
	assert_int_equal(by_id(1000, 1000, &u), 0);
	assert_string_equal(u.home, "/home/first");
}

/* Lines that do not parse are skipped; the entries around them are still found. */
static void test_malformed_lines(void **state)
{
	struct user_info u;
	write_files("\n"
		    "\n"
		    "short:x:1002:1002\n"
		    "six:x:1003:1003::/home/six\n"
		    "baduid:x:abc:1004::/home/bad:/bin/sh\n"
		    "badgid:x:1005:1x::/home/bad:/bin/sh\n"
		    "emptyuid:x::1006::/home/bad:/bin/sh\n"
		    "toobig:x:4294967296:1007::/home/bad:/bin/sh\n"
		    ":x:1008:1008::/home/noname:/bin/sh\n"
		    "alice:x:1000:1000::/home/alice:/bin/sh\n"
		    ":::::::::\n"
		    "max:x:4294967294:4294967295::/home/max:/bin/sh\n",
		    "broken\n"
		    "sudo:x:27\n"
		    "badgid:x:2x:alice\n"
		    "\n"
		    "audio:x:29:alice\n");
	assert_int_equal(by_name("alice", &u), 0);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 1000, 29);

	const char *bad[] = { "short", "six", "baduid", "badgid", "emptyuid", "toobig" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (by_name(bad[i], &u) != -ENOENT)
			fail_msg("malformed entry %s was found", bad[i]);
	/* a malformed entry does not answer for its uid either */
	assert_int_equal(by_id(1002, 5, &u), 0);
	assert_string_equal(u.home, "/");
	assert_int_equal(by_id(1003, 5, &u), 0);
	assert_string_equal(u.home, "/");
	/* an entry without a name is not a user */
	assert_int_equal(by_id(1008, 5, &u), 0);
	assert_string_equal(u.home, "/");

	/* the largest ids parse */
	assert_int_equal(by_name("max", &u), 0);
	assert_int_equal(u.uid, 4294967294u);
	assert_int_equal(u.gid, 4294967295u);
}

/* Ids are decimal digits only: no sign, no blanks, no base prefix. strtoul alone takes
 * "-18446744073709551615" as 1, which would let an entry answer for a uid it does not
 * name. */
static void test_ids_are_plain_decimal(void **state)
{
	struct user_info u;
	write_files("neg:x:-18446744073709551615:0::/home/neg:/bin/sh\n"
		    "plus:x:+1:0::/home/plus:/bin/sh\n"
		    "blank:x: 1:0::/home/blank:/bin/sh\n"
		    "hex:x:0x1:0::/home/hex:/bin/sh\n"
		    "neggid:x:1:-18446744073709551615::/home/neggid:/bin/sh\n"
		    "daemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n",
		    "neg:x:-18446744073709551589:daemon\n"
		    "ok:x:27:daemon\n");
	assert_int_equal(by_id(1, 1, &u), 0);
	assert_string_equal(u.home, "/usr/sbin");
	GROUPS(&u, 1, 27);
	const char *bad[] = { "neg", "plus", "blank", "hex", "neggid" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (by_name(bad[i], &u) != -ENOENT)
			fail_msg("entry %s with a signed or padded id was found", bad[i]);
	/* leading zeros are still decimal */
	write_files("zero:x:0010:007::/home/zero:/bin/sh\n", "");
	assert_int_equal(by_name("zero", &u), 0);
	assert_int_equal(u.uid, 10);
	assert_int_equal(u.gid, 7);
}

/* Comment lines are skipped, as the C library does: a commented-out entry is not a user,
 * and does not answer for its uid ahead of the real one. */
static void test_comments(void **state)
{
	struct user_info u;
	write_files("# root:x:0:0::/old:/bin/sh\n"
		    "#root:x:0:0::/oldroot:/bin/sh\n"
		    "  #alice:x:1000:1000::/old:/bin/sh\n"
		    "root:x:0:0:root:/root:/bin/bash\n"
		    "alice:x:1000:1000::/home/alice:/bin/sh\n",
		    "#wheel:x:10:alice\n"
		    "audio:x:29:alice\n");
	assert_int_equal(by_id(0, 0, &u), 0);
	assert_string_equal(u.home, "/root");
	assert_int_equal(by_name("#root", &u), -ENOENT);
	assert_int_equal(by_name("alice", &u), 0);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 1000, 29);
}

/* A line longer than any buffer the parser might have. */
static void test_very_long_lines(void **state)
{
	struct user_info u;
	size_t big = 1 << 20;
	char *p = malloc(3 * big);
	assert_non_null(p);
	size_t n = 0;
	/* a megabyte of colons and digits that is no entry */
	for (size_t i = 0; i < big; i++)
		p[n++] = i % 3 ? '1' : ':';
	p[n++] = '\n';
	/* a real entry whose comment field is a megabyte long */
	n += (size_t)sprintf(p + n, "alice:x:1000:1000:");
	memset(p + n, 'g', big);
	n += big;
	n += (size_t)sprintf(p + n, ":/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n");
	write_bytes(fx.passwd, p, n);

	/* a group with a megabyte of members, alice last */
	n = (size_t)sprintf(p, "crowd:x:50:");
	while (n < big)
		n += (size_t)sprintf(p + n, "user%zu,", n);
	n += (size_t)sprintf(p + n, "alice\nsudo:x:27:bob\n");
	write_bytes(fx.group, p, n);
	free(p);

	assert_int_equal(by_name("alice", &u), 0);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 1000, 50);
	assert_int_equal(by_name("bob", &u), 0);
	assert_string_equal(u.home, "/home/bob");
	GROUPS(&u, 1001, 27);
}

/* The last line counts without its newline, and the newline is no part of a field. */
static void test_no_trailing_newline(void **state)
{
	struct user_info u;
	write_files("root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh",
		    "audio:x:29:bob\nsudo:x:27:alice");
	assert_int_equal(by_name("alice", &u), 0);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 1000, 27);

	/* an entry whose last field is its home, unterminated: too few fields */
	write_files("alice:x:1000:1000::/home/alice", "");
	assert_int_equal(by_name("alice", &u), -ENOENT);
}

/* A NUL byte ends what the parser reads of a line: nothing after it on that line counts. */
static void test_nul_bytes(void **state)
{
	struct user_info u;
	static const char passwd[] = "alice\0:x:0:0::/root:/bin/sh\n"
				     "bob:x:1001:1001::/home/bob\0:/bin/sh\n"
				     "carol:x:1002:1002::/home/carol:/bin/sh\0junk:more\n"
				     "\0\0\0\n"
				     "alice:x:1000:1000::/home/alice:/bin/sh\n";
	static const char group[] = "sudo:x:27:bob\0,alice\n"
				    "audio:x:29:carol,alice\n";
	write_bytes(fx.passwd, passwd, sizeof(passwd) - 1);
	write_bytes(fx.group, group, sizeof(group) - 1);

	assert_int_equal(by_name("alice", &u), 0);
	assert_int_equal(u.uid, 1000);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 1000, 29);
	assert_int_equal(by_name("bob", &u), -ENOENT);
	assert_int_equal(by_name("carol", &u), 0);
	assert_string_equal(u.home, "/home/carol");
	assert_int_equal(by_id(0, 0, &u), 0);
	assert_string_equal(u.home, "/root"); /* the fallback, not the NUL-cut entry */
	GROUPS(&u, 0);
}

/* Writes a group file listing `member` in n groups, gids 2000..2000+n-1. */
static void write_many_groups(const char *member, size_t n)
{
	size_t cap = n * 64 + 64, len = 0;
	char *p = malloc(cap);
	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(p + len, cap - len, "g%zu:x:%zu:someone,%s\n", i, 2000 + i, member);
	write_bytes(fx.group, p, len);
	free(p);
}

static void expect_many_groups(const struct user_info *u, gid_t primary, size_t supplementary)
{
	assert_int_equal(u->ngroups, 1 + supplementary);
	assert_int_equal(u->groups[0], primary);
	for (size_t i = 0; i < supplementary; i++)
		assert_int_equal(u->groups[1 + i], 2000 + i);
}

/* USER_MAX_GROUPS counts the primary gid: USER_MAX_GROUPS - 1 supplementary groups fit,
 * more are dropped in file order. */
static void test_groups_limit(void **state)
{
	struct user_info u;
	write_bytes(fx.passwd, "alice:x:1000:1000::/home/alice:/bin/sh\n",
		    strlen("alice:x:1000:1000::/home/alice:/bin/sh\n"));

	write_many_groups("alice", USER_MAX_GROUPS - 2);
	assert_int_equal(by_name("alice", &u), 0);
	expect_many_groups(&u, 1000, USER_MAX_GROUPS - 2);

	write_many_groups("alice", USER_MAX_GROUPS - 1);
	assert_int_equal(by_name("alice", &u), 0);
	expect_many_groups(&u, 1000, USER_MAX_GROUPS - 1);
	assert_int_equal(u.ngroups, USER_MAX_GROUPS);

	write_many_groups("alice", USER_MAX_GROUPS);
	assert_int_equal(by_name("alice", &u), 0);
	expect_many_groups(&u, 1000, USER_MAX_GROUPS - 1);

	write_many_groups("alice", 10 * USER_MAX_GROUPS);
	assert_int_equal(by_id(1000, 7, &u), 0);
	expect_many_groups(&u, 7, USER_MAX_GROUPS - 1);
}

/* The primary gid is first and only there, and every group is listed once, however often
 * the group file names it. */
static void test_each_group_once(void **state)
{
	struct user_info u;
	write_files("alice:x:1000:1000::/home/alice:/bin/sh\n",
		    "alice:x:1000:alice\n"
		    "sudo:x:27:alice\n"
		    "alice2:x:1000:alice\n"
		    "sudo-again:x:27:alice\n"
		    "audio:x:29:alice,alice\n");
	assert_int_equal(by_name("alice", &u), 0);
	GROUPS(&u, 1000, 27, 29);
}

/* A home that does not fit in USER_HOME_MAX is never cut to another path: the user gets
 * / instead, as for an empty home field. One that just fits is kept whole. */
static void test_home_limit(void **state)
{
	struct user_info u;
	char home[USER_HOME_MAX + 2];
	char line[USER_HOME_MAX + 128];

	memset(home, 'h', sizeof(home));
	home[0] = '/';
	home[USER_HOME_MAX - 1] = '\0'; /* the longest that fits: USER_HOME_MAX - 1 bytes */
	snprintf(line, sizeof(line), "fits:x:1000:1000::%s:/bin/sh\n", home);
	write_files(line, "");
	assert_int_equal(by_name("fits", &u), 0);
	assert_string_equal(u.home, home);

	home[USER_HOME_MAX - 1] = 'h'; /* one byte more */
	home[USER_HOME_MAX] = '\0';
	snprintf(line, sizeof(line), "long:x:1001:1001::%s:/bin/sh\n", home);
	write_files(line, "");
	assert_int_equal(by_name("long", &u), 0);
	assert_int_equal(u.uid, 1001);
	assert_string_equal(u.home, "/");
	assert_int_equal(by_id(1001, 1001, &u), 0);
	assert_string_equal(u.home, "/");
}

/* USER_NAME_MAX counts the terminating NUL, like LOGIN_NAME_MAX: a name of
 * USER_NAME_MAX - 1 bytes is a user with its groups; a longer one is no user, and its
 * groups are never those of a shorter name that shares its first bytes. */
static void test_name_limit(void **state)
{
	struct user_info u;
	char name[USER_NAME_MAX + 1];
	char passwd[2 * USER_NAME_MAX + 256], group[2 * USER_NAME_MAX + 256];

	memset(name, 'n', sizeof(name));
	name[USER_NAME_MAX - 1] = '\0';
	snprintf(passwd, sizeof(passwd), "%s:x:1000:1000::/home/n:/bin/sh\n", name);
	snprintf(group, sizeof(group), "g:x:27:%s\n", name);
	write_files(passwd, group);
	assert_int_equal(by_name(name, &u), 0);
	GROUPS(&u, 1000, 27);
	assert_int_equal(by_id(1000, 1000, &u), 0);
	assert_string_equal(u.home, "/home/n");
	GROUPS(&u, 1000, 27);

	/* one byte longer; the group lists the name cut to USER_NAME_MAX - 1 bytes */
	char cut[USER_NAME_MAX];
	memcpy(cut, name, sizeof(cut));
	name[USER_NAME_MAX - 1] = 'n';
	name[USER_NAME_MAX] = '\0';
	snprintf(passwd, sizeof(passwd), "%s:x:1000:1000::/home/n:/bin/sh\n", name);
	snprintf(group, sizeof(group), "g:x:27:%s\n", cut);
	write_files(passwd, group);
	assert_int_equal(by_name(name, &u), -ENOENT);
	assert_int_equal(by_id(1000, 1000, &u), 0);
	assert_string_equal(u.home, "/");
	GROUPS(&u, 1000);
}

static void test_unreadable_files(void **state)
{
	struct user_info u;
	/* no passwd file: no user by that name; by id, the fallback */
	write_bytes(fx.group, "sudo:x:27:alice\n", strlen("sudo:x:27:alice\n"));
	assert_int_equal(by_name("alice", &u), -ENOENT);
	assert_int_equal(by_id(1000, 1000, &u), 0);
	assert_string_equal(u.home, "/");
	GROUPS(&u, 1000);

	/* a passwd that opens but cannot be read is an error, not "no such user" */
	assert_int_equal(mkdir(fx.passwd, 0755), 0);
	assert_int_equal(by_name("alice", &u), -EISDIR);
	assert_int_equal(by_id(1000, 1000, &u), 0);
	assert_string_equal(u.home, "/");
	assert_int_equal(rmdir(fx.passwd), 0);

	/* no group file, or one that cannot be read: only the primary group */
	write_bytes(fx.passwd, "alice:x:1000:1000::/home/alice:/bin/sh\n",
		    strlen("alice:x:1000:1000::/home/alice:/bin/sh\n"));
	assert_int_equal(unlink(fx.group), 0);
	assert_int_equal(by_name("alice", &u), 0);
	GROUPS(&u, 1000);
	assert_int_equal(mkdir(fx.group, 0755), 0);
	assert_int_equal(by_name("alice", &u), 0);
	assert_string_equal(u.home, "/home/alice");
	GROUPS(&u, 1000);
	assert_int_equal(rmdir(fx.group), 0);

	/* a file without read permission (root reads it anyway, so only checked for others) */
	if (geteuid() != 0) {
		assert_int_equal(chmod(fx.passwd, 0), 0);
		assert_int_equal(by_name("alice", &u), -EACCES);
	}
}

/* What a file request names: a name, a uid that has an entry, or UID:GID; and what is refused. */
static void test_by_spec(void **state)
{
	struct user_info u;
	write_files("root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n",
		    "user:x:1000:\ndev:x:2000:user\n");
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "user", &u), 0);
	assert_int_equal(u.uid, 1000);
	assert_string_equal(u.home, "/home/user");
	GROUPS(&u, 1000, 2000);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "1000", &u), 0);
	assert_int_equal(u.gid, 1000);
	assert_string_equal(u.home, "/home/user");
	GROUPS(&u, 1000, 2000);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "1000:5", &u), 0);
	assert_int_equal(u.uid, 1000);
	assert_int_equal(u.gid, 5);
	/* UID:GID needs no entry; a bare uid does */
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "4242:4242", &u), 0);
	assert_string_equal(u.home, "/");
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "4242", &u), -ENOENT);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "nobody-here", &u), -ENOENT);
	/* ids at the edge: 4294967294 is the last, 4294967295 is (uid_t)-1 */
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "4294967294:4294967294", &u), 0);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "4294967295:0", &u), -EINVAL);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "0:4294967295", &u), -EINVAL);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "1000:", &u), -EINVAL);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "10x", &u), -EINVAL);
	assert_int_equal(user_by_spec_in(fx.passwd, fx.group, "12345678901234567890:1", &u), -EINVAL);
}

/* Names of ids for file entries, and a cache that sees the files change. */
static void test_id_names(void **state)
{
	struct user_name_cache users = { 0 }, groups = { 0 };
	write_files("root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n"
		    "again:x:1000:1000::/x:/bin/sh\n",
		    "root:x:0:\nuser:x:1000:\n");
	assert_string_equal(user_id_name_in(&users, fx.passwd, 1000), "user"); /* the first entry */
	assert_string_equal(user_id_name_in(&users, fx.passwd, 0), "root");
	assert_string_equal(user_id_name_in(&users, fx.passwd, 77), "");
	assert_string_equal(user_id_name_in(&groups, fx.group, 1000), "user");
	/* more ids than the cache keeps: each still named right */
	for (uint32_t id = 0; id < 3 * USER_NAME_CACHE; id++)
		assert_string_equal(user_id_name_in(&users, fx.passwd, id), id == 0 ? "root" : "");
	assert_string_equal(user_id_name_in(&users, fx.passwd, 1000), "user");
	/* an account added (a file of another size) is seen at once */
	write_files("root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/bash\n"
		    "newcomer:x:77:77::/home/n:/bin/sh\n",
		    "root:x:0:\n");
	assert_string_equal(user_id_name_in(&users, fx.passwd, 77), "newcomer");
	assert_string_equal(user_id_name_in(&groups, fx.group, 1000), "");
	/* no file: no names */
	assert_int_equal(unlink(fx.passwd), 0);
	assert_string_equal(user_id_name_in(&users, fx.passwd, 0), "");
}

/* A group by name (the builder's USER user:group): the first entry of that name gives its gid,
 * by the rules of every lookup here; a line those rules skip is no group. */
static void test_group_by_name(void **state)
{
	gid_t g = 12345;
	write_files(PASSWD, "# crew:x:7:\n"
			    "  crew:x:4500:\n"
			    "crew:x:4600:\n"
			    "short:x\n"
			    "badid:x:-1:\n"
			    "plain:x:46:carol,alice\n");
	assert_int_equal(user_group_by_name_in(fx.group, "crew", &g), 0);
	assert_int_equal(g, 4500);
	assert_int_equal(user_group_by_name_in(fx.group, "plain", &g), 0);
	assert_int_equal(g, 46);
	g = 12345;
	assert_int_equal(user_group_by_name_in(fx.group, "short", &g), -ENOENT);
	assert_int_equal(user_group_by_name_in(fx.group, "badid", &g), -ENOENT);
	assert_int_equal(user_group_by_name_in(fx.group, "nobody", &g), -ENOENT);
	assert_int_equal(user_group_by_name_in(fx.group, "", &g), -ENOENT);
	assert_int_equal(g, 12345); /* untouched when nothing matched */
	assert_int_equal(unlink(fx.group), 0);
	assert_int_equal(user_group_by_name_in(fx.group, "crew", &g), -ENOENT); /* no file */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_by_name),
		T(test_missing_user),
		T(test_by_id),
		T(test_first_entry_wins),
		T(test_malformed_lines),
		T(test_ids_are_plain_decimal),
		T(test_comments),
		T(test_very_long_lines),
		T(test_no_trailing_newline),
		T(test_nul_bytes),
		T(test_groups_limit),
		T(test_each_group_once),
		T(test_home_limit),
		T(test_name_limit),
		T(test_unreadable_files),
		T(test_by_spec),
		T(test_id_names),
		T(test_group_by_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/fuzz/fuzz_passwd.c - lib/user.c: the sandbox's /etc/passwd and
 * /etc/group, which whoever controls the sandbox's root filesystem writes.
 *
 * Input layout (little-endian):
 *   u16 P        bytes of the input that are the passwd file (cut to what is there)
 *   u32 uid      u32 gid   the ids user_by_id looks up
 *   P bytes      the passwd file; the rest of the input is the group file
 * Short inputs are padded with zeros. Both files are memfds, read through
 * their /proc/self/fd/N paths by user_by_name_in and user_by_id_in, exactly
 * as the agent reads /etc/passwd and /etc/group.
 *
 * Looked up: the name at the start of each of the passwd's first lines, and
 * "root", by name; uid/gid and 0/0 by id. Checked on every answer:
 *  - user_by_name returns 0, -ENOENT or another negative errno, and the same
 *    answer twice;
 *  - user_by_id returns 0 with exactly the uid and gid asked for;
 *  - on success the home is a non-empty string shorter than USER_HOME_MAX,
 *    there are 1 to USER_MAX_GROUPS groups, the primary gid first, and no
 *    group twice.
 * And as a file request names them (user_by_spec_in): the uid alone finds
 * that uid or nothing, UID:GID always gives exactly those ids; the names of
 * uid and gid for entries (user_id_name_in) are shorter than USER_NAME_MAX,
 * hold no ':', and come back the same from the cache; gid's name, when it has one, is
 * found as a group by that name (user_group_by_name_in), the same twice.
 *
 * Seeds (tests/fuzz/corpus/passwd/): seed-debian (a stock passwd and group),
 * seed-odd (comments, blank lines, malformed ids, NUL bytes, no final
 * newline), seed-groups (a user in more groups than USER_MAX_GROUPS),
 * seed-long (a home and a name at their limits).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/user.h"

#define HEADER 10
#define NAMES_FROM_LINES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct file {
	int fd;
	char path[32];
};

static struct file passwd_file = { -1, "" }, group_file = { -1, "" };

static void file_set(struct file *f, const char *label, const uint8_t *p, size_t n)
{
	if (f->fd < 0) {
		f->fd = memfd_create(label, MFD_CLOEXEC);
		assert(f->fd >= 0);
		snprintf(f->path, sizeof(f->path), "/proc/self/fd/%d", f->fd);
	}
	assert(ftruncate(f->fd, 0) == 0);
	size_t off = 0;
	while (off < n) {
		ssize_t w = pwrite(f->fd, p + off, n - off, (off_t)off);
		assert(w > 0);
		off += (size_t)w;
	}
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_info(const struct user_info *u, gid_t gid)
{
	size_t len = strnlen(u->home, sizeof(u->home));
	assert(len > 0 && len < sizeof(u->home));
	assert(u->ngroups >= 1 && u->ngroups <= USER_MAX_GROUPS);
	assert(u->groups[0] == gid);
	for (size_t i = 0; i < u->ngroups; i++)
		for (size_t j = i + 1; j < u->ngroups; j++)
			assert(u->groups[i] != u->groups[j]);
}

static void check_name(const char *name)
{
	struct user_info u, again;
	int rc = user_by_name_in(passwd_file.path, group_file.path, name, &u);
	assert(rc == 0 || rc < 0);
	if (rc == 0)
		check_info(&u, u.gid);
	int rc2 = user_by_name_in(passwd_file.path, group_file.path, name, &again);
	assert(rc2 == rc);
	if (rc == 0)
		assert(memcmp(&u, &again, sizeof(u)) == 0);
}

static void check_id(uid_t uid, gid_t gid)
{
	struct user_info u;
	assert(user_by_id_in(passwd_file.path, group_file.path, uid, gid, &u) == 0);
	assert(u.uid == uid && u.gid == gid);
	check_info(&u, gid);
}

/* What a file request names: the uid alone and UID:GID, then the names of both ids for entries. */
static void check_spec(uid_t uid, gid_t gid)
{
	struct user_info u;
	char spec[32];
	snprintf(spec, sizeof(spec), "%u", (unsigned)uid);
	int rc = user_by_spec_in(passwd_file.path, group_file.path, spec, &u);
	assert(rc == 0 || rc == -ENOENT || rc == -EINVAL || rc < 0);
	if (rc == 0)
		assert(u.uid == uid);
	snprintf(spec, sizeof(spec), "%u:%u", (unsigned)uid, (unsigned)gid);
	rc = user_by_spec_in(passwd_file.path, group_file.path, spec, &u);
	if (uid != (uid_t)-1 && gid != (gid_t)-1)
		assert(rc == 0 && u.uid == uid && u.gid == gid);
	struct user_name_cache c = { 0 };
	const char *name = user_id_name_in(&c, passwd_file.path, uid);
	assert(strlen(name) < USER_NAME_MAX && strchr(name, ':') == NULL);
	assert(strcmp(user_id_name_in(&c, passwd_file.path, uid), name) == 0); /* the cached one */
	name = user_id_name_in(&c, group_file.path, gid);
	assert(strlen(name) < USER_NAME_MAX && strchr(name, ':') == NULL);
	/* a group that has a name is found by it, as the builder looks a USER's group up, the same
	 * twice (the first entry of the name: not always gid's own) */
	gid_t g, again;
	if (*name) {
		assert(user_group_by_name_in(group_file.path, name, &g) == 0);
		assert(user_group_by_name_in(group_file.path, name, &again) == 0 && again == g);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t head[HEADER] = { 0 };
	memcpy(head, data, size < HEADER ? size : HEADER);
	const uint8_t *rest = size > HEADER ? data + HEADER : data + size;
	size_t nrest = size > HEADER ? size - HEADER : 0;
	size_t np = (size_t)head[0] | (size_t)head[1] << 8;
	if (np > nrest)
		np = nrest;
	file_set(&passwd_file, "passwd", rest, np);
	file_set(&group_file, "group", rest + np, nrest - np);

	/* the names that start the passwd's first lines (up to ':'), as NUL-terminated copies */
	size_t off = 0;
	for (int line = 0; line < NAMES_FROM_LINES && off < np; line++) {
		size_t end = off;
		while (end < np && rest[end] != ':' && rest[end] != '\n')
			end++;
		char *name = malloc(end - off + 1);
		assert(name);
		memcpy(name, rest + off, end - off);
		name[end - off] = '\0';
		check_name(name);
		free(name);
		while (end < np && rest[end] != '\n')
			end++;
		off = end + 1;
	}
	check_name("root");
	check_id((uid_t)get_u32(head + 2), (gid_t)get_u32(head + 6));
	check_id(0, 0);
	check_spec((uid_t)get_u32(head + 2), (gid_t)get_u32(head + 6));
	check_spec(0, 0);
	return 0;
}

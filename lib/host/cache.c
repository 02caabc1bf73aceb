/*
 * lib/host/cache.c - publishing cache entries (see cache.h).
 */
#include "lib/host/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/host/dir.h"
#include "lib/host/spawn.h"

int cache_has(const char *parent, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	return snprintf(path, sizeof(path), "%s/%s", parent, name) < (int)sizeof(path) && stat(path, &st) == 0;
}

/* Flushes what was built in parent's file system, so a crash after the rename cannot
 * publish an entry whose bytes were lost; then the rename itself. */
static int sync_parent(const char *parent)
{
	int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = syncfs(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static void remove_tree(const char *path)
{
	char *rm[] = { "rm", "-rf", "--one-file-system", (char *)path, NULL };
	spawn_run(rm, -1, -1);
}

/* nftw's walk has no argument of its own: the bytes being added up, one walk at a time. */
static __thread long long *added;

static int add(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)path;
	(void)type;
	(void)ftw;
	if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
		*added += (long long)st->st_blocks * 512;
	return 0;
}

/* What the entry at path added: its blocks but those of files with other names too. */
static long long walk_added(const char *path)
{
	long long n = 0;
	added = &n;
	int rc = nftw(path, add, 64, FTW_PHYS | FTW_MOUNT);
	added = NULL;
	return rc < 0 ? -1 : n;
}

static void put_bytes(const char *final, long long n)
{
	char path[PATH_MAX + 8], text[32];
	snprintf(path, sizeof(path), "%s.bytes", final);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	int len = snprintf(text, sizeof(text), "%lld\n", n);
	if (write(fd, text, (size_t)len) != len)
		unlink(path);
	close(fd);
}

long long cache_bytes(const char *parent, const char *name)
{
	char final[PATH_MAX], path[PATH_MAX + 8], text[32];
	snprintf(final, sizeof(final), "%s/%s", parent, name);
	snprintf(path, sizeof(path), "%s.bytes", final);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	if (fd >= 0)
		close(fd);
	if (r > 0) {
		text[r] = '\0';
		char *end;
		long long n = strtoll(text, &end, 10);
		if (end != text && n >= 0)
			return n;
	}
	long long n = walk_added(final); /* an entry from before sizes were kept */
	if (n >= 0)
		put_bytes(final, n);
	return n;
}

int cache_get(const char *parent, const char *name, cache_build_fn *build, void *ctx, struct err *e)
{
	char final[PATH_MAX], tmp[PATH_MAX], lockpath[PATH_MAX];
	if (snprintf(final, sizeof(final), "%s/%s", parent, name) >= (int)sizeof(final) - 5)
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "cache path too long: %s/%s", parent, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	snprintf(lockpath, sizeof(lockpath), "%s.lock", final);
	int rc = dir_make(parent, 0755);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot create %s: %s", parent, strerror(-rc));
	int lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot open %s: %s", lockpath, strerror(errno));
	while ((rc = flock(lock, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		rc = err_set(e, ERR_INTERNAL, errno, "cannot lock %s: %s", lockpath, strerror(errno));
		goto out;
	}
	/* under the lock: an entry being taken away (a template's files a release removes, a
	 * prune) is gone once the lock is had, and is made again */
	struct stat st;
	if (stat(final, &st) == 0) {
		futimens(lock, NULL);
		rc = 0;
		goto out;
	}
	remove_tree(tmp);
	if ((rc = build(tmp, ctx, e)) < 0)
		goto fail;
	long long bytes = walk_added(tmp);
	if ((rc = sync_parent(parent)) < 0) {
		rc = err_set(e, ERR_INTERNAL, -rc, "cannot sync %s: %s", parent, strerror(-rc));
		goto fail;
	}
	if (rename(tmp, final) < 0) {
		rc = err_set(e, ERR_INTERNAL, errno, "cannot rename %s: %s", tmp, strerror(errno));
		goto fail;
	}
	sync_parent(parent); /* the rename: a cache may lose it in a crash, and is rebuilt */
	futimens(lock, NULL);
	if (bytes >= 0)
		put_bytes(final, bytes); /* lost in a crash, it is counted again (cache_bytes) */
	rc = 1;
	goto out;
fail:
	remove_tree(tmp);
out:
	close(lock);
	return rc;
}

int cache_hold(const char *parent, const char *name, cache_build_fn *build, void *ctx, struct err *e)
{
	char final[PATH_MAX], lockpath[PATH_MAX];
	snprintf(final, sizeof(final), "%s/%s", parent, name);
	snprintf(lockpath, sizeof(lockpath), "%s/%s.lock", parent, name);
	int rc = dir_make(parent, 0755);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot create %s: %s", parent, strerror(-rc));
	for (;;) {
		/* shared first: holders of an entry that is there never wait on each other */
		int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return err_set(e, ERR_INTERNAL, errno, "cannot open %s: %s", lockpath, strerror(errno));
		while ((rc = flock(fd, LOCK_SH)) < 0 && errno == EINTR)
			;
		struct stat st;
		if (rc == 0 && stat(final, &st) == 0) {
			futimens(fd, NULL);
			return fd;
		}
		rc = rc < 0 ? errno : 0;
		close(fd);
		if (rc)
			return err_set(e, ERR_INTERNAL, rc, "cannot lock %s: %s", lockpath, strerror(rc));
		/* not there (never made, or pruned): made under the exclusive lock, then held */
		if ((rc = cache_get(parent, name, build, ctx, e)) < 0)
			return rc;
	}
}

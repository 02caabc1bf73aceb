/*
 * daemon/store/cache.c - publishing cache entries (see cache.h).
 */
#include "daemon/store/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/dir.h"
#include "daemon/base/spawn.h"

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

int cache_get(const char *parent, const char *name, cache_build_fn *build, void *ctx, struct err *e)
{
	char final[PATH_MAX], tmp[PATH_MAX], lockpath[PATH_MAX];
	if (snprintf(final, sizeof(final), "%s/%s", parent, name) >= (int)sizeof(final) - 5)
		return err_set(e, 500, "internal", ENAMETOOLONG, "cache path too long: %s/%s", parent, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	snprintf(lockpath, sizeof(lockpath), "%s.lock", final);
	int rc = dir_make(parent, 0755);
	if (rc < 0)
		return err_set(e, 500, "internal", -rc, "cannot create %s: %s", parent, strerror(-rc));
	int lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock < 0)
		return err_set(e, 500, "internal", errno, "cannot open %s: %s", lockpath, strerror(errno));
	while ((rc = flock(lock, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		rc = err_set(e, 500, "internal", errno, "cannot lock %s: %s", lockpath, strerror(errno));
		goto out;
	}
	struct stat st;
	if (stat(final, &st) == 0) {
		rc = 0;
		goto out;
	}
	remove_tree(tmp);
	if ((rc = build(tmp, ctx, e)) < 0)
		goto fail;
	if ((rc = sync_parent(parent)) < 0) {
		rc = err_set(e, 500, "internal", -rc, "cannot sync %s: %s", parent, strerror(-rc));
		goto fail;
	}
	if (rename(tmp, final) < 0) {
		rc = err_set(e, 500, "internal", errno, "cannot rename %s: %s", tmp, strerror(errno));
		goto fail;
	}
	sync_parent(parent); /* the rename: a cache may lose it in a crash, and is rebuilt */
	rc = 1;
	goto out;
fail:
	remove_tree(tmp);
out:
	close(lock);
	return rc;
}

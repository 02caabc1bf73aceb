/*
 * lib/host/dir.c - see dir.h.
 */
#include "lib/host/dir.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int dir_make(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* nftw's walk has no argument of its own: what dir_usage counts, one walk at a time. */
static __thread struct usage {
	long long bytes;
	struct inode { dev_t dev; ino_t ino; long long bytes; } *linked;
	size_t n, cap;
	bool failed;
} *walk;

static int count(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)path;
	(void)type;
	(void)ftw;
	long long b = (long long)st->st_blocks * 512;
	if (S_ISDIR(st->st_mode) || st->st_nlink < 2) {
		walk->bytes += b;
		return 0;
	}
	if (walk->n == walk->cap) { /* a file of several names is counted once, after the walk */
		size_t cap = walk->cap ? walk->cap * 2 : 1024;
		struct inode *more = realloc(walk->linked, cap * sizeof(*more));
		if (!more) {
			walk->failed = true;
			return 1;
		}
		walk->linked = more;
		walk->cap = cap;
	}
	walk->linked[walk->n++] = (struct inode){ st->st_dev, st->st_ino, b };
	return 0;
}

static int by_inode(const void *a, const void *b)
{
	const struct inode *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

long long dir_usage(const char *path)
{
	struct usage u = { 0 };
	walk = &u;
	int rc = nftw(path, count, 64, FTW_PHYS | FTW_MOUNT);
	walk = NULL;
	if (u.n)
		qsort(u.linked, u.n, sizeof(*u.linked), by_inode);
	for (size_t i = 0; i < u.n; i++)
		if (i == 0 || by_inode(&u.linked[i], &u.linked[i - 1]) != 0)
			u.bytes += u.linked[i].bytes;
	free(u.linked);
	if (u.failed)
		return -ENOMEM;
	return rc < 0 ? -errno : u.bytes;
}

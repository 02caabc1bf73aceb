/*
 * daemon/store/cache_prune.c - the cache's usage and its prune (see cache_prune.h).
 */
#include "daemon/store/cache_prune.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/host/dir.h"
#include "lib/host/spawn.h"
#include "lib/host/cache.h"

struct entry {
	char path[PATH_MAX];
	struct timespec used;     /* its lock file's time: its last use (cache.h) */
	long long bytes;
};

static bool is_prunable(const char *kind)
{
	static const char *const kinds[] = CACHE_PRUNABLE;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i]) == 0)
			return true;
	return false;
}

/* An entry's name: none of the files beside it (NAME.lock, NAME.tmp, NAME.log, NAME.users). */
static bool is_entry(const char *name)
{
	return name[0] != '.' && !strchr(name, '.');
}

/* Whether the entry at path is held or being built: its lock cannot be had at once. The
 * lock is given back at once when it could. */
static bool in_use(const char *path)
{
	char lockpath[PATH_MAX + 8];
	snprintf(lockpath, sizeof(lockpath), "%s.lock", path);
	int fd = open(lockpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
	close(fd);
	return busy;
}

/* The entries of dir/kind into *v (n of them); 0 or -errno. */
static int entries(const char *dir, const char *kind, struct entry **v, size_t *n)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s/%s", dir, kind);
	DIR *dp = opendir(parent);
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	size_t cap = *n;
	int rc = 0;
	while (rc == 0 && (de = readdir(dp))) {
		if (!is_entry(de->d_name))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			struct entry *more = realloc(*v, cap * sizeof(**v));
			if (!more) {
				rc = -ENOMEM;
				break;
			}
			*v = more;
		}
		struct entry *x = &(*v)[*n];
		char lockpath[PATH_MAX + 8];
		struct stat st;
		snprintf(x->path, sizeof(x->path), "%s/%s", parent, de->d_name);
		snprintf(lockpath, sizeof(lockpath), "%s.lock", x->path);
		if (stat(lockpath, &st) < 0 && stat(x->path, &st) < 0)
			continue; /* gone meanwhile */
		x->used = st.st_mtim;
		x->bytes = cache_bytes(parent, de->d_name);
		if (x->bytes < 0)
			continue; /* gone meanwhile, or unreadable: not ours to judge */
		(*n)++;
	}
	closedir(dp);
	return rc;
}

json_t *cache_usage(const char *dir)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return NULL;
	json_t *out = json_array();
	struct dirent *de;
	while ((de = readdir(dp))) {
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		json_t *kind = json_pack("{s:s, s:b}", "kind", de->d_name, "prunable", is_prunable(de->d_name));
		if (is_prunable(de->d_name)) {
			struct entry *v = NULL;
			size_t n = 0;
			long long bytes = 0, reclaimable = 0;
			int held = 0;
			entries(dir, de->d_name, &v, &n);
			for (size_t i = 0; i < n; i++) {
				bool busy = in_use(v[i].path);
				bytes += v[i].bytes;
				held += busy;
				reclaimable += busy ? 0 : v[i].bytes;
			}
			free(v);
			json_object_set_new(kind, "entries", json_integer((json_int_t)n));
			json_object_set_new(kind, "bytes", json_integer(bytes));
			json_object_set_new(kind, "in_use", json_integer(held));
			json_object_set_new(kind, "reclaimable", json_integer(reclaimable));
		} else {
			DIR *kd = opendir(path);
			struct dirent *ke;
			json_int_t n = 0;
			while (kd && (ke = readdir(kd)))
				n += is_entry(ke->d_name);
			if (kd)
				closedir(kd);
			long long bytes = dir_usage(path);
			json_object_set_new(kind, "entries", json_integer(n));
			json_object_set_new(kind, "bytes", json_integer(bytes > 0 ? bytes : 0));
		}
		json_array_append_new(out, kind);
	}
	closedir(dp);
	return out;
}

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Removes x unless it is held, being built, or was used since it was listed. 1 when it went. */
static int take_away(const struct entry *x)
{
	char lockpath[PATH_MAX + 8], tmp[PATH_MAX + 8];
	snprintf(lockpath, sizeof(lockpath), "%s.lock", x->path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", x->path);
	int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = 0;
	struct stat st;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		rc = -EBUSY;
	else if (fstat(fd, &st) == 0 && by_use(&(struct entry){ .used = st.st_mtim }, x) > 0)
		rc = -EBUSY; /* used since: no longer the least recent */
	else {
		/* under the lock: a builder of this entry waits, then finds no entry and makes it */
		char *rm[] = { "rm", "-rf", "--one-file-system", tmp, NULL };
		spawn_run(rm, -1, -1); /* what a failed build left */
		if (rename(x->path, tmp) == 0) {
			spawn_run(rm, -1, -1);
			rc = 1;
		} else
			rc = errno == ENOENT ? 0 : -errno;
	}
	close(fd);
	return rc;
}

int cache_prune(const char *dir, long long keep, bool wait, struct cache_pruned *out)
{
	static const char *const kinds[] = CACHE_PRUNABLE;
	struct entry *v = NULL;
	size_t n = 0;
	char lockpath[PATH_MAX];
	*out = (struct cache_pruned){ 0 };
	snprintf(lockpath, sizeof(lockpath), "%s/%s", dir, CACHE_PRUNE_LOCK);
	int lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644), rc = 0;
	if (lock < 0)
		return errno == ENOENT ? 0 : -errno; /* no cache yet: nothing to prune */
	while ((rc = flock(lock, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		rc = -errno;
		close(lock);
		return rc == -EWOULDBLOCK ? -EBUSY : rc;
	}
	for (size_t k = 0; rc == 0 && k < sizeof(kinds) / sizeof(kinds[0]); k++)
		rc = entries(dir, kinds[k], &v, &n);
	if (rc < 0) {
		free(v);
		close(lock);
		return rc;
	}
	long long total = 0;
	for (size_t i = 0; i < n; i++)
		total += v[i].bytes;
	qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; i < n && total > keep; i++) {
		int gone = take_away(&v[i]);
		if (gone == 1) {
			out->removed++;
			out->freed += v[i].bytes;
			total -= v[i].bytes;
		} else if (gone == -EBUSY)
			out->busy++;
	}
	out->kept = total;
	free(v);
	close(lock);
	return 0;
}

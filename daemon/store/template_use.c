/*
 * daemon/store/template_use.c - which state dirs use a template's files in the machine's
 * cache (template.h: template_use, template_release), and what a recorded one holds
 * (template_put_info).
 */
#include "daemon/store/template.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/host/dir.h"
#include "lib/host/hash.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/driver/vm_image.h"
#include "daemon/store/store.h"

/* <cache>/templates/<key>.users and this state dir's mark in it. */
static int mark_paths(struct daemon *d, const char *key, char *users, size_t nu, char *mark, size_t nm)
{
	char who[65];
	int rc = hash_sha256_hex(d->cfg.state_dir, strlen(d->cfg.state_dir), who);
	if (rc < 0)
		return rc;
	snprintf(users, nu, "%s/templates/%s.users", d->cfg.cache_dir, key);
	snprintf(mark, nm, "%s/%.16s", users, who);
	return 0;
}

int template_use(struct daemon *d, const char *key)
{
	char users[800], mark[820];
	int rc = mark_paths(d, key, users, sizeof(users), mark, sizeof(mark));
	if (rc < 0)
		return rc;
	if (mkdir(users, 0755) < 0 && errno != EEXIST)
		return -errno;
	int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t n = strlen(d->cfg.state_dir);
	rc = write(fd, d->cfg.state_dir, n) == (ssize_t)n ? 0 : -EIO; /* whose it is: see gone_marks */
	close(fd);
	return rc;
}

/* Takes away the marks of state dirs that are gone (no state.db left): a state dir removed
 * with its spaced stopped never released what it used. */
static void gone_marks(const char *users)
{
	DIR *dp = opendir(users);
	struct dirent *de;
	while (dp && (de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		char mark[1100], dir[PATH_MAX], db[PATH_MAX + 16];
		snprintf(mark, sizeof(mark), "%s/%s", users, de->d_name);
		int fd = open(mark, O_RDONLY | O_CLOEXEC);
		ssize_t r = fd < 0 ? -1 : read(fd, dir, sizeof(dir) - 1);
		if (fd >= 0)
			close(fd);
		if (r <= 0)
			continue;
		dir[r] = '\0';
		snprintf(db, sizeof(db), "%s/state.db", dir);
		if (access(db, F_OK) < 0 && errno == ENOENT) {
			unlink(mark);
			log_info("%s no longer exists: its use of %s is over", dir, users);
		}
	}
	if (dp)
		closedir(dp);
}

int template_release(struct daemon *d, const char *key)
{
	char users[800], mark[820], dir[760], lockpath[780];
	int rc = mark_paths(d, key, users, sizeof(users), mark, sizeof(mark));
	if (rc < 0 || store_template_key_names(d->store, key) > 0) /* another name here has it */
		return rc;
	snprintf(dir, sizeof(dir), "%s/templates/%s", d->cfg.cache_dir, key);
	snprintf(lockpath, sizeof(lockpath), "%s.lock", dir);
	/* under the entry's lock: a builder (cache.h) marks before it looks for the entry */
	int lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		rc = -errno;
		if (lock >= 0)
			close(lock);
		return rc;
	}
	unlink(mark);
	gone_marks(users);
	if (rmdir(users) == 0) { /* no state dir marks it: its files go, and their microVM image */
		char rootfs[800], real[PATH_MAX];
		snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
		if (realpath(rootfs, real) && vm_image_remove(d->cfg.cache_dir, real) < 0)
			log_warn("template files %s: their microVM image stays in the cache", dir);
		char *rm[] = { "rm", "-rf", "--one-file-system", dir, NULL };
		rc = spawn_run(rm, -1, -1) == 0 ? 0 : -EIO;
		if (rc == 0)
			log_info("template files %s removed: no state dir uses them", dir);
	}
	close(lock);
	return rc;
}

void template_put_info(struct daemon *d, const char *name, const char *rootfs, json_t *layers)
{
	long long bytes = dir_usage(rootfs);
	json_t *info = json_pack("{s:o?, s:o?}", "bytes", bytes >= 0 ? json_integer(bytes) : NULL, "layers", layers);
	char *text = info ? json_dumps(info, JSON_COMPACT) : NULL;
	if (!text || store_put_template_info(d->store, name, text) < 0)
		log_warn("template %s: its size and layers could not be recorded", name);
	free(text);
	json_decref(info);
}

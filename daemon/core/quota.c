/*
 * daemon/core/quota.c - snapshot quotas per tenant and the free-space checks
 * before a create, a snapshot or a fork (see quota.h).
 */
#include "daemon/core/quota.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "daemon/core/sandbox.h"
#include "daemon/driver/driver.h"
#include "daemon/store/store.h"

#define MIB (1024.0 * 1024.0)

int quota_snapshot(struct daemon *d, const struct sandbox *sb, struct err *e)
{
	if (!sb->conf.tenant[0])
		return 0;
	int count = 0;
	uint64_t bytes = 0;
	int rc = store_tenant_snapshots(d->store, sb->conf.tenant, &count, &bytes);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot count the tenant's snapshots");
	if (count >= d->cfg.max_snapshots)
		return err_set(e, ERR_TOO_MANY, EDQUOT, "a tenant may keep at most %d snapshots; delete one first",
			       d->cfg.max_snapshots);
	if (bytes >= d->cfg.max_snapshot_bytes)
		return err_set(e, ERR_TOO_MANY, EDQUOT,
			       "the tenant's snapshots take %.1f MiB, at or over its quota of %.1f MiB; delete one first",
			       (double)bytes / MIB, (double)d->cfg.max_snapshot_bytes / MIB);
	return 0;
}

uint64_t quota_image_bytes(struct daemon *d, struct sandbox *sb)
{
	uint64_t image = (uint64_t)sb->conf.memory_mb << 20;
	struct driver_stats st;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	if (driver_stats(dv, sb, &st) == 0 && st.memory_bytes && st.memory_bytes < image)
		image = st.memory_bytes;
	return image;
}

int quota_free(const char *dir, uint64_t *avail, struct err *e)
{
	struct statvfs fs;
	if (statvfs(dir, &fs) < 0)
		return err_from_errno(e, errno, "cannot read the free space of %s: %s", dir, strerror(errno));
	*avail = (uint64_t)fs.f_bavail * fs.f_frsize;
	return 0;
}

/* What sb's writable layer holds on the host: the used blocks of its own disk where that is
 * mounted there (gVisor's), else the blocks its files take in the state dir's file system (a
 * microVM's layer is a folder holding its disk image). */
static uint64_t layer_used(const char *upper, const char *state_dir)
{
	struct stat a, b;
	struct statvfs fs;
	if (stat(upper, &a) < 0)
		return 0;
	if (stat(state_dir, &b) == 0 && a.st_dev != b.st_dev)
		return statvfs(upper, &fs) == 0 ? (uint64_t)(fs.f_blocks - fs.f_bfree) * fs.f_frsize : 0;
	uint64_t used = 0;
	DIR *dp = opendir(upper);
	struct dirent *de;
	while (dp && (de = readdir(dp))) {
		struct stat st;
		if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			used += (uint64_t)st.st_blocks * 512;
	}
	if (dp)
		closedir(dp);
	return used;
}

uint64_t quota_layer_bytes(struct daemon *d, struct sandbox *sb)
{
	char upper[700];
	const struct driver_slot *dv = sandbox_driver(d, sb);
	driver_layer(dv, sb, upper, sizeof(upper));
	return layer_used(upper, d->cfg.state_dir);
}

int quota_space(struct daemon *d, struct sandbox *sb, int copies, struct err *e)
{
	uint64_t avail = 0;
	int rc = quota_free(d->cfg.state_dir, &avail, e);
	if (rc < 0)
		return rc;
	uint64_t image = quota_image_bytes(d, sb);
	uint64_t used = quota_layer_bytes(d, sb);
	uint64_t need = image + used * (uint64_t)(1 + copies) + d->cfg.reserve_bytes;
	if (avail < need)
		return err_set(e, ERR_NO_SPACE, ENOSPC,
			       "the host has %.1f MiB free for sandbox %s's state; this needs about %.1f MiB", avail / MIB,
			       sb->id, need / MIB);
	return 0;
}

int quota_create(struct daemon *d, uint64_t layer, struct err *e)
{
	uint64_t avail = 0;
	int rc = quota_free(d->cfg.state_dir, &avail, e);
	if (rc < 0)
		return rc;
	uint64_t need = QUOTA_CREATE_BYTES + layer;
	if (avail < need)
		return err_set(e, ERR_NO_SPACE, ENOSPC,
			       "the host has %.1f MiB free for spaced's state; a new sandbox needs about %.1f MiB",
			       avail / MIB, need / MIB);
	return 0;
}

/* Adds the allocated bytes of everything below the directory open at fd; closes fd. */
static int dir_bytes(int fd, uint64_t *sum)
{
	DIR *dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return -errno;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(dp))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		*sum += (uint64_t)st.st_blocks * 512;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(dp), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			rc = sub < 0 ? -errno : dir_bytes(sub, sum);
		}
	}
	closedir(dp);
	return rc;
}

int quota_dir_bytes(const char *dir, uint64_t *out)
{
	*out = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : dir_bytes(fd, out);
}

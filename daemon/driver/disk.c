/*
 * daemon/driver/disk.c - per-sandbox disk images: blank images made once by
 * mkfs.ext4, sparse copies of them, and loop mounts done with the kernel's
 * loop-control interface (see disk.h).
 */
#include "daemon/driver/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/host/hash.h"
#include "lib/host/spawn.h"

#define LOOP_TRIES 64 /* another process on the host may take the free device first */

/* Creates in spaced would otherwise all be handed the same free device at once and lose to each
 * other round after round (20 at once ran out of tries): one attach at a time in this process. */
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;

/* Formats a blank image of size_mb at path, through a temporary name so a blank is whole or absent. */
static int make_blank(const char *path, int size_mb, struct err *e)
{
	char tmp[700], size[32], ratio[32];
	/* per thread: two creates may make the same blank at once; either result serves */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)gettid());
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "creating %s: %s", tmp, strerror(errno));
	int rc = ftruncate(fd, (off_t)size_mb << 20) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0) {
		unlink(tmp);
		return err_set(e, ERR_INTERNAL, -rc, "sizing %s: %s", tmp, strerror(-rc));
	}
	snprintf(size, sizeof(size), "%dM", size_mb);
	snprintf(ratio, sizeof(ratio), "%d", DISK_BYTES_PER_INODE);
	/* no blocks reserved for root (root in the sandbox is the user); the inode tables and
	 * journal of a fresh sparse file read as zeros, so nothing needs writing up front */
	char *mkfs[] = { "mkfs.ext4", "-q", "-F", "-m", "0", "-i", ratio, "-E",
			 "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0", tmp, size, NULL };
	if ((rc = spawn_run(mkfs, -1, -1)) != 0) {
		unlink(tmp);
		return err_set(e, ERR_INTERNAL, EIO, "mkfs.ext4 failed (status %d); is e2fsprogs installed?", rc);
	}
	if (rename(tmp, path) < 0) {
		rc = errno;
		unlink(tmp);
		return err_set(e, ERR_INTERNAL, rc, "renaming %s: %s", tmp, strerror(rc));
	}
	return 0;
}

/* Copies the data of `from` into the empty file `to`, leaving holes as holes. */
static int copy_sparse(int from, int to)
{
	struct stat st;
	if (fstat(from, &st) < 0 || ftruncate(to, st.st_size) < 0)
		return -errno;
	off_t pos = 0;
	for (;;) {
		off_t data = lseek(from, pos, SEEK_DATA);
		if (data < 0)
			return errno == ENXIO ? 0 : -errno; /* ENXIO: no data past pos */
		off_t hole = lseek(from, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		off_t in = data, out = data;
		while (in < hole) {
			ssize_t n = copy_file_range(from, &in, to, &out, (size_t)(hole - in), 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
		}
		pos = hole;
	}
}

int disk_create(const char *blank_dir, const char *image, int size_mb, struct err *e)
{
	char blank[700];
	mkdir(blank_dir, 0700);
	snprintf(blank, sizeof(blank), "%s/blank-%dM-%d.img", blank_dir, size_mb, DISK_BYTES_PER_INODE);
	int rc;
	if (access(blank, F_OK) < 0 && (rc = make_blank(blank, size_mb, e)) < 0)
		return rc;
	int from = open(blank, O_RDONLY | O_CLOEXEC);
	if (from < 0)
		return err_set(e, ERR_INTERNAL, errno, "opening %s: %s", blank, strerror(errno));
	int to = open(image, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (to < 0) {
		rc = errno;
		close(from);
		return err_set(e, ERR_INTERNAL, rc, "creating %s: %s", image, strerror(rc));
	}
	/* no fsync: a create is confirmed only once the sandbox runs, and a crash before that removes
	 * it; later, syncing the layer flushes the loop device, which fsyncs the image */
	rc = copy_sparse(from, to);
	close(from);
	close(to);
	if (rc < 0) {
		unlink(image);
		return err_set(e, ERR_INTERNAL, -rc, "copying %s: %s", blank, strerror(-rc));
	}
	return 0;
}

/* Binds the image open at fd to a free loop device; its fd, or -errno. */
static int loop_attach(int fd)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	int rc = -EBUSY;
	pthread_mutex_lock(&loop_lock);
	for (int i = 0; i < LOOP_TRIES && rc == -EBUSY; i++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			rc = -errno;
			break;
		}
		char dev[32];
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			rc = -errno;
			break;
		}
		struct loop_config cfg = { .fd = (uint32_t)fd };
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
			rc = lfd;
			break;
		}
		rc = -errno; /* EBUSY: taken meanwhile; try the next free one */
		close(lfd);
	}
	pthread_mutex_unlock(&loop_lock);
	close(ctl);
	return rc;
}

int disk_mount(const char *image, const char *dir, struct err *e)
{
	int fd = open(image, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "opening %s: %s", image, strerror(errno));
	int lfd = loop_attach(fd);
	close(fd);
	if (lfd < 0)
		return err_set(e, ERR_INTERNAL, -lfd, "no loop device for %s: %s", image, strerror(-lfd));
	char dev[64];
	snprintf(dev, sizeof(dev), "/proc/self/fd/%d", lfd);
	char real[64];
	ssize_t n = readlink(dev, real, sizeof(real) - 1);
	int rc = 0;
	if (n <= 0) {
		rc = err_set(e, ERR_INTERNAL, EIO, "cannot name the loop device of %s", image);
	} else {
		real[n] = '\0';
		if (mount(real, dir, "ext4", MS_NODEV | MS_NOSUID, "noinit_itable") < 0)
			rc = err_set(e, ERR_INTERNAL, errno, "mounting %s on %s: %s", image, dir, strerror(errno));
	}
	/* autoclear: the device lets go of the image once unmounted and closed (or now, if the
	 * mount failed) */
	close(lfd);
	return rc;
}

/* one look-and-mount at a time: two creates of sandboxes of one volume mount it once */
static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;

int disk_mount_once(const char *image, const char *dir, struct err *e)
{
	pthread_mutex_lock(&once_lock);
	int rc = disk_mounted(dir) ? 0 : disk_mount(image, dir, e);
	pthread_mutex_unlock(&once_lock);
	return rc;
}

void disk_volume_paths(const char *state_dir, const char *tenant, const char *name, char *dir, char *image, char *mnt,
		       size_t n)
{
	char owner[65] = "";
	hash_sha256_hex(tenant, strlen(tenant), owner);
	owner[DISK_VOLUME_OWNER_HEX] = '\0';
	if (dir)
		snprintf(dir, n, "%s/volumes/%s-%s", state_dir, owner, name);
	if (image)
		snprintf(image, n, "%s/volumes/%s-%s/disk.img", state_dir, owner, name);
	if (mnt)
		snprintf(mnt, n, "%s/volumes/%s-%s/mnt", state_dir, owner, name);
}

int disk_mounted(const char *dir)
{
	char parent[720];
	struct stat a, b;
	snprintf(parent, sizeof(parent), "%s/..", dir);
	if (stat(dir, &a) < 0 || stat(parent, &b) < 0)
		return 0;
	return a.st_dev != b.st_dev;
}

int disk_umount(const char *dir)
{
	if (!disk_mounted(dir))
		return 0;
	return umount2(dir, 0) < 0 ? -errno : 0;
}

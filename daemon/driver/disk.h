/*
 * daemon/driver/disk.h - a sandbox's writable layer as a filesystem of its own.
 *
 * Each sandbox's files live on an ext4 filesystem inside a sparse image file
 * of its size (disk_mb), loop-mounted on the host. Filling it gives ENOSPC
 * (bytes or inodes) inside the sandbox and never fills the host's disk
 * beyond the image's size. Images start as sparse copies of a formatted
 * blank of the same size, kept beside them, so a create costs a copy of a
 * few MiB of metadata, not a mkfs.
 *
 * All calls block (mkfs, copying, mounting): job threads only, without d->lock.
 */
#ifndef SPACE_DAEMON_DISK_H
#define SPACE_DAEMON_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "lib/host/err.h"

#define DISK_DEFAULT_MB 5120         /* a sandbox's disk unless it asks for another size */
#define DISK_MIN_MB 64               /* smaller and ext4's journal and tables crowd out files */
#define DISK_MAX_MB (256 * 1024)     /* sparse: only what is written takes host space */
#define DISK_BYTES_PER_INODE 16384   /* inodes: one per 16 KiB, so a 64 MiB disk holds 4096 files */

/*
 * Creates image (which must not exist) as a formatted, empty filesystem of
 * size_mb, copying the blank of that size from blank_dir (made there first if
 * missing). Returns 0 or -errno with *e filled.
 */
int disk_create(const char *blank_dir, const char *image, int size_mb, struct err *e);

/* Mounts image on dir (nodev, nosuid) through a loop device that goes away
 * when it is unmounted. Returns 0 or -errno with *e filled. */
int disk_mount(const char *image, const char *dir, struct err *e);

/* disk_mount unless something is mounted on dir already, the look and the mount one at a time
 * in this process: what two sandboxes of a volume (core/volume.h) share, mounted once. */
int disk_mount_once(const char *image, const char *dir, struct err *e);

/* The folder of tenant's volume name, <state_dir>/volumes/<owner>-<name> (owner: the first
 * DISK_VOLUME_OWNER_HEX hex digits of the sha256 of the tenant's name, which may hold any
 * byte: each tenant's volumes are a namespace of their own), with its image (disk.img) and the
 * mount point of that image on the host (mnt), each of n bytes; any may be NULL. */
#define DISK_VOLUME_OWNER_HEX 32
void disk_volume_paths(const char *state_dir, const char *tenant, const char *name, char *dir, char *image, char *mnt,
		       size_t n);

/* Whether something is mounted on dir (its device differs from its parent's). */
int disk_mounted(const char *dir);

/* Unmounts dir if mounted; its loop device is released. Returns 0 or -errno. */
int disk_umount(const char *dir);

#endif

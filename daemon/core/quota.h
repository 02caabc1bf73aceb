/*
 * daemon/core/quota.h - what a create, snapshot or fork may take before it
 * starts: the tenant's snapshot quotas (count and bytes) and the state dir's
 * free space.
 *
 * Every check answers before anything is written, so a refused request leaves
 * the sandboxes and the disk exactly as they were. Free space is what the
 * filesystem grants an unprivileged writer (f_bavail): the blocks it keeps for
 * root stay for state.db and the sandboxes' own disks.
 */
#ifndef SPACE_DAEMON_QUOTA_H
#define SPACE_DAEMON_QUOTA_H

#include <stdint.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

/* 0 if sb's tenant may keep another snapshot; else -EDQUOT with *e 429 too_many (it has
 * d->cfg.max_snapshots, or its snapshots take d->cfg.max_snapshot_bytes or more). The
 * administrator's own sandboxes (tenant "") have no quota. [L] */
int quota_snapshot(struct daemon *d, const struct sandbox *sb, struct err *e);

/* About what a memory image of sb takes: the memory it uses, at most its limit (the limit
 * when its use cannot be read). [L] (one cgroup file) */
uint64_t quota_image_bytes(struct daemon *d, struct sandbox *sb);

/* What sb's writable layer takes: its disk's used blocks where the host mounts that disk
 * (gVisor's), else the blocks its disk image takes on the state dir (a microVM's, whose guest
 * mounts it: what the guest wrote back). (statvfs or a few stats: quick) */
uint64_t quota_layer_bytes(struct daemon *d, struct sandbox *sb);

/* The bytes an unprivileged writer may still use on dir's filesystem, in *avail; or -errno
 * with *e set. (statvfs: quick) */
int quota_free(const char *dir, uint64_t *avail, struct err *e);

/* 0 if the state dir's filesystem can hold a snapshot of sb and `copies` copies of its
 * writable layer (a fork's), with d->cfg.reserve_bytes to spare; else -ENOSPC with *e 507
 * no_space. The estimate: the memory sb uses (its limit if unknown) for the image, and its
 * disk's used bytes per copy of the layer. [L] (statvfs and one cgroup file: quick) */
int quota_space(struct daemon *d, struct sandbox *sb, int copies, struct err *e);

/* What a new sandbox writes on the state dir's filesystem before it runs: its disk's metadata,
 * copied from the blank (3-7 MiB for 5 GiB to 256 GiB), its bundle, the runtime's state and
 * its records. */
#define QUOTA_CREATE_BYTES (16ull << 20)

/* 0 if the state dir's filesystem has QUOTA_CREATE_BYTES free, plus `layer` bytes (the
 * snapshot's, for a create from one); else -ENOSPC with *e 507 no_space. Checked before the
 * sandbox is recorded, so a refused create leaves nothing behind. [L] (statvfs: quick) */
int quota_create(struct daemon *d, uint64_t layer, struct err *e);

/* The bytes the files below dir take on disk (allocated blocks), into *out. Blocks. */
int quota_dir_bytes(const char *dir, uint64_t *out);

#endif

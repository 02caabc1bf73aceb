/*
 * daemon/core/quota.h - what a snapshot or fork may take before it starts: the
 * tenant's snapshot quotas (count and bytes) and the state dir's free space.
 *
 * Both checks answer before anything is written, so a refused request leaves
 * the sandbox and the disk exactly as they were.
 */
#ifndef SPACE_DAEMON_QUOTA_H
#define SPACE_DAEMON_QUOTA_H

#include <stdint.h>

#include "daemon/daemon.h"
#include "daemon/base/err.h"

/* 0 if sb's tenant may keep another snapshot; else -EDQUOT with *e 429 too_many (it has
 * d->max_snapshots, or its snapshots take d->max_snapshot_bytes or more). The
 * administrator's own sandboxes (tenant "") have no quota. [L] */
int quota_snapshot(struct daemon *d, const struct sandbox *sb, struct err *e);

/* About what a memory image of sb takes: the memory it uses, at most its limit (the limit
 * when its use cannot be read). [L] (one cgroup file) */
uint64_t quota_image_bytes(struct daemon *d, struct sandbox *sb);

/* 0 if the state dir's filesystem can hold a snapshot of sb and `copies` copies of its
 * writable layer (a fork's), with d->reserve_bytes to spare; else -ENOSPC with *e 507
 * no_space. The estimate: the memory sb uses (its limit if unknown) for the image, and its
 * disk's used bytes per copy of the layer. [L] (statvfs and one cgroup file: quick) */
int quota_space(struct daemon *d, struct sandbox *sb, int copies, struct err *e);

/* The bytes the files below dir take on disk (allocated blocks), into *out. Blocks. */
int quota_dir_bytes(const char *dir, uint64_t *out);

#endif

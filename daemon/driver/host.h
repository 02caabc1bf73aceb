/*
 * daemon/driver/host.h - what the host kernel holds below a directory: mount
 * points and loop devices, found by reading /proc/self/mountinfo and
 * /sys/block/loop*, and released one by one.
 *
 * The start-of-day sweep (core/sweep.c, through the driver's leftovers and
 * release) uses it to find what a spaced that stopped at the wrong moment
 * left behind. Paths are canonical (realpath): the kernel names them so.
 * Nothing here logs; every call returns 0 or a negative errno. It also holds the drivers'
 * shared weigh op (host_weigh).
 */
#ifndef SPACE_DAEMON_HOST_H
#define SPACE_DAEMON_HOST_H

#include <stddef.h>

/*
 * Calls each(mount point, ctx) for every mount point strictly below dir (not
 * dir itself), in the kernel's order (a mount before the ones on top of it).
 * Stops at, and returns, the first negative answer of each.
 */
int host_mounts_below(const char *dir, int (*each)(const char *mnt, void *ctx), void *ctx);

/*
 * Calls each(device, backing file, ctx) for every loop device bound to a file
 * strictly below dir ("/dev/loop3", "/x/disk.img"). A backing file that was
 * deleted is still named, without the kernel's " (deleted)".
 */
int host_loops_below(const char *dir, int (*each)(const char *dev, const char *file, void *ctx), void *ctx);

/* Unmounts mnt; when it is busy, detaches it lazily (it goes once its last user does). */
int host_umount(const char *mnt);

/*
 * Detaches loop device dev if it is still bound to file (another may have
 * taken the device since it was listed: then -ESTALE and nothing is done).
 * A device still mounted is detached when its last user lets go.
 */
int host_loop_detach(const char *dev, const char *file);

/* Both drivers' weigh op (driver.h): writes sb->cpu_shares (0: the kernel's default, 1024) to
 * the cgroup v1 cpu.shares of sb's runtime, which both keep in cpu/space/<id>. 0 or -errno with
 * e filled. */
struct driver;
struct sandbox;
struct err;
int host_weigh(struct driver *drv, struct sandbox *sb, struct err *e);

#endif

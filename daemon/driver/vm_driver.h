/*
 * daemon/driver/vm_driver.h - the microVM driver's own state, shared by its files
 * (driver_vm.c: the driver's operations; vm_launch.c: starting QEMU). Not for
 * other modules: they reach the driver through struct driver_ops.
 */
#ifndef SPACE_DAEMON_DRIVER_VM_DRIVER_H
#define SPACE_DAEMON_DRIVER_VM_DRIVER_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "lib/host/err.h"
#include "daemon/daemon.h"
#include "daemon/driver/qmp.h"

#define VM_TB_MB 32               /* TCG's translation buffer; QEMU's default is 1 GiB on x86 */
#define VM_OVERHEAD_MB (VM_TB_MB + 160) /* QEMU beside guest RAM: its code, TCG's regions, buffers */

/* Listening sockets bound for a sandbox whose QEMU has not taken them yet. */
struct pending {
	char id[64];
	int agent_fd, qmp_fd;
	int hold;               /* the booted image it restores from, held (cache_hold), or -1 */
	struct pending *next;
};

/* A start of QEMU under way, holding the jail user it picked until QEMU runs as it. */
struct starting {
	uid_t uid;
	struct starting *next;
};

struct driver {
	struct daemon *d;
	char accel[8];          /* "kvm" or "tcg" */
	char runtime[160];      /* "QEMU 7.2.x, tcg" */
	char qemu[256];         /* QEMU's absolute path (its jail has no PATH search to make) */
	/* what new VMs boot, found (and fetched, built) at start: looking the kernel up in apt's
	 * lists costs a second, too much for every create; a kernel update in the archive is
	 * taken at the next start of spaced (VMs keep what their boot.json names) */
	char vmlinuz[800], initramfs[800];
	char cmdline[1024];     /* the kernel's, but for the guest's part (measured once: the TSC) */
	pthread_mutex_t lock;   /* pending, starting */
	struct pending *pending;
	struct starting *starting;
};

/* Binds sb's agent and monitor sockets afresh (replacing what a stopped QEMU left), keeping
 * them in drv->pending until a start gives them to QEMU. Returns 0 or -errno with e filled. */
int vm_bind_sockets(struct driver *drv, struct sandbox *sb, struct err *e);
/* Keeps fd (a cache_hold of the booted image sb's start restores from) with sb's pending
 * sockets, closed when a start has QEMU load the image; closed now if there are none. */
void vm_pending_hold(struct driver *drv, const char *id, int fd);
/* Closes the sockets bound for sb that no QEMU took (all of them with id NULL). */
void vm_drop_sockets(struct driver *drv, const char *id);

/*
 * Starts sb's QEMU, paused, from boot.json; with image_fd >= 0 it loads that migration
 * stream (-incoming) instead of booting; transient: see jail.h. Returns once QEMU's monitor
 * answers, in *q, with QEMU confined; the caller continues the VM. -errno with e filled.
 */
int vm_launch(struct driver *drv, struct sandbox *sb, int image_fd, bool transient, struct qmp *q, struct err *e);

/* A session with sb's QEMU monitor, in *q. */
int vm_monitor(struct sandbox *sb, struct qmp *q, struct err *e);

#endif

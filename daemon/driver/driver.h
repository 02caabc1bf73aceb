/*
 * daemon/driver/driver.h - what an isolation driver provides.
 *
 * A driver turns a sandbox record into a running isolated environment whose
 * PID 1 is space-agent, connected to <sandbox dir>/sock/agent.sock. Drivers
 * are listed in one table (driver_find). Every operation returns 0 or a
 * negative errno and fills *e for the user; none takes d->lock, and all of
 * them may be slow, so they run on job threads only.
 *
 * Order: create, start, then any of pause/resume/checkpoint/restore/stats,
 * and destroy last. destroy is idempotent and tolerates any half-done state,
 * which is what reconciliation after a crash relies on.
 */
#ifndef SPACE_DAEMON_DRIVER_H
#define SPACE_DAEMON_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

enum driver_state {
	DRV_ABSENT,   /* nothing of the sandbox runs */
	DRV_RUNNING,
	DRV_PAUSED,
	DRV_STOPPED,  /* exists in the runtime but no longer runs */
};

/* What a running sandbox costs the host, as the host counts it (0: not known). */
struct driver_stats {
	uint64_t memory_bytes;  /* its memory: a gVisor sandbox's cgroup, a microVM's QEMU (PSS) */
	uint64_t cache_bytes;   /* of it, the page cache of files (0 where the host cannot tell) */
	uint64_t cpu_ns;        /* CPU time its processes used since they started */
	uint32_t pids;
};

/* What a runtime can leave on the host when spaced stops at the wrong moment: listed by
 * leftovers, released by release (the sweep at start, core/sweep.c). */
enum driver_left {
	DRV_LEFT_CONTAINER, /* the runtime's container (its processes, cgroups, state) */
	DRV_LEFT_MOUNT,     /* a mount point inside a sandbox dir (root overlay, disk, ...) */
	DRV_LEFT_LOOP,      /* a loop device bound to an image file under the state dir */
};

struct driver_leftover {
	enum driver_left kind;
	char owner[64];     /* the id of the sandbox it belongs to, "" when it is no sandbox's */
	char name[600];     /* the container's id, the mount point, or the loop device */
	char file[600];     /* DRV_LEFT_LOOP: the image file behind it */
};

struct driver;

#define DRIVER_RESTORED 1

struct driver_ops {
	const char *name;
	/* NULL: spaced listens at <sandbox dir>/sock/agent.sock and the agent connects. Else the
	 * agent's socket is <sandbox dir>/<agent_dial>, which the runtime listens on (QEMU, for a
	 * microVM's virtio-serial port): spaced connects and opens each connection with H_OPEN. */
	const char *agent_dial;
	/* How long a start or restore may take to its agent's hello, ms; 0: AGENT_HELLO_TIMEOUT_MS.
	 * A guest kernel's boot under TCG, many at once on two cores, takes longer than runsc. */
	int hello_timeout_ms;
	/* Whether a checkpoint keeps the TCP connections open over the sandbox's network (a
	 * microVM's kernel does); false: it refuses while one is open, and the sandbox does not
	 * survive the refusal (runsc 20221219), so the lifecycle lets them end first. */
	bool keeps_connections;
	/* Checks the host can run this driver; allocates *out. */
	int (*init)(struct daemon *d, struct driver **out, struct err *e);
	void (*fini)(struct driver *drv);
	/* Prepares the sandbox's disk, its root filesystem (template + writable layer, which starts
	 * as a copy of the directory seed when seed is not NULL) and the runtime config. */
	int (*create)(struct driver *drv, struct sandbox *sb, const char *template_rootfs, const char *seed,
		      struct err *e);
	/* Makes the host side ready for the agent of a sandbox that does not run (before a
	 * restore): mounts what a host restart unmounted and gives its socket folder a fresh, empty tmpfs, so
	 * nothing the sandbox left there stands in the way. Call before listening. */
	int (*prepare)(struct driver *drv, struct sandbox *sb, struct err *e);
	/* Boots the sandbox; returns once its PID 1 (the agent) has been started: 0, or
	 * DRIVER_RESTORED when it was restored from an image of an agent that waits to be told
	 * the sandbox's identity (H_IDENTITY, as after a fork: a microVM from its template's
	 * booted image), or -errno. */
	int (*start)(struct driver *drv, struct sandbox *sb, struct err *e);
	int (*pause)(struct driver *drv, struct sandbox *sb, struct err *e);
	int (*resume)(struct driver *drv, struct sandbox *sb, struct err *e);
	/* Writes memory and execution state into dir (which exists and is empty). With
	 * leave_running the sandbox runs on after; otherwise it is stopped. */
	int (*checkpoint)(struct driver *drv, struct sandbox *sb, const char *dir, int leave_running,
			  struct err *e);
	/* Starts the sandbox from the image in dir (its root filesystem is remounted if needed). */
	int (*restore)(struct driver *drv, struct sandbox *sb, const char *dir, struct err *e);
	/* Gives a sandbox restored from another one's image (a fork, a create from a snapshot)
	 * its own name: the host name inside, /etc/hostname and /etc/hosts. NULL: its agent does
	 * (H_IDENTITY, once it said hello), as a microVM's may. */
	int (*rename)(struct driver *drv, struct sandbox *sb, struct err *e);
	/* Continues the sandbox's PID 1 (the agent) if something inside stopped it. -ENOSPC (*e
	 * 507 no_space): it waits for room on the host's disk and cannot be continued yet; the
	 * sandbox is whole, and is not taken for hung. */
	int (*wake)(struct driver *drv, struct sandbox *sb, struct err *e);
	/* The state of the sandbox's PID 1 as the kernel underneath sees it (the letter of
	 * /proc/1/status: 'T' or 't' when stopped), read from the host side, not through the
	 * agent's channel. Returns 0 or -errno. */
	int (*pid1_state)(struct driver *drv, struct sandbox *sb, char *state);
	/* Releases every process and runtime resource of the sandbox, keeping its files. */
	int (*stop)(struct driver *drv, struct sandbox *sb, struct err *e);
	/* Kills every process and removes mounts, runtime state and the sandbox dir. */
	int (*destroy)(struct driver *drv, struct sandbox *sb, struct err *e);
	enum driver_state (*state)(struct driver *drv, struct sandbox *sb);
	int (*stats)(struct driver *drv, struct sandbox *sb, struct driver_stats *out);
	/* Gives the running sandbox's runtime the CPU share sb->cpu_shares asks (0: the default),
	 * as its start did. Returns 0 or -errno with *e filled. */
	int (*weigh)(struct driver *drv, struct sandbox *sb, struct err *e);
	/* The host directory holding the sandbox's writable layer (its files over the template). */
	void (*layer)(struct driver *drv, struct sandbox *sb, char *out, size_t n);
	/* Why a sandbox that stopped on its own stopped: "oom", "pids" or "exited", into buf.
	 * Call before stop (which removes what it reads). */
	void (*exit_reason)(struct driver *drv, struct sandbox *sb, char *buf, size_t n);
	/* Everything of the runtime's under the state dir, owned or not, in the order to release
	 * it: containers, then mounts (a mount after the ones on top of it), then loop devices.
	 * *out is malloc'd (free it), *n its length. Returns 0 or -errno. */
	int (*leftovers)(struct driver *drv, struct driver_leftover **out, size_t *n);
	/* Releases one leftover: the container deleted with its processes, the mount unmounted
	 * (lazily if busy), the loop device detached. Returns 0 or -errno with *e filled. */
	int (*release)(struct driver *drv, const struct driver_leftover *l, struct err *e);
	/* The runtime underneath, for /v1/version ("runsc 0.0~20221219.0"). */
	const char *(*runtime)(struct driver *drv);
};

/* The hello deadline of ops's sandboxes, ms. */
static inline int driver_hello_ms(const struct driver_ops *ops)
{
	return ops && ops->hello_timeout_ms ? ops->hello_timeout_ms : AGENT_HELLO_TIMEOUT_MS;
}

/* The driver called name (an isolation kind: "gvisor", "microvm"), or NULL. */
const struct driver_ops *driver_find(const char *name);

/*
 * The door to a driver: each call of struct driver_ops's, on the kind dv (an entry of
 * d->drivers, core/isolation.h), made through driver_<call>(dv, ...) and never directly, so
 * that it is counted (space_driver_calls_total, _call_failures_total and _call_seconds_total on
 * GET /metrics, by isolation and call) and, when it takes DRIVER_SLOW_MS or more, logged. The
 * arguments and results are the calls' own (above). An optional call a driver lacks: rename
 * and weigh do nothing and return 0, stats and pid1_state return -ENOTSUP.
 */
#define DRIVER_SLOW_MS 10000 /* a driver call this long is logged */
/* An image (a suspend's, a snapshot's, a fork's) says what it is in IMAGE_FORMAT_FILE, "space-image
 * <IMAGE_FORMAT> <kind>", written by driver_checkpoint before the driver writes anything;
 * driver_restore refuses (ERR_CONFLICT, -ENOEXEC) an image without it or with another. Bump
 * IMAGE_FORMAT when a spaced can no longer restore what the one before wrote. */
#define IMAGE_FORMAT 1
#define IMAGE_FORMAT_FILE "space-image-format"
struct buf;
int driver_create(const struct driver_slot *dv, struct sandbox *sb, const char *rootfs, const char *seed,
		  struct err *e);
int driver_prepare(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_start(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_pause(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_resume(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_checkpoint(const struct driver_slot *dv, struct sandbox *sb, const char *dir, bool leave_running,
		      struct err *e);
int driver_restore(const struct driver_slot *dv, struct sandbox *sb, const char *dir, struct err *e);
int driver_rename(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_wake(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_pid1_state(const struct driver_slot *dv, struct sandbox *sb, char *state);
int driver_stop(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
int driver_destroy(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
enum driver_state driver_state(const struct driver_slot *dv, struct sandbox *sb);
int driver_stats(const struct driver_slot *dv, struct sandbox *sb, struct driver_stats *out);
int driver_weigh(const struct driver_slot *dv, struct sandbox *sb, struct err *e);
void driver_layer(const struct driver_slot *dv, struct sandbox *sb, char *out, size_t n);
void driver_exit_reason(const struct driver_slot *dv, struct sandbox *sb, char *buf, size_t n);
int driver_leftovers(const struct driver_slot *dv, struct driver_leftover **out, size_t *n);
int driver_release(const struct driver_slot *dv, const struct driver_leftover *l, struct err *e);
const char *driver_runtime(const struct driver_slot *dv);
/* The counts above, for GET /metrics. Returns 0 or -ENOMEM. */
int driver_write_metrics(const struct daemon *d, struct buf *b);

extern const struct driver_ops driver_gvisor;
extern const struct driver_ops driver_vm;

#endif

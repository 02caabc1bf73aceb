/*
 * daemon/driver/driver_vm.c - sandboxes as microVMs: QEMU's microvm machine
 * booting Debian's cloud kernel and our initramfs, whose /init is space-agent
 * (the guest: vm_guest.h, docs/microvm.md).
 *
 * Layout of a sandbox dir:
 *
 *   upper/disk.img     the sandbox's disk (an ext4 image of its disk_mb), the guest's
 *                      writable layer: the one thing a snapshot copies (as upper/)
 *   vm/boot.json       what the VM boots from (kernel, initramfs, template image, command
 *                      line), fixed at create: a restore must load the kernel its image holds
 *   vm/agent.sock      the guest's agent port; QEMU listens, spaced connects (chan_dial)
 *   vm/qmp.sock        QEMU's monitor
 *   vm/qemu.pid        QEMU's pid, written by spaced; with /proc/<pid>/cmdline naming this
 *                      sandbox (-name), it is how a restarted spaced finds its VMs again
 *   vm/console.log     the guest's serial console: the reason for a panic
 *   vm/qemu.log        QEMU's own messages (both kept within VM_LOG_MAX by a log keeper,
 *                      vm_log.h, with console.log.1, qemu.log.1 and log.lock)
 *   vm/held            present while spaced itself keeps the VM stopped (vm_set_held)
 *   checkpoint/memory  a suspended VM's memory and device state (QEMU's migration stream)
 *
 * QEMU is started by vm_launch.c, in a jail (jail.h: a user of its own, its own namespaces,
 * a root holding /usr and little else) with the files it needs as descriptors; it outlives
 * spaced, and spaced (a child subreaper) reaps it.
 *
 * The VM is started paused (-S), put into its cgroup, then continued, so no guest
 * instruction runs outside its limits.
 */
#include "daemon/driver/driver.h"
#include "daemon/driver/vm_driver.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "lib/host/hash.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/driver/disk.h"
#include "daemon/driver/host.h"
#include "daemon/driver/jail.h"
#include "daemon/driver/oci.h"
#include "daemon/driver/qmp.h"
#include "daemon/driver/vm_boot.h"
#include "daemon/driver/vm_log.h"
#include "daemon/driver/vm_proc.h"
#include "daemon/driver/vm_guest.h"
#include "daemon/net/net.h"
#include "lib/host/cache.h"

#define VM_MIGRATE_POLL_MS 5 /* a query-status costs QEMU ~0.1 ms; a restore ends ~12 ms sooner than at 20 */
#define VM_MIGRATE_MS_PER_MIB 200 /* a bound on a migration: far above the ~4 ms/MiB measured */
#define VM_BOOTED_RECIPE 3        /* changes when what goes into a booted image does */
#define VM_BOOTED_KEY 32          /* hex characters of its key in its name: the sockets of its
                                     build live under it, and a socket's path is short */


/* ---- init ---- */

static int vm_init(struct daemon *d, struct driver **out, struct err *e)
{
	char version[256] = "";
	char *argv[] = { QEMU, "--version", NULL };
	if (spawn_capture(argv, version, sizeof(version)) != 0)
		return err_set(e, ERR_UNAVAILABLE, ENOENT, "%s is not installed (apt-get install qemu-system-x86)",
			       QEMU);
	struct driver *drv = calloc(1, sizeof(*drv));
	if (!drv)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	drv->d = d;
	pthread_mutex_init(&drv->lock, NULL);
	vm_find_in_path(QEMU, drv->qemu, sizeof(drv->qemu));
	int rc = vm_pick_accel(d->cfg.vm_accel, drv->accel);
	if (rc < 0) {
		free(drv);
		return err_set(e, ERR_INVALID, -rc, rc == -EINVAL ? "--accel takes auto, kvm or tcg, not %s"
			       : "--accel %s: /dev/kvm does not open here", d->cfg.vm_accel);
	}
	/* "QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7+deb12u18)" -> "QEMU 7.2.19" */
	char *v = strstr(version, "version ");
	int vlen = v ? (int)strcspn(v + 8, " \n") : 0;
	snprintf(drv->runtime, sizeof(drv->runtime), "QEMU %.*s, %s", vlen, v ? v + 8 : "?", drv->accel);
	/* the guest's kernel and initramfs now, once, so the first create does not wait for them */
	struct vm_kernel k;
	struct vm_initramfs ird;
	if ((rc = vm_guest_kernel(d->cfg.cache_dir, true, &k, e)) < 0 ||
	    (rc = vm_guest_initramfs(d->cfg.cache_dir, &k, d->cfg.agent_path, &ird, e)) < 0) {
		free(drv);
		return rc;
	}
	if (vm_guest_cmdline(d->cfg.cache_dir, strcmp(drv->accel, "tcg") == 0, drv->cmdline, sizeof(drv->cmdline)) < 0) {
		free(drv);
		return err_set(e, ERR_INTERNAL, ENOSPC, "the kernel command line is too long");
	}
	snprintf(drv->vmlinuz, sizeof(drv->vmlinuz), "%s", k.vmlinuz);
	snprintf(drv->initramfs, sizeof(drv->initramfs), "%s", ird.path);
	log_info("microVM guest: kernel %s (%s)%s, initramfs %s (%llu KiB)%s", k.release, k.version,
		 k.fetched ? ", fetched now" : "", ird.path, (unsigned long long)ird.bytes / 1024,
		 ird.built ? ", built now" : "");
	*out = drv;
	return 0;
}

static void vm_fini(struct driver *drv)
{
	vm_drop_sockets(drv, NULL);
	pthread_mutex_destroy(&drv->lock);
	free(drv);
}

/* ---- create ---- */

static int booted_image(struct driver *drv, const struct sandbox *sb, struct boot *b, int *hold, struct err *e);

/* The disk at img as a copy of from (a snapshot's or a booted image's disk.img). */
static int copy_disk(const char *from, const char *img, struct err *e)
{
	char *cp[] = { "cp", "--reflink=auto", "--sparse=always", (char *)from, (char *)img, NULL };
	if (access(from, F_OK) < 0)
		return err_set(e, ERR_INVALID, ENOENT, "%s: no disk image to copy", from);
	if (spawn_run(cp, -1, -1) != 0)
		return err_set(e, ERR_NO_SPACE, ENOSPC, "cannot copy %s for the new sandbox", from);
	return 0;
}

static int vm_create(struct driver *drv, struct sandbox *sb, const char *template_rootfs, const char *seed,
		     struct err *e)
{
	char upper[700], img[720], parent[600], blanks[600];
	snprintf(parent, sizeof(parent), "%s/sandboxes", drv->d->cfg.state_dir);
	mkdir(parent, 0700);
	snprintf(blanks, sizeof(blanks), "%s/disks", drv->d->cfg.state_dir);
	vm_path(upper, sizeof(upper), sb, "upper");
	snprintf(img, sizeof(img), "%s/disk.img", upper);
	const char *dirs[] = { sb->conf.dir, upper };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i], 0700) < 0 && errno != EEXIST)
			return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", dirs[i], strerror(errno));
	struct boot b;
	bool built = false;
	uint64_t build_ms = 0;
	int rc = vm_guest_template_image(drv->d->cfg.cache_dir, template_rootfs, b.image, sizeof(b.image), &built,
					 &build_ms, e);
	if (rc < 0)
		return rc;
	if (built)
		log_info("template image %s built in %llu ms", b.image, (unsigned long long)build_ms);
	snprintf(b.kernel, sizeof(b.kernel), "%s", drv->vmlinuz);
	snprintf(b.initramfs, sizeof(b.initramfs), "%s", drv->initramfs);
	b.booted[0] = '\0';
	b.net = sb->network != NULL;
	/* the guest's name comes to its init as an argument after the command line's "--" */
	if (snprintf(b.cmdline, sizeof(b.cmdline), "%s " SP_VM_NAME_ARG "%s", drv->cmdline, sb->id) >=
	    (int)sizeof(b.cmdline))
		return err_set(e, ERR_INTERNAL, ENOSPC, "the kernel command line is too long");
	/* booted images are made for the sizes most sandboxes have, so that the cache holds one a
	 * template rather than one for every size ever asked for; other sizes boot */
	bool usual = sb->conf.memory_mb == DEFAULT_MEMORY_MB && sb->conf.cpus == DEFAULT_CPUS && sb->conf.disk_mb == DISK_DEFAULT_MB;
	struct err warm = { 0 };
	char from[720];
	int hold = -1;
	if (seed) {
		/* a snapshot of a VM holds its disk, as it was when its memory was written */
		snprintf(from, sizeof(from), "%s/disk.img", seed);
		rc = copy_disk(from, img, e);
	} else if (usual && booted_image(drv, sb, &b, &hold, &warm) == 0) {
		/* its template's booted guest, with a copy of the disk it had when its memory was
		 * written; it takes its name from the host (H_IDENTITY), as a fork does */
		snprintf(from, sizeof(from), "%s/disk.img", b.booted);
		snprintf(b.cmdline, sizeof(b.cmdline), "%s", drv->cmdline);
		rc = copy_disk(from, img, e);
	} else {
		if (usual)
			log_warn("sandbox %s boots: no booted image of its template (%s)", sb->id, warm.msg);
		rc = disk_create(blanks, img, sb->conf.disk_mb, e);
	}
	if (rc < 0 || (rc = vm_bind_sockets(drv, sb, e)) < 0 || (rc = vm_write_env(sb, e)) < 0) {
		if (hold >= 0)
			close(hold);
		return rc;
	}
	if (hold >= 0)
		vm_pending_hold(drv, sb->id, hold); /* until the start has QEMU load it */
	return vm_write_boot(sb, &b, e);
}

static int vm_prepare(struct driver *drv, struct sandbox *sb, struct err *e)
{
	return vm_bind_sockets(drv, sb, e);
}

/* One monitor command in a session of its own. */
static int command(struct sandbox *sb, const char *cmd, json_t **ret, struct err *e)
{
	struct qmp q;
	int rc = vm_monitor(sb, &q, e);
	if (rc < 0)
		return rc;
	rc = qmp_call(&q, cmd, NULL, -1, ret, e);
	qmp_close(&q);
	return rc;
}

/* Boots sb's VM from boot.json. A transient one (a booted image's build) dies with the
 * thread that started it, so a spaced that dies mid-build leaves no guest behind. */
static int boot_vm(struct driver *drv, struct sandbox *sb, bool transient, struct err *e)
{
	struct qmp q;
	int rc = vm_launch(drv, sb, -1, transient, &q, e);
	if (rc == 0) {
		rc = qmp_call(&q, "cont", NULL, -1, NULL, e);
		qmp_close(&q);
	}
	if (rc < 0) {
		struct err ignored = { 0 };
		vm_kill_qemu(sb, 0, &ignored);
	}
	return rc;
}

static int vm_restore(struct driver *drv, struct sandbox *sb, const char *dir, struct err *e);

static int vm_start(struct driver *drv, struct sandbox *sb, struct err *e)
{
	struct boot b;
	int rc = vm_read_boot(sb, &b, e);
	if (rc < 0)
		return rc;
	if (b.booted[0]) /* the template's booted image: up in the time of a restore */
		return (rc = vm_restore(drv, sb, b.booted, e)) < 0 ? rc : DRIVER_RESTORED;
	return boot_vm(drv, sb, false, e);
}

static int vm_pause(struct driver *drv, struct sandbox *sb, struct err *e)
{
	(void)drv;
	vm_set_held(sb, true);
	int rc = command(sb, "stop", NULL, e);
	if (rc < 0)
		vm_set_held(sb, false);
	return rc;
}

static int vm_resume(struct driver *drv, struct sandbox *sb, struct err *e)
{
	(void)drv;
	int rc = command(sb, "cont", NULL, e);
	if (rc == 0)
		vm_set_held(sb, false);
	return rc;
}

/* The VM's run state as QEMU names it ("running", "paused", "inmigrate", ...), into out. */
static int run_state(struct qmp *q, char *out, size_t n, struct err *e)
{
	json_t *r = NULL;
	int rc = qmp_call(q, "query-status", NULL, -1, &r, e);
	const char *st = json_string_value(json_object_get(r, "status"));
	if (rc == 0)
		snprintf(out, n, "%s", st ? st : "");
	json_decref(r);
	return rc;
}

/* The run state, asked in a monitor session of its own. */
static int status_of(struct sandbox *sb, char *out, size_t n, struct err *e)
{
	struct qmp q;
	int rc = vm_monitor(sb, &q, e);
	if (rc == 0) {
		rc = run_state(&q, out, n, e);
		qmp_close(&q);
	}
	return rc;
}

/* Waits for the migration QEMU is doing (out: query-migrate's status; in: the run state
 * leaving "inmigrate") to end, within a bound that grows with the guest's memory. */
static int wait_migration(struct sandbox *sb, struct qmp *q, bool incoming, struct err *e)
{
	int64_t deadline = mono_ms() + 10000 + (int64_t)sb->conf.memory_mb * VM_MIGRATE_MS_PER_MIB;
	for (;;) {
		char st[32] = "";
		json_t *r = NULL;
		int rc = incoming ? run_state(q, st, sizeof(st), e) : qmp_call(q, "query-migrate", NULL, -1, &r, e);
		if (!incoming) {
			const char *s = json_string_value(json_object_get(r, "status"));
			snprintf(st, sizeof(st), "%s", s ? s : "");
			if (rc == 0 && (strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0)) {
				const char *why = json_string_value(json_object_get(r, "error-desc"));
				rc = err_set(e, ERR_INTERNAL, EIO, "QEMU could not write sandbox %s's memory: %s", sb->id,
					     why ? why : st);
			}
			json_decref(r);
		}
		if (rc < 0)
			return rc;
		if (incoming ? strcmp(st, "inmigrate") != 0 : strcmp(st, "completed") == 0)
			return 0;
		if (mono_ms() > deadline)
			return err_set(e, ERR_INTERNAL, ETIMEDOUT, "sandbox %s: the migration did not end (%s)", sb->id, st);
		struct timespec ts = { 0, VM_MIGRATE_POLL_MS * 1000000L };
		nanosleep(&ts, NULL); /* QEMU's migration has no completion we could wait on but events */
	}
}

static int fsync_path(const char *p, int flags)
{
	int fd = open(p, flags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

static int vm_checkpoint(struct driver *drv, struct sandbox *sb, const char *dir, int leave_running,
			 struct err *e)
{
	(void)drv;
	char file[760], disk[720];
	snprintf(file, sizeof(file), "%s/memory", dir);
	vm_path(disk, sizeof(disk), sb, "upper/disk.img");
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "creating %s: %s", file, strerror(errno));
	struct qmp q;
	char was[32] = "";
	int rc = vm_monitor(sb, &q, e);
	if (rc == 0)
		rc = run_state(&q, was, sizeof(was), e);
	bool stopped = rc == 0 && strcmp(was, "running") == 0;
	if (stopped) {
		vm_set_held(sb, true);
		rc = qmp_call(&q, "stop", NULL, -1, NULL, e);
	}
	if (rc == 0)
		rc = qmp_call(&q, "getfd", json_pack("{s:s}", "fdname", "image"), fd, NULL, e);
	if (rc == 0)
		rc = qmp_call(&q, "migrate", json_pack("{s:s}", "uri", "fd:image"), -1, NULL, e);
	if (rc == 0)
		rc = wait_migration(sb, &q, false, e);
	/* the image, and the disk it goes with (QEMU flushed its writes as the migration ended) */
	if (rc == 0 && fsync(fd) < 0)
		rc = err_set(e, ERR_INTERNAL, errno, "fsync %s: %s", file, strerror(errno));
	close(fd);
	if (rc == 0 && (rc = fsync_path(disk, O_RDONLY)) < 0)
		err_set(e, ERR_INTERNAL, -rc, "fsync %s: %s", disk, strerror(-rc));
	if (rc == 0 && (rc = fsync_path(dir, O_RDONLY | O_DIRECTORY)) < 0)
		err_set(e, ERR_INTERNAL, -rc, "fsync %s: %s", dir, strerror(-rc));
	if (rc == 0 && leave_running && strcmp(was, "running") == 0)
		rc = qmp_call(&q, "cont", NULL, -1, NULL, e);
	else if (rc < 0 && strcmp(was, "running") == 0) {
		struct err ignored = { 0 };
		qmp_call(&q, "cont", NULL, -1, NULL, &ignored); /* it goes on as if nothing was asked */
	}
	if (q.fd >= 0)
		qmp_close(&q);
	if (rc == 0 && !leave_running)
		rc = vm_kill_qemu(sb, 0, e);
	if (stopped)
		vm_set_held(sb, false); /* running again, or its QEMU gone */
	return rc;
}

static int vm_restore(struct driver *drv, struct sandbox *sb, const char *dir, struct err *e)
{
	char file[760];
	snprintf(file, sizeof(file), "%s/memory", dir);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "opening %s: %s", file, strerror(errno));
	struct qmp q;
	int rc = vm_launch(drv, sb, fd, false, &q, e);
	close(fd);
	if (rc == 0)
		rc = wait_migration(sb, &q, true, e);
	if (rc == 0)
		rc = qmp_call(&q, "cont", NULL, -1, NULL, e);
	if (q.fd >= 0)
		qmp_close(&q);
	if (rc < 0) {
		char qlog[720], why[300];
		struct err ignored = { 0 };
		vm_kill_qemu(sb, 0, &ignored);
		vm_path(qlog, sizeof(qlog), sb, "vm");
		vm_log_settle(qlog);
		vm_path(qlog, sizeof(qlog), sb, "vm/qemu.log");
		vm_last_line_of(qlog, why, sizeof(why));
		if (why[0])
			log_warn("sandbox %s: restore failed; QEMU said: %s", sb->id, why);
	}
	return rc;
}

/* ---- a template's booted image ---- */

static int vm_stop(struct driver *drv, struct sandbox *sb, struct err *e);

struct booted_build {
	struct driver *drv;
	const struct sandbox *like; /* the sandbox whose sizes it is for */
	const struct boot *boot;    /* what it boots, with the waiting guest's command line */
	char id[SANDBOX_ID_LEN + 1]; /* the builder's: not hex, so never a sandbox's */
};

/*
 * Boots a guest in a folder of its own at tmp as a sandbox of the same sizes would boot, but
 * nameless and with no settings of a sandbox's, and once its agent said hello writes its
 * memory to tmp/memory the way a suspend does; QEMU ends. What the entry keeps is a
 * snapshot of that guest: tmp/memory and tmp/disk.img, the disk as the memory knows it.
 */
static int build_booted(const char *tmp, void *ctx, struct err *e)
{
	struct booted_build *bb = ctx;
	struct sandbox *w = calloc(1, sizeof(*w));
	if (!w)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	snprintf(w->id, sizeof(w->id), "%s", bb->id);
	snprintf(w->conf.dir, sizeof(w->conf.dir), "%s", tmp);
	w->conf.memory_mb = bb->like->conf.memory_mb;
	w->conf.cpus = bb->like->conf.cpus;
	w->conf.disk_mb = bb->like->conf.disk_mb;
	char upper[700], disk[720], kept[720], blanks[600], agent[720];
	vm_path(upper, sizeof(upper), w, "upper");
	snprintf(disk, sizeof(disk), "%s/disk.img", upper);
	vm_path(kept, sizeof(kept), w, "disk.img");
	snprintf(blanks, sizeof(blanks), "%s/disks", bb->drv->d->cfg.state_dir);
	vm_path(agent, sizeof(agent), w, "vm/agent.sock");
	/* a build cut short leaves its namespace mounted, which the cache's removal of the folder
	 * stops at */
	struct err left = { 0 };
	net_scratch(tmp, false, &left);
	rmdir(tmp);
	int rc = mkdir(tmp, 0700) < 0 || mkdir(upper, 0700) < 0
			 ? err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", upper, strerror(errno)) : 0;
	/* a guest with a network device is built beside a tap of its own that leads nowhere */
	if (rc == 0 && bb->boot->net)
		rc = net_scratch(tmp, true, e);
	if (rc == 0 && (rc = disk_create(blanks, disk, w->conf.disk_mb, e)) == 0 && (rc = vm_bind_sockets(bb->drv, w, e)) == 0 &&
	    (rc = vm_write_env(w, e)) == 0 && (rc = vm_write_boot(w, bb->boot, e)) == 0 &&
	    (rc = boot_vm(bb->drv, w, true, e)) == 0)
		rc = vm_agent_hello(agent, driver_vm.hello_timeout_ms, e);
	if (rc == 0)
		rc = vm_checkpoint(bb->drv, w, tmp, 0, e); /* the disk synced with the memory */
	struct err ignored = { 0 };
	vm_stop(bb->drv, w, &ignored);
	if (bb->boot->net)
		net_scratch(tmp, false, &ignored);
	if (rc == 0 && rename(disk, kept) < 0)
		rc = err_set(e, ERR_INTERNAL, errno, "rename %s: %s", disk, strerror(errno));
	static const char *const gone[] = { "upper/disk.img", "upper", "vm/agent.sock", "vm/qmp.sock", "vm/qemu.pid",
					    "vm/env" };
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		char p[720];
		vm_path(p, sizeof(p), w, gone[i]);
		if (rmdir(p) < 0 && errno == ENOTDIR)
			unlink(p);
	}
	free(w);
	return rc;
}

/*
 * The booted image of sb's template for sb's sizes, built once in the cache (booted/<key>,
 * keyed by everything the guest's memory depends on: QEMU, the accelerator, kernel,
 * initramfs, template image, command line, RAM, vCPUs, disk size). Writes its folder into
 * b->booted and a hold of it (cache.h: no prune removes it) into *hold, for the start that
 * restores from it to let go. Returns 0 or -errno with e filled (then the sandbox boots).
 */
static int booted_image(struct driver *drv, const struct sandbox *sb, struct boot *b, int *hold, struct err *e)
{
	struct boot wait = *b; /* a nameless guest: the name comes with each sandbox */
	snprintf(wait.cmdline, sizeof(wait.cmdline), "%s", drv->cmdline);
	char recipe[4096], key[65], parent[600];
	int len = snprintf(recipe, sizeof(recipe), "recipe=%d %s\n%s\n%s\n%s\n%s\nram=%d cpus=%d disk=%d net=%d",
			   VM_BOOTED_RECIPE, drv->runtime, wait.kernel, wait.initramfs, wait.image, wait.cmdline,
			   sb->conf.memory_mb, sb->conf.cpus, sb->conf.disk_mb, (int)wait.net);
	int rc = len > 0 && (size_t)len < sizeof(recipe) ? hash_sha256_hex(recipe, (size_t)len, key) : -ENOSPC;
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot compute the booted image's key");
	key[VM_BOOTED_KEY] = '\0';
	snprintf(parent, sizeof(parent), "%s/booted", drv->d->cfg.cache_dir);
	struct booted_build bb = { .drv = drv, .like = sb, .boot = &wait };
	snprintf(bb.id, sizeof(bb.id), "boot%.*s", SANDBOX_ID_LEN - 4, key);
	int64_t t0 = mono_ms();
	bool made = !cache_has(parent, key);
	if ((rc = cache_hold(parent, key, build_booted, &bb, e)) < 0)
		return rc;
	if (made)
		log_info("booted image %s/%s made in %lld ms", parent, key, (long long)(mono_ms() - t0));
	*hold = rc;
	snprintf(b->booted, sizeof(b->booted), "%s/%s", parent, key);
	return 0;
}

static int vm_wake(struct driver *drv, struct sandbox *sb, struct err *e)
{
	(void)drv;
	/* a guest's PID 1 is stopped only by its own kernel's rules (SIGSTOP cannot reach init);
	 * a VM that is paused is what QEMU can continue. One that a write of its disk stopped
	 * (werror=enospc: the host's file system refused QEMU a block) is continued once there
	 * is room again, and QEMU writes what was refused; until then it waits, whole. */
	char st[32] = "";
	struct qmp q;
	int rc = vm_monitor(sb, &q, e);
	if (rc == 0)
		rc = run_state(&q, st, sizeof(st), e);
	bool full = rc == 0 && strcmp(st, "io-error") == 0 && !vm_disk_has_room(sb);
	if (rc == 0 && vm_is_held(sb))
		; /* stopped by spaced itself (a pause, a checkpoint): not ours to continue */
	else if (full)
		rc = err_set(e, ERR_NO_SPACE, ENOSPC, "sandbox %s waits for room on the host's disk: its VM stopped on "
			     "a write the file system refused", sb->id);
	else if (rc == 0 && (strcmp(st, "paused") == 0 || strcmp(st, "io-error") == 0))
		rc = qmp_call(&q, "cont", NULL, -1, NULL, e);
	if (q.fd >= 0)
		qmp_close(&q);
	return rc;
}

static int vm_pid1_state(struct driver *drv, struct sandbox *sb, char *state)
{
	(void)drv;
	/* the whole guest as QEMU runs it: stopped ('T') when a write of its disk stopped it (the
	 * liveness check then continues it once there is room); a VM paused behind spaced's back
	 * is the unresponsive agent's business (vm_wake), so a pause of spaced's own never meets
	 * a look from here */
	char st[32] = "";
	struct err e = { 0 };
	int rc = status_of(sb, st, sizeof(st), &e);
	if (rc == 0)
		*state = strcmp(st, "io-error") == 0 && !vm_is_held(sb) ? 'T' : 'R';
	return rc;
}

static int vm_stop(struct driver *drv, struct sandbox *sb, struct err *e)
{
	vm_drop_sockets(drv, sb->id);
	int rc = vm_kill_qemu(sb, 0, e);
	if (rc == 0)
		vm_remove_cgroups(sb->id);
	return rc;
}

static int vm_destroy(struct driver *drv, struct sandbox *sb, struct err *e)
{
	int rc = vm_stop(drv, sb, e);
	if (rc < 0 || (rc = net_remove(drv->d, sb, e)) < 0)
		return rc;
	char *rm[] = { "rm", "-rf", "--one-file-system", sb->conf.dir, NULL };
	if (spawn_run(rm, -1, -1) != 0)
		return err_set(e, ERR_INTERNAL, EIO, "cannot remove %s", sb->conf.dir);
	return 0;
}

static enum driver_state vm_state(struct driver *drv, struct sandbox *sb)
{
	(void)drv;
	if (!vm_qemu_pid(sb))
		return DRV_ABSENT;
	char st[32] = "";
	struct err e = { 0 };
	if (status_of(sb, st, sizeof(st), &e) < 0)
		return DRV_STOPPED;
	if (strcmp(st, "running") == 0)
		return DRV_RUNNING;
	if (strcmp(st, "paused") == 0 || strcmp(st, "suspended") == 0 || strcmp(st, "prelaunch") == 0 ||
	    strcmp(st, "inmigrate") == 0 || strcmp(st, "postmigrate") == 0 || strcmp(st, "finish-migrate") == 0)
		return DRV_PAUSED;
	return DRV_STOPPED; /* shutdown, guest-panicked, internal-error, ... */
}

static int vm_stats(struct driver *drv, struct sandbox *sb, struct driver_stats *out)
{
	(void)drv;
	pid_t pid = vm_qemu_pid(sb);
	if (!pid)
		return -ESRCH;
	char p[64];
	memset(out, 0, sizeof(*out));
	/* what the VM costs the host: QEMU's proportional share of its pages */
	snprintf(p, sizeof(p), "/proc/%d/smaps_rollup", (int)pid);
	out->memory_bytes = vm_proc_field(p, "Pss:") * 1024;
	/* the CPU time of every thread of QEMU: utime and stime, the 14th and 15th fields of its
	 * stat, counted after the command's closing parenthesis */
	char stat[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, stat, sizeof(stat) - 1);
	if (fd >= 0)
		close(fd);
	char *end = n > 0 ? (stat[n] = '\0', strrchr(stat, ')')) : NULL;
	unsigned long long utime = 0, stime = 0;
	if (end && sscanf(end + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2)
		out->cpu_ns = (utime + stime) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
	return 0;
}

/* Why a VM that stopped on its own stopped: "panic: <the kernel's words>" from its console,
 * else "exited" (QEMU ended with no panic: killed from outside, or it failed; qemu.log says). */
static void vm_exit_reason(struct driver *drv, struct sandbox *sb, char *buf, size_t n)
{
	(void)drv;
	char p[720], line[300];
	static const char mark[] = "Kernel panic - not syncing: ";
	vm_path(p, sizeof(p), sb, "vm");
	vm_log_settle(p); /* the guest's last words reach its console log */
	vm_path(p, sizeof(p), sb, "vm/console.log");
	FILE *f = fopen(p, "re");
	char panic[300] = "";
	while (f && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, mark);
		if (at) {
			at += sizeof(mark) - 1;
			at[strcspn(at, "\r\n")] = '\0';
			snprintf(panic, sizeof(panic), "%s", at);
		}
	}
	if (f)
		fclose(f);
	if (panic[0])
		snprintf(buf, n, "panic: %s", panic);
	else
		snprintf(buf, n, "exited");
}

/* Every QEMU of a sandbox dir under the state dir: <sandboxes>/<id>/vm/qemu.pid. */
static int vm_leftovers(struct driver *drv, struct driver_leftover **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/sandboxes", drv->d->cfg.state_dir);
	DIR *dp = opendir(dir);
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	size_t cap = 0;
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(dp))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof((*out)->owner))
			continue;
		struct sandbox probe = { 0 };
		snprintf(probe.id, sizeof(probe.id), "%s", de->d_name);
		snprintf(probe.conf.dir, sizeof(probe.conf.dir), "%s/%s", dir, de->d_name);
		pid_t pid = vm_qemu_pid(&probe);
		if (!pid)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			struct driver_leftover *v = realloc(*out, cap * sizeof(**out));
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			*out = v;
		}
		struct driver_leftover *l = &(*out)[(*n)++];
		memset(l, 0, sizeof(*l));
		l->kind = DRV_LEFT_CONTAINER;
		snprintf(l->owner, sizeof(l->owner), "%s", de->d_name);
		snprintf(l->name, sizeof(l->name), "%s", probe.conf.dir);
	}
	closedir(dp);
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int vm_release(struct driver *drv, const struct driver_leftover *l, struct err *e)
{
	(void)drv;
	if (l->kind != DRV_LEFT_CONTAINER)
		return err_set(e, ERR_INTERNAL, EINVAL, "not a VM: %s", l->name);
	struct sandbox probe = { 0 };
	snprintf(probe.id, sizeof(probe.id), "%s", l->owner);
	snprintf(probe.conf.dir, sizeof(probe.conf.dir), "%s", l->name);
	int rc = vm_kill_qemu(&probe, 0, e);
	if (rc == 0)
		vm_remove_cgroups(l->owner);
	return rc;
}

static void vm_layer(struct driver *drv, struct sandbox *sb, char *out, size_t n)
{
	(void)drv;
	vm_path(out, n, sb, "upper");
}

static const char *vm_runtime(struct driver *drv)
{
	return drv->runtime;
}

const struct driver_ops driver_vm = {
	.name = "microvm",
	.agent_dial = "vm/agent.sock",
	.keeps_connections = true,
	.hello_timeout_ms = 180000, /* twenty guests booting at once under TCG on two cores: ~60 s */
	.init = vm_init,
	.fini = vm_fini,
	.create = vm_create,
	.prepare = vm_prepare,
	.start = vm_start,
	.pause = vm_pause,
	.resume = vm_resume,
	.checkpoint = vm_checkpoint,
	.restore = vm_restore,
	.wake = vm_wake,
	.pid1_state = vm_pid1_state,
	.layer = vm_layer,
	.stop = vm_stop,
	.destroy = vm_destroy,
	.state = vm_state,
	.stats = vm_stats,
	.weigh = host_weigh,
	.exit_reason = vm_exit_reason,
	.leftovers = vm_leftovers,
	.release = vm_release,
	.runtime = vm_runtime,
};

/*
 * daemon/driver/vm_launch.c - starting a sandbox's QEMU: the sockets it serves on, bound by
 * spaced beforehand; a jail user no other QEMU has; the log keeper of what it prints
 * (vm_log.h); the files it gets as descriptors; its command line; and, once it runs, its
 * cgroups and a first session with its monitor (vm_driver.h).
 *
 * The listening sockets are bound by spaced before QEMU exists (create, prepare) and handed
 * to it as descriptors, so spaced's connection waits in the backlog from the start and
 * nothing polls for a socket file; they are kept in drv->pending until a start gives them
 * away.
 */
#include "daemon/driver/vm_driver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/driver/jail.h"
#include "daemon/driver/vm_boot.h"
#include "daemon/driver/vm_guest.h"
#include "daemon/driver/vm_log.h"
#include "daemon/driver/vm_proc.h"
#include "daemon/net/net.h"
#include "proto/agent.h"

/* QEMU's descriptors (jail.h): the listening sockets, then the files open_files gives it
 * (VM_NFILES of them, in this order), then the image a restore loads */
#define FD_AGENT "3"
#define FD_QMP "4"
#define FD_KERNEL "5"
#define FD_INITRAMFS "6"
#define FD_TEMPLATE "7"
#define FD_DISK "8"
#define FD_DISK_RO "9" /* QEMU opens a disk read-only first: its fd set holds both modes */
#define FD_CONSOLE "10"
#define FD_ENV "11"
#define VM_NFILES 7
#define FD_INCOMING "12"

static void close_pending(struct pending *p)
{
	if (p->agent_fd >= 0)
		close(p->agent_fd);
	if (p->qmp_fd >= 0)
		close(p->qmp_fd);
	if (p->hold >= 0)
		close(p->hold);
	free(p);
}

/* Picks sb's jail user (jail_uid_pick) and holds it in me until release_uid; 0 if none is free. */
static uid_t hold_uid(struct driver *drv, struct sandbox *sb, struct starting *me)
{
	pthread_mutex_lock(&drv->lock);
	size_t n = 0;
	for (struct starting *s = drv->starting; s; s = s->next)
		n++;
	uid_t *held = calloc(n + 1, sizeof(*held));
	n = 0;
	for (struct starting *s = drv->starting; held && s; s = s->next)
		held[n++] = s->uid;
	me->uid = held ? jail_uid_pick(sb->id, held, n) : 0;
	if (me->uid) {
		me->next = drv->starting;
		drv->starting = me;
	}
	pthread_mutex_unlock(&drv->lock);
	free(held);
	return me->uid;
}

static void release_uid(struct driver *drv, struct starting *me)
{
	pthread_mutex_lock(&drv->lock);
	for (struct starting **s = &drv->starting; *s; s = &(*s)->next)
		if (*s == me) {
			*s = me->next;
			break;
		}
	pthread_mutex_unlock(&drv->lock);
}


/* Takes sb's pending sockets out of the table (NULL if none). */
static struct pending *take_pending(struct driver *drv, const char *id)
{
	pthread_mutex_lock(&drv->lock);
	struct pending **pp = &drv->pending, *p;
	while ((p = *pp) && strcmp(p->id, id) != 0)
		pp = &p->next;
	if (p)
		*pp = p->next;
	pthread_mutex_unlock(&drv->lock);
	return p;
}


static int listen_at(const char *p, struct err *e)
{
	struct sockaddr_un sa;
	int fd = vm_unix_socket(p, &sa, e);
	if (fd < 0)
		return fd;
	unlink(p);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int err = errno;
		close(fd);
		return err_set(e, ERR_INTERNAL, err, "listening on %s: %s", p, strerror(err));
	}
	return fd;
}

int vm_bind_sockets(struct driver *drv, struct sandbox *sb, struct err *e)
{
	char vmdir[700], agent[720], qmp[720];
	vm_path(vmdir, sizeof(vmdir), sb, "vm");
	if (mkdir(vmdir, 0700) < 0 && errno != EEXIST)
		return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", vmdir, strerror(errno));
	snprintf(agent, sizeof(agent), "%s/agent.sock", vmdir);
	snprintf(qmp, sizeof(qmp), "%s/qmp.sock", vmdir);
	struct pending *p = calloc(1, sizeof(*p));
	if (!p)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	snprintf(p->id, sizeof(p->id), "%s", sb->id);
	p->hold = -1;
	p->agent_fd = listen_at(agent, e);
	p->qmp_fd = p->agent_fd < 0 ? -1 : listen_at(qmp, e);
	if (p->qmp_fd < 0) {
		int rc = p->agent_fd < 0 ? p->agent_fd : p->qmp_fd;
		close_pending(p);
		return rc;
	}
	struct pending *old = take_pending(drv, sb->id);
	if (old)
		close_pending(old);
	pthread_mutex_lock(&drv->lock);
	p->next = drv->pending;
	drv->pending = p;
	pthread_mutex_unlock(&drv->lock);
	return 0;
}


/*
 * The files sb's QEMU uses, opened by spaced, in FD_KERNEL.. order. QEMU opens by name the
 * kernel, initramfs and environment (as /proc/self/fd/N, which checks the file's own mode):
 * the first two are shared artifacts of the cache, made readable to all (the cache's
 * folders stay spaced's alone); the environment, which may hold secrets, becomes the
 * sandbox's jail user's own. The disks and the console (console, the write end of its log
 * keeper's pipe: vm_log.h) it takes from fd sets.
 */
static int open_files(struct sandbox *sb, const struct boot *b, uid_t uid, int console, int *fds, struct err *e)
{
	char disk[720], env[720];
	vm_path(disk, sizeof(disk), sb, "upper/disk.img");
	vm_path(env, sizeof(env), sb, "vm/env");
	struct {
		const char *path;
		int flags;
		bool shared; /* readable to all */
		bool owned;  /* the jail user's own, 0400 */
	} f[VM_NFILES] = {
		{ b->kernel, O_RDONLY, true, false }, { b->initramfs, O_RDONLY, true, false },
		{ b->image, O_RDONLY, true, false }, { disk, O_RDWR, false, false }, { disk, O_RDONLY, false, false },
		{ NULL, 0, false, false }, { env, O_RDONLY, false, true },
	};
	for (int i = 0; i < VM_NFILES; i++)
		fds[i] = -1;
	for (int i = 0; i < VM_NFILES; i++) {
		struct stat st;
		fds[i] = f[i].path ? open(f[i].path, f[i].flags | O_CLOEXEC, 0600) : fcntl(console, F_DUPFD_CLOEXEC, 0);
		int rc = fds[i] < 0 || fstat(fds[i], &st) < 0 ? -errno : 0;
		if (rc == 0 && f[i].shared && (st.st_mode & 0444) != 0444 && fchmod(fds[i], st.st_mode | 0444) < 0)
			rc = -errno;
		if (rc == 0 && f[i].owned && (fchown(fds[i], uid, uid) < 0 || fchmod(fds[i], 0400) < 0))
			rc = -errno;
		if (rc < 0) {
			for (int k = 0; k <= i; k++)
				if (fds[k] >= 0)
					close(fds[k]);
			return err_set(e, ERR_INTERNAL, -rc, "opening %s for QEMU: %s", f[i].path ? f[i].path : "the console",
				       strerror(-rc));
		}
	}
	return 0;
}

int vm_monitor(struct sandbox *sb, struct qmp *q, struct err *e)
{
	char p[720];
	vm_path(p, sizeof(p), sb, "vm/qmp.sock");
	return qmp_open(q, p, e);
}

/* After QEMU failed as it started: its complaint, once it has exited (briefly waited for). */
static int failed_start(struct sandbox *sb, pid_t pid, int rc, struct err *e)
{
	char qlog[720], why[300], ours[sizeof(e->msg)];
	struct err ignored = { 0 };
	vm_kill_qemu(sb, pid, &ignored);
	vm_path(qlog, sizeof(qlog), sb, "vm");
	vm_log_settle(qlog); /* QEMU's last words reach its log */
	vm_path(qlog, sizeof(qlog), sb, "vm/qemu.log");
	vm_last_line_of(qlog, why, sizeof(why));
	if (!why[0])
		return rc; /* QEMU said nothing: e says what failed here */
	snprintf(ours, sizeof(ours), "%s", e->msg);
	e->kind = ERR_NONE;
	return err_set(e, ERR_INTERNAL, rc < 0 ? -rc : EIO, "QEMU failed to start: %s (%s)", why, ours);
}


/* What a start holds for QEMU until QEMU has its own copies. */
struct start {
	struct pending *p;
	int tap;
	int logs[VM_LOG_STREAMS], files[VM_NFILES];
	bool opened; /* logs and files */
	struct starting me;
	struct jail j;
};

static void start_release(struct driver *drv, struct start *s)
{
	release_uid(drv, &s->me);
	if (s->opened)
		for (int i = 0; i < VM_LOG_STREAMS + VM_NFILES; i++)
			close(i < VM_LOG_STREAMS ? s->logs[i] : s->files[i - VM_LOG_STREAMS]);
	if (s->tap >= 0)
		close(s->tap);
	if (s->p)
		close_pending(s->p);
	s->opened = false;
	s->tap = -1;
	s->p = NULL;
}

/* Gathers what QEMU is to get: the sockets, the tap, a jail user, the log keeper's pipes, the
 * files. The boot's kernel becomes its stub for a restore. */
static int start_open(struct driver *drv, struct sandbox *sb, struct boot *b, bool restore, struct start *s,
		      struct err *e)
{
	int rc = 0;
	s->p = take_pending(drv, sb->id);
	if (!s->p && (rc = vm_bind_sockets(drv, sb, e)) == 0)
		s->p = take_pending(drv, sb->id);
	if (!s->p)
		return rc < 0 ? rc : err_set(e, ERR_INTERNAL, EIO, "no sockets for sandbox %s", sb->id);
	/* a restore's guest has its kernel in its memory image: QEMU, which would hold the -kernel
	 * and -initrd files in its memory for as long as it runs, gets the kernel's stub and no
	 * initrd (vm_guest.h) */
	char stub[sizeof(b->kernel)];
	if (restore && (rc = vm_guest_kernel_stub(drv->d->cfg.cache_dir, b->kernel, stub, sizeof(stub), e)) < 0)
		return rc;
	if (restore)
		memcpy(b->kernel, stub, sizeof(stub));
	/* the tap behind its network device, in its edge namespace (made now if need be; a booted
	 * image's build made its own) */
	if (b->net && ((!s->j.transient && (rc = net_ensure(drv->d, sb, false, e)) < 0) ||
		       (rc = s->tap = net_tap_open(sb, e)) < 0))
		return rc;
	/* what QEMU prints goes to the sandbox's log keeper, which keeps a bounded part of it */
	char vmdir[720];
	vm_path(vmdir, sizeof(vmdir), sb, "vm");
	if ((s->j.uid = hold_uid(drv, sb, &s->me)) == 0)
		return err_set(e, ERR_UNAVAILABLE, EAGAIN, "no free jail user for sandbox %s: every one of the %u tried "
			       "runs a process", sb->id, JAIL_UID_PROBES + 1);
	pid_t keeper = vm_log_start(vmdir, s->logs);
	if (keeper < 0)
		return err_set(e, ERR_INTERNAL, (int)-keeper, "cannot start the log keeper of %s: %s", sb->id,
			       strerror((int)-keeper));
	if ((rc = open_files(sb, b, s->j.uid, s->logs[VM_LOG_CONSOLE], s->files, e)) < 0) {
		for (int i = 0; i < VM_LOG_STREAMS; i++)
			close(s->logs[i]);
		return rc;
	}
	s->opened = true;
	return 0;
}

/* QEMU's command line for s, into argv (QEMU_ARGV_MAX entries) and its descriptors, from 3 on,
 * into keep (JAIL_MAX_KEEP). netdev holds the network's option. Returns how many it keeps. */
#define QEMU_ARGV_MAX 80
static int qemu_argv(struct driver *drv, struct sandbox *sb, const struct boot *b, int image_fd, struct start *s,
		     char **argv, int *keep, char bufs[4][64])
{
	char *mem = bufs[0], *smp = bufs[1], *accel = bufs[2], *netdev = bufs[3];
	snprintf(mem, 64, "%d", sb->conf.memory_mb);
	snprintf(smp, 64, "%d", sb->conf.cpus);
	if (strcmp(drv->accel, "tcg") == 0)
		snprintf(accel, 64, "tcg,tb-size=%d", VM_TB_MB);
	else
		snprintf(accel, 64, "%s", drv->accel);
	/* QEMU, in its jail, reaches no host path: every file is one of its descriptors, named
	 * /proc/self/fd/N where it wants a file name, /dev/fdset/N where it opens for writing */
	char *fixed[] = {
		QEMU, "-name", sb->id, "-M", "microvm,pit=on,pic=on,rtc=on", "-cpu", "max", "-smp", smp, "-m", mem,
		"-accel", accel, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-S",
		"-kernel", "/proc/self/fd/" FD_KERNEL, "-append", (char *)b->cmdline,
		"-add-fd", "fd=" FD_TEMPLATE ",set=1", "-add-fd", "fd=" FD_DISK ",set=2",
		"-add-fd", "fd=" FD_DISK_RO ",set=2", "-add-fd", "fd=" FD_CONSOLE ",set=3",
		"-chardev", "file,id=console,path=/dev/fdset/3,append=on", "-serial", "chardev:console",
		"-chardev", "socket,id=agent,fd=" FD_AGENT ",server=on,wait=off",
		"-device", "virtio-serial-device", "-device", "virtserialport,chardev=agent,name=" SP_AGENT_PORT,
		"-chardev", "socket,id=qmp,fd=" FD_QMP ",server=on,wait=off", "-mon", "chardev=qmp,mode=control",
		"-device", "virtio-rng-device",
		"-device", "virtio-balloon-device,free-page-reporting=on",
		"-fw_cfg", "name=" SP_VM_ENV_NAME ",file=/proc/self/fd/" FD_ENV,
		"-drive", "file=/dev/fdset/1,format=raw,if=none,id=tpl,readonly=on",
		"-device", "virtio-blk-device,drive=tpl,serial=" SP_VM_TEMPLATE_SERIAL,
		"-drive", "file=/dev/fdset/2,format=raw,if=none,id=disk,file.locking=off",
		"-device", "virtio-blk-device,drive=disk,serial=" SP_VM_DISK_SERIAL,
		"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
	};
	int argc = 0, nkeep = 0;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[argc++] = fixed[i];
	keep[nkeep++] = s->p->agent_fd;
	keep[nkeep++] = s->p->qmp_fd;
	for (int i = 0; i < VM_NFILES; i++)
		keep[nkeep++] = s->files[i];
	if (image_fd < 0) {
		argv[argc++] = "-initrd";
		argv[argc++] = "/proc/self/fd/" FD_INITRAMFS;
	} else {
		argv[argc++] = "-incoming";
		argv[argc++] = "fd:" FD_INCOMING;
		keep[nkeep++] = image_fd;
	}
	if (s->tap >= 0) {
		snprintf(netdev, 64, "tap,id=net0,fd=%d,vhost=off", 3 + nkeep);
		keep[nkeep++] = s->tap;
		argv[argc++] = "-netdev";
		argv[argc++] = netdev;
		argv[argc++] = "-device";
		argv[argc++] = "virtio-net-device,netdev=net0,mac=" NET_GUEST_MAC;
	}
	argv[argc] = NULL;
	return nkeep;
}

int vm_launch(struct driver *drv, struct sandbox *sb, int image_fd, bool transient, struct qmp *q, struct err *e)
{
	q->fd = -1;
	q->buf = NULL;
	struct boot b;
	int rc = vm_read_boot(sb, &b, e);
	if (rc < 0)
		return rc;
	/* one QEMU at a time on a sandbox's disk: spaced's guarantee, in place of QEMU's own image
	 * locks (off: taken per descriptor, they refuse QEMU's own `cont` after a migration, as
	 * when spaced undoes a suspend it did not finish) */
	pid_t running = vm_qemu_pid(sb);
	if (running)
		return err_set(e, ERR_INTERNAL, EBUSY, "sandbox %s's QEMU (pid %d) still runs", sb->id, (int)running);
	vm_set_held(sb, false);
	struct start s = { .tap = -1, .j = { .kvm = strcmp(drv->accel, "kvm") == 0, .transient = transient } };
	if ((rc = start_open(drv, sb, &b, image_fd >= 0, &s, e)) < 0) {
		start_release(drv, &s);
		return rc;
	}
	char *argv[QEMU_ARGV_MAX], bufs[4][64];
	int keep[JAIL_MAX_KEEP];
	int nkeep = qemu_argv(drv, sb, &b, image_fd, &s, argv, keep, bufs);
	const char *step = "";
	pid_t pid = drv->qemu[0] ? jail_start(&s.j, drv->qemu, argv, keep, nkeep, s.logs[VM_LOG_QEMU],
					      s.logs[VM_LOG_QEMU], &step)
				 : -ENOENT;
	start_release(drv, &s); /* QEMU has its own copies; a monitor session waits in the backlog */
	if (pid < 0)
		return err_set(e, ERR_INTERNAL, (int)-pid, "cannot run %s (%s): %s", QEMU, step, strerror((int)-pid));
	if ((rc = vm_write_pid(sb, pid, e)) < 0)
		return failed_start(sb, pid, rc, e);
	/* confined while still setting up: its threads to come start in the cgroups */
	if ((rc = vm_confine(sb, VM_OVERHEAD_MB, pid, e)) < 0 || (rc = vm_monitor(sb, q, e)) < 0)
		return failed_start(sb, pid, rc, e);
	return 0;
}

void vm_pending_hold(struct driver *drv, const char *id, int fd)
{
	pthread_mutex_lock(&drv->lock);
	struct pending *p = drv->pending;
	while (p && strcmp(p->id, id) != 0)
		p = p->next;
	if (p && p->hold < 0)
		p->hold = fd, fd = -1;
	pthread_mutex_unlock(&drv->lock);
	if (fd >= 0)
		close(fd);
}

void vm_drop_sockets(struct driver *drv, const char *id)
{
	if (id) {
		struct pending *p = take_pending(drv, id);
		if (p)
			close_pending(p);
		return;
	}
	while (drv->pending) {
		struct pending *p = drv->pending;
		drv->pending = p->next;
		close_pending(p);
	}
}

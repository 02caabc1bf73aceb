/*
 * agent/vminit.c - the microVM init steps (see vminit.h).
 */
#include "vminit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "fwcfg.h"
#include "spawn.h"

struct vm_mount {
	const char *source, *target, *type;
	unsigned long flags;
};

static const struct vm_mount vm_mounts[] = {
	{ "devtmpfs", "/dev", "devtmpfs", MS_NOSUID },
	{ "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC },
	{ "sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC },
};

static int mount_all(void)
{
	int first = 0;
	for (size_t i = 0; i < sizeof(vm_mounts) / sizeof(vm_mounts[0]); i++) {
		const struct vm_mount *m = &vm_mounts[i];
		mkdir(m->target, 0755);
		if (mount(m->source, m->target, m->type, m->flags, NULL) < 0 && errno != EBUSY) {
			agent_log("mount %s on %s: %s", m->type, m->target, strerror(errno));
			if (!first)
				first = -errno;
		}
	}
	return first;
}

/* fds 0-2 on the console, if the kernel left any of them closed. */
static int console_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int c = open("/dev/console", O_RDWR | O_NOCTTY);
		if (c < 0)
			return -errno;
		if (c != fd) {
			dup2(c, fd);
			close(c);
		}
	}
	return 0;
}

/* The first line of a small file (sysfs), without its newline. */
static int read_line(const char *path, char *out, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = read(fd, out, n - 1);
	close(fd);
	if (r < 0)
		return -errno;
	out[r] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

static int load_one(const char *dir, const char *name)
{
	char path[512];
	if (snprintf(path, sizeof(path), "%s/%s.ko", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST ? -errno : 0;
	close(fd);
	return rc;
}

/* Removes the files of dir (one level; the initramfs's, which live in RAM). */
static void remove_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_type == DT_REG)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

int vminit_load_modules(const char *dir, const char *order)
{
	char list[VMINIT_ORDER_MAX + 1];
	int fd = open(order, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, list, sizeof(list));
	close(fd);
	if (n < 0)
		return -errno;
	if ((size_t)n > VMINIT_ORDER_MAX)
		return -EFBIG;
	list[n] = '\0';
	int loaded = 0;
	for (char *save = NULL, *name = strtok_r(list, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
		if (strchr(name, '/') || name[0] == '.')
			return -EINVAL;
		int rc = load_one(dir, name);
		if (rc < 0) {
			agent_log("load module %s: %s", name, strerror(-rc));
			return rc;
		}
		loaded++;
	}
	return loaded;
}

/* The block device whose virtio serial is `serial`, as a node of our own under
 * /.space (devtmpfs makes its node a moment after the disk appears; sysfs has it at
 * once). Writes the node's path into out. Returns 0, -ENOENT or -errno. */
static int disk_by_serial(const char *serial, char *out, size_t n)
{
	DIR *d = opendir("/sys/block");
	if (!d)
		return -errno;
	int rc = -ENOENT;
	struct dirent *de;
	while (rc == -ENOENT && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[300], got[64] = "", dev[32] = "";
		snprintf(path, sizeof(path), "/sys/block/%s/serial", de->d_name);
		if (read_line(path, got, sizeof(got)) < 0 || strcmp(got, serial) != 0)
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/dev", de->d_name);
		unsigned maj, min;
		if ((rc = read_line(path, dev, sizeof(dev))) < 0)
			break;
		if (sscanf(dev, "%u:%u", &maj, &min) != 2) {
			rc = -EINVAL;
			break;
		}
		snprintf(out, n, "/.space/%s", de->d_name);
		rc = mknod(out, S_IFBLK | 0600, makedev(maj, min)) < 0 && errno != EEXIST ? -errno : 0;
	}
	closedir(d);
	return rc;
}

static int mount_at(const char *src, const char *dir, const char *type, unsigned long flags, const char *opts)
{
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mount(src, dir, type, flags, opts) < 0) {
		int rc = -errno;
		agent_log("mount %s (%s) on %s: %s", src, type, dir, strerror(errno));
		return rc;
	}
	return 0;
}

/* Moves /dev, /proc and /sys into root, then root onto / (the initramfs is left under it). */
static int switch_root(const char *root)
{
	static const char *const keep[] = { "/dev", "/proc", "/sys" };
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		char to[300];
		snprintf(to, sizeof(to), "%s%s", root, keep[i]);
		mkdir(to, 0755);
		if (mount(keep[i], to, NULL, MS_MOVE, NULL) < 0)
			return -errno;
	}
	if (chdir(root) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

/* What programs expect beside /dev, /proc and /sys on a Debian machine: terminals, shared
 * memory, /run, and the /dev links to the process's own descriptors. */
static const struct { const char *src, *dir, *type, *opts; unsigned long flags; } system_fs[] = {
	{ "devpts", "/dev/pts", "devpts", "newinstance,ptmxmode=0666,mode=0620,gid=5", MS_NOSUID | MS_NOEXEC },
	{ "shm", "/dev/shm", "tmpfs", "mode=1777", MS_NOSUID | MS_NODEV },
	{ "mqueue", "/dev/mqueue", "mqueue", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC },
	{ "run", "/run", "tmpfs", "mode=0755,size=20%", MS_NOSUID | MS_NODEV },
};

static int system_mounts(void)
{
	int first = 0;
	for (size_t i = 0; i < sizeof(system_fs) / sizeof(system_fs[0]); i++) {
		int rc = mount_at(system_fs[i].src, system_fs[i].dir, system_fs[i].type, system_fs[i].flags,
				  system_fs[i].opts);
		if (rc < 0 && !first)
			first = rc;
	}
	static const char *const links[][2] = {
		{ "/proc/self/fd", "/dev/fd" }, { "/proc/self/fd/0", "/dev/stdin" },
		{ "/proc/self/fd/1", "/dev/stdout" }, { "/proc/self/fd/2", "/dev/stderr" },
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][0], links[i][1]) < 0 && errno != EEXIST && !first)
			first = -errno;
	return first;
}

int vminit_root(void)
{
	char tpl[64], disk[64];
	int rc = disk_by_serial(SP_VM_TEMPLATE_SERIAL, tpl, sizeof(tpl));
	if (rc < 0)
		return rc;
	if ((rc = disk_by_serial(SP_VM_DISK_SERIAL, disk, sizeof(disk))) < 0) {
		agent_log("the template's disk but none of the sandbox's: %s", strerror(-rc));
		return rc;
	}
	if ((rc = mount_at(tpl, "/.space/lower", "erofs", MS_RDONLY, NULL)) < 0 ||
	    (rc = mount_at(disk, "/.space/disk", "ext4", MS_NODEV, NULL)) < 0)
		return rc;
	/* the writable layer's root is the root users see: 0755; the work dir is overlay's own */
	if ((mkdir("/.space/disk/upper", 0755) < 0 && errno != EEXIST) ||
	    (mkdir("/.space/disk/work", 0700) < 0 && errno != EEXIST))
		return -errno;
	if ((rc = mount_at("overlay", "/.space/root", "overlay", 0,
			   "lowerdir=/.space/lower,upperdir=/.space/disk/upper,workdir=/.space/disk/work")) < 0)
		return rc;
	if ((rc = switch_root("/.space/root")) < 0) {
		agent_log("switching to the overlay root: %s", strerror(-rc));
		return rc;
	}
	return system_mounts();
}

/* The loopback interface up, as an init does on any Linux machine (its addresses, 127.0.0.1
 * and ::1, come with it); a VM has no other interface. */
int vminit_loopback(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	int rc = ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 ? -errno : 0;
	if (rc == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		rc = ioctl(fd, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
	}
	close(fd);
	return rc;
}

/* An IPv4 address in a struct sockaddr. */
static void inet_sa(struct sockaddr *sa, const char *addr)
{
	struct sockaddr_in *in = (struct sockaddr_in *)sa;
	memset(in, 0, sizeof(*in));
	in->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &in->sin_addr);
}

int vminit_network(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
	int rc = ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 ? (errno == ENODEV ? -ENODEV : -errno) : 0;
	short flags = ifr.ifr_flags;
	if (rc == 0) {
		int v6 = open("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", O_WRONLY | O_CLOEXEC);
		if (v6 >= 0) {
			ssize_t w = write(v6, "1", 1);
			(void)w;
			close(v6);
		}
		inet_sa(&ifr.ifr_addr, SP_NET_ADDR);
		rc = ioctl(fd, SIOCSIFADDR, &ifr) < 0 ? -errno : 0;
	}
	if (rc == 0) {
		inet_sa(&ifr.ifr_netmask, SP_NET_NETMASK);
		rc = ioctl(fd, SIOCSIFNETMASK, &ifr) < 0 ? -errno : 0;
	}
	if (rc == 0) {
		ifr.ifr_flags = flags | IFF_UP | IFF_RUNNING;
		rc = ioctl(fd, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
	}
	if (rc == 0) {
		struct rtentry rt;
		memset(&rt, 0, sizeof(rt));
		inet_sa(&rt.rt_dst, "0.0.0.0");
		inet_sa(&rt.rt_genmask, "0.0.0.0");
		inet_sa(&rt.rt_gateway, SP_NET_GATEWAY);
		rt.rt_flags = RTF_UP | RTF_GATEWAY;
		rt.rt_dev = "eth0";
		rc = ioctl(fd, SIOCADDRT, &rt) < 0 && errno != EEXIST ? -errno : 0;
	}
	close(fd);
	return rc;
}

#define VM_ENV_MAX (256 * 1024) /* the host writes the sandbox's env, bounded by its API */

int vminit_env(void)
{
	char *buf = malloc(VM_ENV_MAX + 1);
	if (!buf)
		return -ENOMEM;
	long n = fwcfg_read_file(SP_VM_ENV_NAME, buf, VM_ENV_MAX);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	buf[n] = '\0';
	for (char *kv = buf; kv < buf + n; kv += strlen(kv) + 1) {
		char *eq = strchr(kv, '=');
		if (!eq || eq == kv)
			continue;
		*eq = '\0';
		setenv(kv, eq + 1, 1);
	}
	free(buf);
	return 0;
}

void vminit_warm(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "/bin/true", (char *)NULL);
		_exit(127); /* a template without a shell: nothing to warm */
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* Writes text to dir/name; 0 or -errno. */
static int write_text(const char *dir, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int rc = n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return rc;
}

int vminit_cgroup(void)
{
	if (mkdir(VMINIT_CGROUP_ROOT, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* mounted once: a restored guest sets the limits again for its own settings */
	if (access(VMINIT_CGROUP_ROOT "/cgroup.procs", F_OK) < 0 &&
	    mount("cgroup2", VMINIT_CGROUP_ROOT, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	int rc = write_text(VMINIT_CGROUP_ROOT, "cgroup.subtree_control", "+cpu +pids");
	if (rc < 0)
		return rc;
	if (mkdir(VMINIT_CGROUP, 0755) < 0 && errno != EEXIST)
		return -errno;
	const char *nproc = getenv("SPACE_NPROC");
	if (nproc && atoll(nproc) > 0 && (rc = write_text(VMINIT_CGROUP, "pids.max", nproc)) < 0)
		return rc;
	int fd = open(VMINIT_CGROUP "/cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	spawn_set_cgroup(fd);
	return 0;
}

int vminit_settings(void)
{
	int rc = vminit_env();
	if (rc < 0)
		return rc;
	if ((rc = vminit_cgroup()) < 0)
		agent_log("the commands' cgroup (%s): %s", VMINIT_CGROUP, strerror(-rc));
	return 0;
}

int vminit_boot(void)
{
	int first = mount_all(), rc;
	if ((rc = console_fds()) < 0) {
		agent_log("console: %s", strerror(-rc));
		if (!first)
			first = rc;
	}
	if ((rc = vminit_load_modules(SP_VM_MODULE_DIR, SP_VM_MODULE_ORDER)) < 0) {
		if (!first)
			first = rc;
		return first; /* no disks without their drivers */
	}
	remove_files(SP_VM_MODULE_DIR); /* in the kernel now; as files, 1 MB of the guest's RAM */
	if ((rc = vminit_loopback()) < 0)
		agent_log("bringing up lo: %s", strerror(-rc));
	if ((rc = vminit_network()) < 0 && rc != -ENODEV)
		agent_log("bringing up eth0: %s", strerror(-rc));
	if ((rc = vminit_root()) < 0 && rc != -ENOENT && !first)
		first = rc;
	if ((rc = vminit_env()) < 0 && rc != -ENOENT) /* none: a guest booted without a sandbox's settings */
		agent_log("the sandbox's environment (%s): %s", SP_VM_ENV_NAME, strerror(-rc));
	if ((rc = vminit_cgroup()) < 0)
		agent_log("the commands' cgroup (%s): %s", VMINIT_CGROUP, strerror(-rc));
	return first;
}

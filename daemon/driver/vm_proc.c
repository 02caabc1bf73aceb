/*
 * daemon/driver/vm_proc.c - a microVM's QEMU as a host process (see vm_proc.h).
 */
#include "daemon/driver/vm_proc.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "lib/frame.h"
#include "proto/agent.h"

void vm_path(char *out, size_t n, const struct sandbox *sb, const char *leaf)
{
	snprintf(out, n, "%s/%s", sb->conf.dir, leaf);
}

/* Up to n-1 bytes of the file at p into buf, NUL-terminated; their count, or 0. */
ssize_t vm_read_small(const char *p, char *buf, size_t n)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = '\0';
	return r;
}

/* QEMU's pid for sb, when the pid file names a live QEMU of this sandbox; else 0. */
pid_t vm_qemu_pid(struct sandbox *sb)
{
	char p[720], buf[32], cmdline[8192];
	vm_path(p, sizeof(p), sb, "vm/qemu.pid");
	if (!vm_read_small(p, buf, sizeof(buf)))
		return 0;
	pid_t pid = (pid_t)atoi(buf);
	if (pid <= 1)
		return 0;
	/* a recycled pid is someone else's: the process must be QEMU named for this sandbox */
	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
	ssize_t n = vm_read_small(p, cmdline, sizeof(cmdline));
	if (!n || !strstr(cmdline, QEMU))
		return 0;
	for (char *a = cmdline; a < cmdline + n; a += strlen(a) + 1)
		if (strcmp(a, "-name") == 0 && a + strlen(a) + 1 < cmdline + n && strcmp(a + strlen(a) + 1, sb->id) == 0)
			return pid;
	return 0;
}

/* vm/qemu.pid: QEMU's pid as spaced sees it (in its own PID namespace it is 1), replaced
 * whole so a restarted spaced never reads half of one. */
int vm_write_pid(struct sandbox *sb, pid_t pid, struct err *e)
{
	char p[720], tmp[740], buf[32];
	vm_path(p, sizeof(p), sb, "vm/qemu.pid");
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	int len = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd >= 0 && write(fd, buf, (size_t)len) == len ? 0 : -EIO;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && rename(tmp, p) < 0)
		rc = -errno;
	return rc < 0 ? err_set(e, ERR_INTERNAL, -rc, "writing %s: %s", p, strerror(-rc)) : 0;
}

/* Ends sb's QEMU, if one runs (SIGKILL: whatever is to be kept was written first), and waits
 * until it is gone; child is the one just started, 0 for the one the pid file names. */
int vm_kill_qemu(struct sandbox *sb, pid_t child, struct err *e)
{
	pid_t pid = child ? child : vm_qemu_pid(sb);
	if (!pid)
		return 0;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return errno == ESRCH ? 0 : err_set(e, ERR_INTERNAL, errno, "pidfd_open: %s", strerror(errno));
	/* pid was checked before the pidfd was taken: check again that it is still ours (a child
	 * just started is ours until reaped, which the pidfd now holds off from mattering) */
	if (!child && vm_qemu_pid(sb) != pid) {
		close(pfd);
		return 0;
	}
	syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	int r;
	while ((r = poll(&p, 1, VM_GONE_MS)) < 0 && errno == EINTR)
		;
	close(pfd);
	if (r <= 0)
		return err_set(e, ERR_INTERNAL, ETIMEDOUT, "QEMU (pid %d) of sandbox %s did not exit", (int)pid, sb->id);
	return 0;
}

/* The cgroup directories of sb's VM (cgroup v1, as runsc's: space/<id>). */
static const char *const CGROUPS[] = { "memory", "cpu", "pids" };

static int write_to(const char *dir, const char *file, const char *val)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, val, strlen(val));
	int rc = w == (ssize_t)strlen(val) ? 0 : -errno;
	close(fd);
	return rc;
}

/* Puts pid (QEMU, every thread of it: cgroup v1's cgroup.procs) into sb's cgroups: memory
 * for guest RAM plus QEMU's own, CPU time for sb->cpus. */
int vm_confine(struct sandbox *sb, int overhead_mb, pid_t pid, struct err *e)
{
	char val[64], procs[32];
	snprintf(procs, sizeof(procs), "%d", (int)pid);
	for (size_t i = 0; i < sizeof(CGROUPS) / sizeof(CGROUPS[0]); i++) {
		char dir[256];
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s/space", CGROUPS[i]);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s/space/%s", CGROUPS[i], sb->id);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", dir, strerror(errno));
		int rc = 0;
		if (strcmp(CGROUPS[i], "memory") == 0) {
			snprintf(val, sizeof(val), "%llu", (unsigned long long)(sb->conf.memory_mb + overhead_mb) << 20);
			rc = write_to(dir, "memory.limit_in_bytes", val);
		} else if (strcmp(CGROUPS[i], "pids") == 0) {
			rc = write_to(dir, "pids.max", "256"); /* QEMU's threads; the guest's processes are its own */
		} else {
			snprintf(val, sizeof(val), "%d", sb->conf.cpus * 100000);
			rc = write_to(dir, "cpu.cfs_period_us", "100000");
			if (rc == 0)
				rc = write_to(dir, "cpu.cfs_quota_us", val);
			snprintf(val, sizeof(val), "%d", sb->cpu_shares > 0 ? sb->cpu_shares : 1024);
			if (rc == 0)
				rc = write_to(dir, "cpu.shares", val);
		}
		if (rc == 0)
			rc = write_to(dir, "cgroup.procs", procs);
		if (rc < 0)
			return err_set(e, ERR_INTERNAL, -rc, "confining QEMU in %s: %s", dir, strerror(-rc));
	}
	return 0;
}

void vm_remove_cgroups(const char *id)
{
	for (size_t i = 0; i < sizeof(CGROUPS) / sizeof(CGROUPS[0]); i++) {
		char dir[256];
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s/space/%s", CGROUPS[i], id);
		rmdir(dir);
	}
}

/* The last line of a log file (QEMU's complaint when it failed), into out. */
void vm_last_line_of(const char *p, char *out, size_t n)
{
	out[0] = '\0';
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char tail[1024];
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)sizeof(tail) - 1 ? end - (off_t)sizeof(tail) + 1 : 0;
	ssize_t r = end > 0 ? pread(fd, tail, sizeof(tail) - 1, from) : 0;
	close(fd);
	if (r <= 0)
		return;
	tail[r] = '\0';
	while (r > 0 && isspace((unsigned char)tail[r - 1]))
		tail[--r] = '\0';
	char *nl = strrchr(tail, '\n');
	snprintf(out, n, "%s", nl ? nl + 1 : tail);
}

/* ---- the agent's first words ---- */

int vm_unix_socket(const char *path, struct sockaddr_un *sa, struct err *e)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "socket path too long: %s", path);
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "socket: %s", strerror(errno));
	return fd;
}

/* Reads what arrives on fd into buf (at *have of cap) until the deadline. 0, or -errno. */
static int read_more(int fd, uint8_t *buf, size_t cap, size_t *have, int64_t deadline)
{
	int64_t left = deadline - mono_ms();
	if (left <= 0 || *have == cap)
		return -ETIMEDOUT;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, (int)left);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -ETIMEDOUT;
	ssize_t r = read(fd, buf + *have, cap - *have);
	if (r < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (r == 0)
		return -ECONNRESET;
	*have += (size_t)r;
	return 0;
}

int vm_agent_hello(const char *sock, int timeout_ms, struct err *e)
{
	int64_t deadline = mono_ms() + timeout_ms;
	struct sockaddr_un sa;
	int fd = vm_unix_socket(sock, &sa, e);
	if (fd < 0)
		return fd;
	uint64_t nonce;
	uint8_t open_frame[SP_HDR_SIZE + sizeof(struct sp_open)], want[sizeof(open_frame)];
	int rc = getrandom(&nonce, sizeof(nonce), 0) == (ssize_t)sizeof(nonce) ? 0 : -EIO;
	frame_put_header(open_frame, SP_H_OPEN, 0, sizeof(struct sp_open));
	frame_put_u64(open_frame + SP_HDR_SIZE, nonce);
	frame_put_header(want, SP_A_OPEN, 0, sizeof(struct sp_open));
	frame_put_u64(want + SP_HDR_SIZE, nonce);
	if (rc == 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		rc = -errno;
	if (rc == 0 && write(fd, open_frame, sizeof(open_frame)) != (ssize_t)sizeof(open_frame))
		rc = -EIO;
	/* what the agent says before A_OPEN with our nonce is dropped, then its hello follows */
	uint8_t buf[4096];
	size_t have = 0;
	bool opened = false;
	while (rc == 0) {
		if (!opened) {
			uint8_t *m = memmem(buf, have, want, sizeof(want));
			if (m) {
				size_t skip = (size_t)(m - buf) + sizeof(want);
				memmove(buf, buf + skip, have - skip);
				have -= skip;
				opened = true;
				continue;
			}
			if (have >= sizeof(want)) { /* the tail may be the start of it */
				memmove(buf, buf + have - (sizeof(want) - 1), sizeof(want) - 1);
				have = sizeof(want) - 1;
			}
		} else {
			struct frame f;
			long used = frame_parse(buf, have, &f);
			if (used < 0) {
				rc = -EPROTO;
				break;
			}
			if (used > 0) {
				rc = f.type == SP_A_HELLO && f.len >= sizeof(struct sp_hello) ? 1 : -EPROTO;
				break;
			}
		}
		rc = read_more(fd, buf, sizeof(buf), &have, deadline);
	}
	close(fd);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "the guest's agent did not say hello on %s: %s", sock,
			       rc == -EPROTO ? "its first frame is not A_HELLO" : strerror(-rc));
	return 0;
}

/* Whether the CPU has hardware virtualisation (vmx, svm) among its flags. A PVM-backed
 * /dev/kvm, as on these machines, has neither: KVM there emulates and is slower than TCG. */
static bool cpu_virtualises(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return false;
	char line[4096];
	bool yes = false;
	while (!yes && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		for (char *w = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \t\n"); w && !yes;
		     w = strtok(NULL, " \t\n"))
			yes = strcmp(w, "vmx") == 0 || strcmp(w, "svm") == 0;
		break;
	}
	fclose(f);
	return yes;
}

static bool kvm_opens(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* "kvm" or "tcg" for want ("auto", "kvm", "tcg"); -EINVAL for anything else, -ENODEV for kvm
 * on a host where it does not open. */
int vm_pick_accel(const char *want, char out[8])
{
	if (!want || strcmp(want, "auto") == 0) {
		snprintf(out, 8, "%s", cpu_virtualises() && kvm_opens() ? "kvm" : "tcg");
		return 0;
	}
	if (strcmp(want, "tcg") != 0 && strcmp(want, "kvm") != 0)
		return -EINVAL;
	if (strcmp(want, "kvm") == 0 && !kvm_opens())
		return -ENODEV;
	snprintf(out, 8, "%s", want);
	return 0;
}

/* The first executable name in $PATH, resolved, into out; "" if there is none. */
void vm_find_in_path(const char *name, char *out, size_t n)
{
	out[0] = '\0';
	const char *env = getenv("PATH");
	char dirs[2048];
	snprintf(dirs, sizeof(dirs), "%s", env && env[0] ? env : "/usr/local/bin:/usr/bin:/bin");
	char *save = NULL;
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char cand[1200], real[PATH_MAX];
		snprintf(cand, sizeof(cand), "%s/%s", dir, name);
		if (access(cand, X_OK) == 0 && realpath(cand, real)) {
			snprintf(out, n, "%s", real);
			return;
		}
	}
}

/* vm/held exists while spaced itself keeps the VM stopped (a pause, a checkpoint being
 * written): the liveness check, which continues a VM stopped underneath, leaves it be. Set
 * before the stop, cleared after the cont, so the check sees it whenever the VM is stopped
 * on purpose; a new QEMU starts without it. */
void vm_set_held(const struct sandbox *sb, bool held)
{
	char p[720];
	vm_path(p, sizeof(p), sb, "vm/held");
	if (!held) {
		unlink(p);
		return;
	}
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		close(fd);
}

bool vm_is_held(const struct sandbox *sb)
{
	char p[720];
	vm_path(p, sizeof(p), sb, "vm/held");
	return access(p, F_OK) == 0;
}

/* Whether the file system under sb's disk image grants QEMU, an unprivileged writer,
 * VM_DISK_ROOM_MB. */
bool vm_disk_has_room(const struct sandbox *sb)
{
	char dir[700];
	vm_path(dir, sizeof(dir), sb, "upper");
	struct statvfs fs;
	return statvfs(dir, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize >= ((uint64_t)VM_DISK_ROOM_MB << 20);
}

/* The number after key in a /proc file of `Key: value` lines, or 0. */
unsigned long long vm_proc_field(const char *p, const char *key)
{
	char buf[4096];
	if (!vm_read_small(p, buf, sizeof(buf)))
		return 0;
	char *at = strstr(buf, key);
	return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

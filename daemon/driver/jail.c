/*
 * daemon/driver/jail.c - a VMM started confined (see jail.h).
 *
 * The child is made by clone(2) with new namespaces, not posix_spawn, since its mounts and
 * change of user come between the two halves of fork and exec. spaced has threads: the
 * child makes only system calls (raw ones for the change of user, which glibc would try to
 * apply to threads that are not there), allocates nothing, and everything it uses is
 * prepared by the parent first.
 */
#include "daemon/driver/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where the new root is made, in the child's own mount namespace (the host's is untouched). */
#define JAIL_ROOT "/tmp"
/* Descriptors the parent prepares are moved at or above this, clear of the targets 0..14. */
#define JAIL_HIGH_FD 64

/* The host's top-level names that hold programs and libraries: symlinks into /usr on a
 * merged-/usr system (copied as such), directories elsewhere (bound read-only). */
static const char *const TOP[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32" };
#define NTOP (sizeof(TOP) / sizeof(TOP[0]))
static const char *const DEVICES[] = { "null", "zero", "full", "random", "urandom", "kvm" };
#define NDEV (sizeof(DEVICES) / sizeof(DEVICES[0]))

enum step {
	S_SESSION = 1, S_PRIVATE, S_ROOT, S_USR, S_TOP, S_LDCACHE, S_DEV, S_PROC, S_PIVOT, S_READONLY,
	S_FDS, S_USER, S_NNP, S_THP, S_DEATHSIG, S_EXEC,
};
static const char *const STEP[] = {
	[S_SESSION] = "setsid", [S_PRIVATE] = "making mounts private", [S_ROOT] = "mounting its root",
	[S_USR] = "binding /usr", [S_TOP] = "linking /bin and /lib", [S_LDCACHE] = "binding /etc/ld.so.cache",
	[S_DEV] = "binding device nodes", [S_PROC] = "mounting /proc", [S_PIVOT] = "pivot_root",
	[S_READONLY] = "making its root read-only", [S_FDS] = "placing descriptors", [S_USER] = "changing user",
	[S_NNP] = "no_new_privs", [S_THP] = "turning huge pages off", [S_DEATHSIG] = "parent-death signal", [S_EXEC] = "exec",
};

/* Everything the child needs, made before clone. */
struct plan {
	const char *exe;
	char *const *argv;
	int devnull, out, err, status;
	int keep[JAIL_MAX_KEEP], nkeep;
	uid_t uid;
	gid_t kvm_gid;
	bool kvm, transient;
	char link[NTOP][256]; /* TOP[i]'s symlink target, "" for a directory, "-" for absent */
	char top_host[NTOP][16], top_at[NTOP][32], dev_host[NDEV][16], dev_at[NDEV][32];
	bool ldcache;
};

uid_t jail_uid_for(const char *id)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 16777619u;
	return (uid_t)(JAIL_UID_BASE + h % JAIL_UID_SPAN);
}

/* Collects into used (sorted later) the real uid of every process of the host, from /proc. */
static size_t host_uids(uid_t *used, size_t cap)
{
	DIR *dp = opendir("/proc");
	size_t n = 0;
	struct dirent *de;
	while (dp && n < cap && (de = readdir(dp))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300], buf[1024];
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (k <= 0)
			continue; /* it ended meanwhile */
		buf[k] = '\0';
		const char *at = strstr(buf, "\nUid:");
		unsigned long uid;
		if (at && sscanf(at + 5, "%lu", &uid) == 1)
			used[n++] = (uid_t)uid;
	}
	if (dp)
		closedir(dp);
	return n;
}

static bool taken(uid_t uid, const uid_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == uid)
			return true;
	return false;
}

#define HOST_PROCS_MAX 65536 /* processes read from /proc; past that, the rest are not seen */

uid_t jail_uid_pick(const char *id, const uid_t *held, size_t nheld)
{
	uid_t *used = malloc(HOST_PROCS_MAX * sizeof(*used));
	if (!used)
		return 0;
	size_t nused = host_uids(used, HOST_PROCS_MAX);
	uint32_t first = jail_uid_for(id) - JAIL_UID_BASE;
	uid_t uid = 0;
	for (uint32_t k = 0; k <= JAIL_UID_PROBES && !uid; k++) {
		uid_t u = (uid_t)(JAIL_UID_BASE + (first + k) % JAIL_UID_SPAN);
		if (!taken(u, held, nheld) && !taken(u, used, nused))
			uid = u;
	}
	free(used);
	return uid;
}

static bool ok(int rc)
{
	return rc == 0 || (rc < 0 && errno == EEXIST);
}

/* An empty file at at, with the host's file on it (a bind mount). */
static int bind_file(const char *host, const char *at, unsigned long ro)
{
	int fd = open(at, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	if (mount(host, at, NULL, MS_BIND, NULL) < 0)
		return -1;
	return ro ? mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) : 0;
}

/* The child's side; returns only on failure, with the step that failed. */
static enum step child(const struct plan *p)
{
	umask(022); /* spaced's is 077: the jail's folders must be searchable by its user */
	if (setsid() < 0)
		return S_SESSION;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return S_PRIVATE;
	if (mount("tmpfs", JAIL_ROOT, "tmpfs", MS_NOSUID, "size=64k,mode=0755") < 0)
		return S_ROOT;
	if (!ok(mkdir(JAIL_ROOT "/usr", 0755)) || mount("/usr", JAIL_ROOT "/usr", NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, JAIL_ROOT "/usr", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return S_USR;
	for (size_t i = 0; i < NTOP; i++) {
		const char *at = p->top_at[i];
		if (p->link[i][0] == '-')
			continue;
		if (p->link[i][0] ? symlink(p->link[i], at) < 0
				  : (!ok(mkdir(at, 0755)) || mount(p->top_host[i], at, NULL, MS_BIND | MS_REC, NULL) < 0 ||
				     mount(NULL, at, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0))
			return S_TOP;
	}
	if (p->ldcache && (!ok(mkdir(JAIL_ROOT "/etc", 0755)) ||
			   bind_file("/etc/ld.so.cache", JAIL_ROOT "/etc/ld.so.cache", 1) < 0))
		return S_LDCACHE;
	if (!ok(mkdir(JAIL_ROOT "/dev", 0755)))
		return S_DEV;
	for (size_t i = 0; i < NDEV; i++) {
		if (strcmp(DEVICES[i], "kvm") == 0 && !p->kvm)
			continue;
		if (bind_file(p->dev_host[i], p->dev_at[i], 0) < 0)
			return S_DEV;
	}
	/* a /proc of its own PID namespace: /proc/self/fd is how it reaches what it is given */
	if (!ok(mkdir(JAIL_ROOT "/proc", 0555)) ||
	    mount("proc", JAIL_ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return S_PROC;
	if (!ok(mkdir(JAIL_ROOT "/.old", 0700)) || chdir(JAIL_ROOT) < 0 || syscall(SYS_pivot_root, ".", ".old") < 0 ||
	    chdir("/") < 0 || umount2("/.old", MNT_DETACH) < 0 || rmdir("/.old") < 0)
		return S_PIVOT;
	if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, NULL) < 0)
		return S_READONLY;

	if (dup2(p->devnull, 0) < 0 || dup2(p->out, 1) < 0 || dup2(p->err, 2) < 0)
		return S_FDS;
	for (int i = 0; i < p->nkeep; i++)
		if (dup2(p->keep[i], 3 + i) < 0)
			return S_FDS;

	gid_t groups[1] = { p->kvm_gid };
	if (syscall(SYS_setgroups, p->kvm ? 1 : 0, groups) < 0 || syscall(SYS_setresgid, p->uid, p->uid, p->uid) < 0 ||
	    syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0)
		return S_USER;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return S_NNP;
	/* a VMM's guest RAM in pages of 4 KiB, not 2 MiB: a guest restored from an image holds only
	 * the pages the image has, where one written byte would make a huge page resident */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		return S_THP;
	if (p->transient && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) /* after the change of user, which clears it */
		return S_DEATHSIG;
	uint64_t none = 0; /* the kernel's sigset: spaced's threads block signals QEMU must get */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
	char *const env[] = { "PATH=/usr/bin:/bin", NULL };
	execve(p->exe, p->argv, env);
	return S_EXEC;
}

static int high(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, JAIL_HIGH_FD);
}

static void close_plan(struct plan *p)
{
	int fds[] = { p->devnull, p->out, p->err, p->status };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (int i = 0; i < p->nkeep; i++)
		if (p->keep[i] >= 0)
			close(p->keep[i]);
}

static int prepare(struct plan *p, const struct jail *j, int out_fd, int err_fd, const int *keep, int nkeep)
{
	p->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int moved = high(p->devnull);
	close(p->devnull);
	p->devnull = moved;
	p->out = high(out_fd >= 0 ? out_fd : p->devnull);
	p->err = high(err_fd >= 0 ? err_fd : p->devnull);
	for (int i = 0; i < nkeep; i++)
		p->keep[p->nkeep++] = high(keep[i]);
	if (p->devnull < 0 || p->out < 0 || p->err < 0)
		return -EMFILE;
	for (int i = 0; i < p->nkeep; i++)
		if (p->keep[i] < 0)
			return -EMFILE;
	p->uid = j->uid;
	p->kvm = j->kvm;
	p->transient = j->transient;
	struct stat st;
	if (j->kvm) {
		if (stat("/dev/kvm", &st) < 0)
			return -errno;
		p->kvm_gid = st.st_gid;
	}
	for (size_t i = 0; i < NDEV; i++) {
		snprintf(p->dev_host[i], sizeof(p->dev_host[i]), "/dev/%s", DEVICES[i]);
		snprintf(p->dev_at[i], sizeof(p->dev_at[i]), JAIL_ROOT "/dev/%s", DEVICES[i]);
	}
	for (size_t i = 0; i < NTOP; i++) {
		const char *host = p->top_host[i];
		snprintf(p->top_host[i], sizeof(p->top_host[i]), "/%s", TOP[i]);
		snprintf(p->top_at[i], sizeof(p->top_at[i]), JAIL_ROOT "/%s", TOP[i]);
		ssize_t n;
		if (lstat(host, &st) < 0 || !(S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)))
			snprintf(p->link[i], sizeof(p->link[i]), "-");
		else if (S_ISDIR(st.st_mode))
			p->link[i][0] = '\0';
		else if ((n = readlink(host, p->link[i], sizeof(p->link[i]) - 1)) > 0)
			p->link[i][n] = '\0';
		else
			snprintf(p->link[i], sizeof(p->link[i]), "-");
	}
	p->ldcache = access("/etc/ld.so.cache", R_OK) == 0;
	return 0;
}

pid_t jail_start(const struct jail *j, const char *exe, char *const argv[], const int *keep, int nkeep,
		 int out_fd, int err_fd, const char **step)
{
	*step = "preparing";
	if (nkeep < 0 || nkeep > JAIL_MAX_KEEP)
		return -EINVAL;
	struct plan p = { .exe = exe, .argv = argv, .devnull = -1, .out = -1, .err = -1, .status = -1 };
	int sp[2];
	int rc = prepare(&p, j, out_fd, err_fd, keep, nkeep);
	if (rc == 0 && pipe2(sp, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc < 0) {
		close_plan(&p);
		return rc;
	}
	p.status = high(sp[1]);
	close(sp[1]);
	if (p.status < 0) {
		close(sp[0]);
		close_plan(&p);
		return -EMFILE;
	}
	long flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD;
	pid_t pid = (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		int report[2] = { (int)child(&p), errno };
		ssize_t w = write(p.status, report, sizeof(report));
		(void)w;
		_exit(127);
	}
	int cerr = errno;
	close_plan(&p);
	if (pid < 0) {
		close(sp[0]);
		*step = "clone";
		return -cerr;
	}
	/* the status pipe closes at exec (success) or carries the failed step */
	int report[2];
	ssize_t r;
	while ((r = read(sp[0], report, sizeof(report))) < 0 && errno == EINTR)
		;
	close(sp[0]);
	if (r == 0)
		return pid;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (r != (ssize_t)sizeof(report) || report[0] < S_SESSION || report[0] > S_EXEC) {
		*step = "starting";
		return -EIO;
	}
	*step = STEP[report[0]];
	return -(report[1] ? report[1] : EIO);
}

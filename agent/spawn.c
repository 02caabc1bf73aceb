/*
 * agent/spawn.c - starts one process for proc.c.
 *
 * The parent prepares everything that needs memory (argv, the merged
 * environment, the shell fallback's argv) before fork(), so the child only
 * makes system calls: reset signals, new session, wire up stdin/stdout/
 * stderr, switch user, chdir, then search PATH the way execvpe does, but in
 * the environment the process will get rather than the agent's. Any failure
 * in the child is written as {stage, errno} to a close-on-exec pipe and the
 * child _exits; a successful exec closes that pipe, which the parent reads as
 * success.
 */
#include "spawn.h"

#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_LANG "C.UTF-8"
#define SHIM_PATH "/.space/shim.so"

enum stage { STAGE_SETUP = 1, STAGE_USER, STAGE_CHDIR, STAGE_EXEC };

struct child_report {
	int32_t stage;
	int32_t err;
};

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Index of the entry of env[0..n) with the same key as kv, or n. */
static size_t env_find(char **env, size_t n, const char *kv)
{
	size_t k = key_len(kv);
	for (size_t i = 0; i < n; i++)
		if (key_len(env[i]) == k && strncmp(env[i], kv, k) == 0)
			return i;
	return n;
}

static void env_set(char **env, size_t *n, char *kv)
{
	size_t i = env_find(env, *n, kv);
	env[i] = kv;
	if (i == *n)
		(*n)++;
}

int spawn_env(char *const *base, const char *const *over, size_t nover, const char *home,
	      char ***envp, char **strings)
{
	size_t nbase = 0;
	while (base && base[nbase])
		nbase++;
	char **env = calloc(nbase + nover + 5, sizeof(*env));
	size_t homelen = strlen("HOME=") + strlen(home) + 1;
	char *homekv = malloc(homelen);
	if (!env || !homekv) {
		free(env);
		free(homekv);
		return -ENOMEM;
	}
	snprintf(homekv, homelen, "HOME=%s", home);

	size_t n = 0;
	for (size_t i = 0; i < nbase; i++)
		if (strncmp(base[i], "SPACE_", 6) != 0 && strchr(base[i], '='))
			env_set(env, &n, base[i]);
	if (env_find(env, n, "PATH") == n)
		env[n++] = (char *)"PATH=" DEFAULT_PATH;
	if (env_find(env, n, "LANG") == n)
		env[n++] = (char *)"LANG=" DEFAULT_LANG;
	/* spaced mounts a compatibility shim for runsc's limits (agent/shim/) */
	static int shim = -1; /* looked up once: the mount does not come or go */
	if (shim < 0)
		shim = access(SHIM_PATH, R_OK) == 0;
	if (shim && env_find(env, n, "LD_PRELOAD") == n)
		env[n++] = (char *)"LD_PRELOAD=" SHIM_PATH;
	env_set(env, &n, homekv);
	for (size_t i = 0; i < nover; i++)
		if (strchr(over[i], '=') && over[i][0] != '=')
			env_set(env, &n, (char *)over[i]);
	env[n] = NULL;
	*envp = env;
	*strings = homekv;
	return 0;
}

void spawn_env_free(char **envp, char *strings)
{
	free(envp);
	free(strings);
}

static const char *env_get(char *const *envp, const char *key)
{
	size_t k = strlen(key);
	for (; *envp; envp++)
		if (strncmp(*envp, key, k) == 0 && (*envp)[k] == '=')
			return *envp + k + 1;
	return NULL;
}

static void child_fail(int fd, enum stage stage, int err)
{
	struct child_report rep = { .stage = stage, .err = err };
	ssize_t w = write(fd, &rep, sizeof(rep));
	(void)w;
	_exit(127);
}

/* execve, falling back to /bin/sh for a file without a binary format. */
static void try_exec(const char *path, const struct spawn_req *r, char **shargv)
{
	execve(path, r->argv, r->envp);
	if (errno != ENOEXEC)
		return;
	shargv[0] = (char *)"/bin/sh";
	shargv[1] = (char *)path;
	for (size_t i = 1; i <= r->argc; i++)
		shargv[i + 1] = r->argv[i];
	execve("/bin/sh", shargv, r->envp);
	errno = ENOEXEC;
}

/* Returns (with errno set) only if no candidate could be executed. */
static void child_exec(const struct spawn_req *r, char **shargv)
{
	const char *file = r->path ? r->path : r->argv[0];
	if (!*file) {
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/')) {
		try_exec(file, r, shargv);
		return;
	}
	const char *path = env_get(r->envp, "PATH");
	if (!path || !*path)
		path = DEFAULT_PATH;
	size_t flen = strlen(file);
	bool eacces = false;
	char buf[PATH_MAX];
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		if (dlen + 1 + flen + 1 <= sizeof(buf)) {
			memcpy(buf, p, dlen); /* empty element: current directory */
			size_t o = dlen;
			if (dlen)
				buf[o++] = '/';
			memcpy(buf + o, file, flen + 1);
			try_exec(buf, r, shargv);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT: case ENOTDIR: case ELOOP: case ENAMETOOLONG:
			case ESTALE: case ENODEV: case ETIMEDOUT:
				break;
			default:
				return;
			}
		}
		p = end;
		if (!*p)
			break;
	}
	errno = eacces ? EACCES : ENOENT;
}

static void child_reset_signals(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * Limits every command gets, set by spaced through the agent's environment and
 * computed once, before any vfork, so children only read them:
 *
 * - SPACE_CPUS: runsc gives the sandbox every host CPU and limits time with a
 *   cgroup quota, so each command is pinned to the first SPACE_CPUS of them,
 *   which is what nproc then shows.
 * - SPACE_NPROC, SPACE_NOFILE: the hard limits on processes and open files. The
 *   process limit is the inner layer below the host's pids cgroup: a fork bomb
 *   fails inside (EAGAIN) instead of reaching the host cgroup, which under runsc
 *   kills the whole sandbox.
 *
 * Every command starts with a Debian machine's limits (DEBIAN_LIMITS): open files
 * soft 1024 under the hard SPACE_NOFILE, processes soft = hard, an 8 MiB stack
 * under an unlimited hard one, no core files unless raised, no address space
 * limit. A process may lower them and raise a soft one up to its hard one. Memory
 * is limited by what is used, not reserved (oom.c).
 */
#define NOFILE_SOFT 1024
#define STACK_SOFT (8ull << 20)

static cpu_set_t cpus_mask;
static int cgroup_procs = -1; /* spawn_set_cgroup */
static int cpus_limited = -1;
static struct rlimit lim_nproc, lim_nofile;
static const struct {
	int resource;
	struct rlimit lim;
} DEBIAN_LIMITS[] = {
	{ RLIMIT_AS, { RLIM_INFINITY, RLIM_INFINITY } },
	{ RLIMIT_STACK, { STACK_SOFT, RLIM_INFINITY } },
	{ RLIMIT_CORE, { 0, RLIM_INFINITY } },
};

static void set_limit(struct rlimit *r, const char *var, rlim_t unit)
{
	const char *v = getenv(var);
	long long n = v ? atoll(v) : 0;
	r->rlim_cur = r->rlim_max = n > 0 ? (rlim_t)n * unit : RLIM_INFINITY;
}

/* Sets what a command starts with; a limit the agent itself lacks stays the agent's. */
static void child_limits(void)
{
	for (size_t i = 0; i < sizeof(DEBIAN_LIMITS) / sizeof(DEBIAN_LIMITS[0]); i++)
		setrlimit(DEBIAN_LIMITS[i].resource, &DEBIAN_LIMITS[i].lim);
	if (lim_nproc.rlim_cur != RLIM_INFINITY)
		setrlimit(RLIMIT_NPROC, &lim_nproc);
	struct rlimit nofile = lim_nofile;
	if (nofile.rlim_max == RLIM_INFINITY)
		getrlimit(RLIMIT_NOFILE, &nofile);
	if (nofile.rlim_cur > NOFILE_SOFT)
		nofile.rlim_cur = NOFILE_SOFT;
	setrlimit(RLIMIT_NOFILE, &nofile);
}

void spawn_set_cgroup(int procs_fd)
{
	if (cgroup_procs >= 0)
		close(cgroup_procs);
	cgroup_procs = procs_fd;
}

static void cpus_init(void)
{
	if (cpus_limited >= 0)
		return;
	cpus_limited = 0;
	set_limit(&lim_nproc, "SPACE_NPROC", 1);
	set_limit(&lim_nofile, "SPACE_NOFILE", 1);
	const char *v = getenv("SPACE_CPUS");
	int want = v ? atoi(v) : 0;
	cpu_set_t have;
	if (want <= 0 || sched_getaffinity(0, sizeof(have), &have) < 0 || want >= CPU_COUNT(&have))
		return;
	CPU_ZERO(&cpus_mask);
	for (int cpu = 0, n = 0; cpu < CPU_SETSIZE && n < want; cpu++)
		if (CPU_ISSET(cpu, &have)) {
			CPU_SET(cpu, &cpus_mask);
			n++;
		}
	cpus_limited = 1;
}

/* Runs in the child after vfork(): only system calls, no allocation, no writes to memory the
 * parent will read. */
static void child_run(const struct spawn_req *r, const int in[2], const int out[2],
		      const int err[2], int report, char **shargv)
{
	child_reset_signals();
	if (cgroup_procs >= 0 && write(cgroup_procs, "0", 1) != 1)
		child_fail(report, STAGE_SETUP, errno);
	if (cpus_limited == 1)
		sched_setaffinity(0, sizeof(cpus_mask), &cpus_mask);
	child_limits();
	if (setsid() < 0)
		child_fail(report, STAGE_SETUP, errno);
	if (r->pty) { /* out[1] is the terminal: the session's controlling one, and all three */
		if (ioctl(out[1], TIOCSCTTY, 0) < 0 || dup2(out[1], 0) < 0 || dup2(out[1], 1) < 0 ||
		    dup2(out[1], 2) < 0)
			child_fail(report, STAGE_SETUP, errno);
	} else {
		int stdin_fd = r->want_stdin ? in[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (stdin_fd < 0)
			child_fail(report, STAGE_SETUP, errno);
		if (dup2(stdin_fd, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			child_fail(report, STAGE_SETUP, errno);
	}
	if (r->user) {
		const struct user_info *u = r->user;
		if (getuid() == 0) {
			if (setgroups(u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 ||
			    setuid(u->uid) < 0)
				child_fail(report, STAGE_USER, errno);
		} else if (u->uid != getuid()) {
			child_fail(report, STAGE_USER, EPERM);
		}
	}
	if (chdir(r->cwd) < 0)
		child_fail(report, STAGE_CHDIR, errno);
	if (r->pty && r->keeper && (fcntl(in[0], F_SETFD, 0) < 0 || fcntl(report, F_SETFD, 0) < 0))
		child_fail(report, STAGE_SETUP, errno); /* the keeper's control and report pipes */
	child_exec(r, shargv);
	child_fail(report, STAGE_EXEC, errno);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++) {
		if (p[i] >= 0)
			close(p[i]);
		p[i] = -1;
	}
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static void describe(const struct spawn_req *r, const struct child_report *rep, char *msg,
		     size_t msglen)
{
	const char *what = strerror(rep->err);
	switch (rep->stage) {
	case STAGE_USER:
		snprintf(msg, msglen, "switch to uid %u: %s", (unsigned)r->user->uid, what);
		break;
	case STAGE_CHDIR:
		snprintf(msg, msglen, "chdir %s: %s", r->cwd, what);
		break;
	case STAGE_EXEC:
		snprintf(msg, msglen, "exec %s: %s", r->argv[0], what);
		break;
	default:
		snprintf(msg, msglen, "process setup: %s", what);
		break;
	}
}

/* A new terminal of size rows x cols: t[0] its master, t[1] its other end (both O_CLOEXEC). */
static int open_pty(const struct spawn_req *r, int t[2], char *msg, size_t msglen)
{
	char name[64];
	struct winsize ws = { .ws_row = r->rows, .ws_col = r->cols };
	t[0] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t[0] < 0 || grantpt(t[0]) < 0 || unlockpt(t[0]) < 0 || ptsname_r(t[0], name, sizeof(name)) != 0 ||
	    (t[1] = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 || ioctl(t[1], TIOCSWINSZ, &ws) < 0 ||
	    (r->user && fchown(t[1], r->user->uid, (gid_t)-1) < 0)) { /* its user's, as login makes it */
		int e = errno;
		snprintf(msg, msglen, "terminal: %s", strerror(e));
		return -e;
	}
	return 0;
}

/*
 * vfork: under gVisor's ptrace platform a copy of the address space is the dominant cost of
 * starting a command (measured: fork+exec 35 ms, vfork+exec 22 ms). The child only makes system
 * calls on memory prepared before this point, then execs or _exits. Kept in a function of its
 * own so that no caller variable lives across the vfork.
 */
static __attribute__((noinline)) pid_t start_child(const struct spawn_req *r, const int in[2], const int out[2],
						   const int err[2], int report, char **shargv)
{
	pid_t pid = vfork();
	if (pid == 0)
		child_run(r, in, out, err, report, shargv); /* does not return */
	return pid;
}

/* argv of a terminal's keeper for r, with the numbers of its pipes in nums (two of 12 bytes). */
static char **keeper_argv(const struct spawn_req *r, int ctl, int report, char nums[2][12])
{
	char **argv = calloc(r->argc + 6, sizeof(*argv));
	if (!argv)
		return NULL;
	snprintf(nums[0], 12, "%d", ctl);
	snprintf(nums[1], 12, "%d", report);
	argv[0] = (char *)"space-agent";
	argv[1] = (char *)KEEPER_ARG;
	argv[2] = nums[0];
	argv[3] = nums[1];
	argv[4] = (char *)"--";
	for (size_t i = 0; i < r->argc; i++)
		argv[5 + i] = r->argv[i];
	return argv;
}

/*
 * The child's stdin, stdout and stderr: a new terminal, whose master the parent holds twice (in[1]
 * and out[0]) so that its input closes apart from its output, as a pipe's; or pipes (stdin's only
 * if the child wants one).
 */
static int open_stdio(const struct spawn_req *r, int in[2], int out[2], int err[2], char *msg,
		      size_t msglen)
{
	int ret;
	if (r->pty) {
		if ((ret = open_pty(r, out, msg, msglen)) < 0)
			return ret;
		if ((in[1] = fcntl(out[0], F_DUPFD_CLOEXEC, 0)) < 0) {
			ret = -errno;
			snprintf(msg, msglen, "terminal: %s", strerror(-ret));
			return ret;
		}
		return 0;
	}
	if ((r->want_stdin && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0) {
		ret = -errno;
		snprintf(msg, msglen, "pipe: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * Waits for the child started as pid to exec: 0 once it did (the report pipe closed without a
 * report), or the failure it reported as -errno with its message in msg, the child reaped.
 */
static int wait_exec(pid_t pid, int report_fd, const struct spawn_req *r, char *msg, size_t msglen)
{
	struct child_report report;
	ssize_t n;
	do
		n = read(report_fd, &report, sizeof(report));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(report))
		return 0;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	describe(r, &report, msg, msglen);
	return report.err > 0 ? -report.err : -EIO;
}

/* Hands the parent's ends of a started child's pipes to *o, non-blocking; -1 takes their place. */
static void take_ends(struct spawn_out *o, pid_t pid, int in[2], int out[2], int err[2], int ctl[2])
{
	o->pid = pid;
	o->keeper = ctl[1];
	o->in = in[1];
	o->out = out[0];
	o->err = err[0];
	ctl[1] = in[1] = out[0] = err[0] = -1;
	if (o->keeper >= 0)
		set_nonblock(o->keeper);
	if (o->in >= 0)
		set_nonblock(o->in);
	set_nonblock(o->out);
	if (o->err >= 0)
		set_nonblock(o->err);
}

int spawn_start(const struct spawn_req *req, struct spawn_out *o, char *msg, size_t msglen)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, rep[2] = { -1, -1 }, ctl[2] = { -1, -1 };
	struct spawn_req keeper = *req;
	const struct spawn_req *r = req;
	char nums[2][12], **kargv = NULL;
	char **shargv = calloc(req->argc + 7, sizeof(*shargv));
	int ret = 0;
	if (!shargv) {
		ret = -ENOMEM;
		snprintf(msg, msglen, "out of memory");
		goto out;
	}
	if ((ret = open_stdio(r, in, out, err, msg, msglen)) < 0)
		goto out;
	if (pipe2(rep, O_CLOEXEC) < 0 || (req->pty && req->keeper && pipe2(ctl, O_CLOEXEC) < 0)) {
		ret = -errno;
		snprintf(msg, msglen, "pipe: %s", strerror(errno));
		goto out;
	}
	if (ctl[0] >= 0) { /* the keeper runs the program: its control pipe's end takes stdin's place */
		if (!(kargv = keeper_argv(req, ctl[0], rep[1], nums))) {
			ret = -ENOMEM;
			snprintf(msg, msglen, "out of memory");
			goto out;
		}
		keeper.path = "/proc/self/exe";
		keeper.argv = kargv;
		keeper.argc = req->argc + 5;
		in[0] = ctl[0];
		ctl[0] = -1;
		r = &keeper;
	}
	cpus_init();
	pid_t pid = start_child(r, in, out, err, rep[1], shargv);
	if (pid < 0) {
		ret = -errno;
		snprintf(msg, msglen, "fork: %s", strerror(errno));
		goto out;
	}
	close(rep[1]);
	rep[1] = -1;
	if ((ret = wait_exec(pid, rep[0], r, msg, msglen)) == 0)
		take_ends(o, pid, in, out, err, ctl); /* exec happened: keep the parent's ends */
out:
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_pair(rep);
	close_pair(ctl);
	free(shargv);
	free(kargv);
	return ret;
}

/* ---- a terminal's keeper (spawn.h) ---- */

/* Ends the keeper as its program ended: the same exit status, or the same signal. */
static void keeper_exit(int st)
{
	if (!WIFSIGNALED(st))
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
	int sig = WTERMSIG(st);
	signal(sig, SIG_DFL);
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	kill(getpid(), sig);
	_exit(128 + sig);
}

int spawn_keeper_main(int argc, char **argv)
{
	extern char **environ;
	if (argc < 6 || strcmp(argv[4], "--") != 0)
		return 127;
	int ctl = atoi(argv[2]), report = atoi(argv[3]);
	struct spawn_req r = { .argv = argv + 5, .argc = (size_t)argc - 5, .envp = environ };
	char **shargv = calloc(r.argc + 2, sizeof(*shargv));
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC);
	pid_t pid = shargv && sfd >= 0 ? fork() : -1;
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		close(ctl);
		if (fcntl(report, F_SETFD, FD_CLOEXEC) < 0)
			child_fail(report, STAGE_SETUP, errno);
		child_exec(&r, shargv);
		child_fail(report, STAGE_EXEC, errno);
	}
	if (pid < 0)
		child_fail(report, STAGE_SETUP, errno ? errno : ENOMEM);
	close(report);
	/* what the terminal's keys and the host send go to the program's groups, not to the keeper */
	static const int ignored[] = { SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGTERM, SIGWINCH, SIGPIPE };
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	for (;;) {
		struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN }, { .fd = ctl, .events = POLLIN } };
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			_exit(127);
		if (pfd[0].revents) {
			struct signalfd_siginfo si;
			int st;
			pid_t w;
			if (read(sfd, &si, sizeof(si)) < 0) {
				/* nothing to do: the wait below looks anyway */
			}
			while ((w = waitpid(-1, &st, WNOHANG)) > 0)
				if (w == pid)
					keeper_exit(st);
		}
		if (pfd[1].revents) {
			unsigned char sig[64];
			ssize_t n = read(ctl, sig, sizeof(sig));
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				ctl = -1; /* the agent is gone: the program goes on */
			pid_t fg = n > 0 ? tcgetpgrp(STDIN_FILENO) : -1;
			for (ssize_t i = 0; fg > 0 && i < n; i++)
				if (sig[i] == SIGINT || sig[i] == SIGQUIT || sig[i] == SIGTSTP || sig[i] == SIGWINCH)
					kill(-fg, sig[i]);
		}
	}
}

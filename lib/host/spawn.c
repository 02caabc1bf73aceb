/*
 * lib/host/spawn.c - posix_spawn wrappers for host programs (see spawn.h).
 */
#include "lib/host/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/*
 * The children spawn calls are waiting for. The lock is held from posix_spawn
 * until the pid is recorded, and by the reaper while it decides, so the reaper
 * never reaps a child that a spawn call will wait for.
 */
#define SPAWN_MAX_WAITING 256
static pthread_mutex_t waiting_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t waiting[SPAWN_MAX_WAITING];

static void track(pid_t pid, pid_t replace)
{
	for (int i = 0; i < SPAWN_MAX_WAITING; i++)
		if (waiting[i] == replace) {
			waiting[i] = pid;
			return;
		}
}

static int spawn_tracked(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, char *const argv[])
{
	pthread_mutex_lock(&waiting_lock);
	int rc = posix_spawnp(pid, file, fa, NULL, argv, environ);
	if (rc == 0)
		track(*pid, 0);
	pthread_mutex_unlock(&waiting_lock);
	return rc;
}

void spawn_reap_orphan(pid_t pid)
{
	pthread_mutex_lock(&waiting_lock);
	bool mine = false;
	for (int i = 0; i < SPAWN_MAX_WAITING; i++)
		mine |= waiting[i] == pid;
	if (!mine)
		waitpid(pid, NULL, WNOHANG);
	pthread_mutex_unlock(&waiting_lock);
}

static int wait_status(pid_t pid)
{
	int st, rc;
	while ((rc = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&waiting_lock);
	track(0, pid);
	pthread_mutex_unlock(&waiting_lock);
	if (rc < 0)
		return -ECHILD;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int spawn_full(const char *dir, char *const argv[], const int *keep, int nkeep, int out_fd, int err_fd,
		      pid_t *started);

int spawn_run(char *const argv[], int out_fd, int err_fd)
{
	return spawn_run_in(NULL, argv, out_fd, err_fd);
}

int spawn_run_in(const char *dir, char *const argv[], int out_fd, int err_fd)
{
	return spawn_full(dir, argv, NULL, 0, out_fd, err_fd, NULL);
}

/* spawn_full with keep duplicated out of the way first: no source is then a target (dup2
 * onto itself would leave close-on-exec set). */
static int spawn_keep(char *const argv[], const int *keep, int nkeep, int out_fd, int err_fd, pid_t *started)
{
	if (nkeep < 0 || nkeep > SPAWN_MAX_KEEP)
		return -EINVAL;
	int high[SPAWN_MAX_KEEP];
	int n = 0, rc = 0;
	for (; n < nkeep; n++)
		if ((high[n] = fcntl(keep[n], F_DUPFD_CLOEXEC, 3 + SPAWN_MAX_KEEP)) < 0) {
			rc = -errno;
			break;
		}
	if (rc == 0)
		rc = spawn_full(NULL, argv, high, nkeep, out_fd, err_fd, started);
	while (n-- > 0)
		close(high[n]);
	return rc;
}

pid_t spawn_start_keep(char *const argv[], const int *keep, int nkeep, int out_fd, int err_fd)
{
	pid_t pid = -1;
	int rc = spawn_keep(argv, keep, nkeep, out_fd, err_fd, &pid);
	return rc < 0 ? rc : pid;
}

/* With started, the child runs in its own session and is not waited for: *started is its pid. */
static int spawn_full(const char *dir, char *const argv[], const int *keep, int nkeep, int out_fd, int err_fd,
		      pid_t *started)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	posix_spawn_file_actions_init(&fa);
	if (dir)
		posix_spawn_file_actions_addchdir_np(&fa, dir);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	else
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	/* after stdio, which may come from a descriptor numbered like a target */
	for (int i = 0; i < nkeep; i++)
		posix_spawn_file_actions_adddup2(&fa, keep[i], 3 + i);
	int rc;
	if (started) {
		posix_spawnattr_t at;
		posix_spawnattr_init(&at);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
		rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
		posix_spawnattr_destroy(&at);
	} else {
		rc = spawn_tracked(&pid, argv[0], &fa, argv);
	}
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -rc;
	if (started) {
		*started = pid;
		return 0;
	}
	return wait_status(pid);
}

/* The file argv0 names, searched in PATH as execvp would, into out; -ENOENT if none. */
static int resolve(const char *argv0, char *out, size_t n)
{
	if (strchr(argv0, '/')) {
		snprintf(out, n, "%s", argv0);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, ":");
		if (len > 0 && (size_t)snprintf(out, n, "%.*s/%s", (int)len, p, argv0) < n && access(out, X_OK) == 0)
			return 0;
		p += len + (p[len] == ':');
	}
	return -ENOENT;
}

/* The child of spawn_run_netns: system calls only (spaced has threads). The folder is hidden
 * from inside nsfd (each network namespace has its own /proc/sys/net), then the child goes
 * home: runsc binds its sandbox's control socket, an abstract one, in the namespace it runs
 * in, and every later runsc command looks for it in spaced's. */
static void netns_child(const char *exe, char *const argv[], int nsfd, bool hide, int home, int devnull, int out_fd,
			int err_fd)
{
	if (hide && (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0))
		_exit(126);
	if (setns(nsfd, CLONE_NEWNET) < 0)
		_exit(126);
	if (hide && mount("none", "/proc/sys/net/core", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=4k,mode=0555") < 0)
		_exit(126);
	if (hide && setns(home, CLONE_NEWNET) < 0)
		_exit(126);
	if (dup2(devnull, 0) < 0 || dup2(out_fd >= 0 ? out_fd : devnull, 1) < 0 ||
	    dup2(err_fd >= 0 ? err_fd : devnull, 2) < 0)
		_exit(126);
	execve(exe, argv, environ);
	_exit(127);
}

int spawn_run_netns(char *const argv[], int nsfd, bool hide_net_core, int out_fd, int err_fd)
{
	char exe[PATH_MAX];
	int rc = resolve(argv[0], exe, sizeof(exe));
	if (rc < 0)
		return rc;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return -errno;
	int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0) {
		close(devnull);
		return -errno;
	}
	pthread_mutex_lock(&waiting_lock);
	pid_t pid = fork();
	if (pid == 0)
		netns_child(exe, argv, nsfd, hide_net_core, home, devnull, out_fd, err_fd);
	int ferr = errno;
	if (pid > 0)
		track(pid, 0);
	pthread_mutex_unlock(&waiting_lock);
	close(devnull);
	close(home);
	if (pid < 0)
		return -ferr;
	return wait_status(pid);
}

int spawn_capture(char *const argv[], char *out, size_t n)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	int rc = spawn_tracked(&pid, argv[0], &fa, argv);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		return -rc;
	}
	size_t used = 0;
	for (;;) {
		char scratch[4096];
		char *dst = used + 1 < n ? out + used : scratch;
		size_t room = used + 1 < n ? n - 1 - used : sizeof(scratch);
		ssize_t r = read(p[0], dst, room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (dst != scratch)
			used += (size_t)r;
	}
	close(p[0]);
	if (n)
		out[used] = '\0';
	return wait_status(pid);
}

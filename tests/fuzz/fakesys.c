/*
 * tests/fuzz/fakesys.c - the fake system calls of fakesys.h, and a spawn_start
 * that starts nothing.
 *
 * Compiled without fakesys.h. A path's fate is a hash of its bytes, so the
 * same input always takes the same paths: missing, a directory (the scratch
 * directory), a regular file (a memfd of up to 192 KiB of zeros, enough to
 * span several download frames) or a symlink; mutations return success or
 * a plausible errno and change nothing.
 */
#include "fakesys_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/spawn.h"

static char scratch[64];
static int drain_fd = -1;

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static void rm_scratch(void)
{
	if (!scratch[0])
		return;
	static const char *names[] = { "a.txt", "b.bin", ".hidden", "z" };
	char p[128];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", scratch, names[i]);
		if (i == 3)
			rmdir(p);
		else
			unlink(p);
	}
	rmdir(scratch);
}

void fz_sys_init(void)
{
	snprintf(scratch, sizeof(scratch), "/tmp/space-fuzz-agent-XXXXXX");
	if (!mkdtemp(scratch))
		abort();
	static const char *files[] = { "a.txt", "b.bin", ".hidden" };
	char p[128];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", scratch, files[i]);
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
	}
	snprintf(p, sizeof(p), "%s/z", scratch);
	mkdir(p, 0755);
	atexit(rm_scratch);
}

void fz_sys_set_drain(int fd)
{
	drain_fd = fd;
}

static int fail(int e)
{
	errno = e;
	return -1;
}

static int memfd(uint32_t h)
{
	int fd = memfd_create("space-fuzz", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, (off_t)(h % (192 * 1024))) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int fz_open(const char *path, int flags, ...)
{
	uint32_t h = hash(path);
	if (flags & O_DIRECTORY)
		return h % 4 == 0 ? fail(ENOENT) : open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (flags & O_CREAT) {
		if ((flags & O_EXCL) && h % 7 == 0)
			return fail(EEXIST);
		return h % 11 == 0 ? fail(EACCES) : memfd(0);
	}
	switch (h % 5) {
	case 0:
		return fail(ENOENT);
	case 1:
		return open(scratch, O_RDONLY | O_CLOEXEC);
	case 2:
		return open("/dev/null", O_RDONLY | O_CLOEXEC); /* not a regular file */
	default:
		return memfd(h);
	}
}

static int fake_stat(const char *path, struct stat *st)
{
	uint32_t h = hash(path);
	memset(st, 0, sizeof(*st));
	st->st_mtime = (time_t)h;
	st->st_size = h % 100000;
	switch (h % 4) {
	case 0:
		return fail(ENOENT);
	case 1:
		st->st_mode = S_IFDIR | 0755;
		return 0;
	case 2:
		st->st_mode = S_IFLNK | 0777;
		return 0;
	default:
		st->st_mode = S_IFREG | 0644;
		return 0;
	}
}

int fz_stat(const char *path, struct stat *st)
{
	int r = fake_stat(path, st);
	if (r == 0 && S_ISLNK(st->st_mode))
		st->st_mode = S_IFREG | 0644;
	return r;
}

int fz_lstat(const char *path, struct stat *st)
{
	return fake_stat(path, st);
}

int fz_mkdir(const char *path, mode_t mode)
{
	uint32_t h = hash(path);
	return h % 3 == 0 ? fail(EEXIST) : h % 13 == 0 ? fail(EACCES) : 0;
}

int fz_chmod(const char *path, mode_t mode)
{
	return 0;
}

int fz_rmdir(const char *path)
{
	return hash(path) % 9 == 0 ? fail(ENOTEMPTY) : 0;
}

int fz_unlink(const char *path)
{
	return hash(path) % 9 == 0 ? fail(ENOENT) : 0;
}

int fz_rename(const char *from, const char *to)
{
	return (hash(from) ^ hash(to)) % 5 == 0 ? fail(EXDEV) : 0;
}

int fz_sethostname(const char *name, size_t len)
{
	return hash(name) % 5 == 0 ? fail(EPERM) : (int)(len & 0); /* the machine keeps its name */
}

int fz_ioctl(int fd, unsigned long req, ...)
{
	(void)fd;
	(void)req;
	return fail(ENOTTY); /* no descriptor of the fakes takes one; nothing real is touched */
}

int fz_nftw(const char *path, __nftw_func_t fn, int nfds, int flags)
{
	struct stat st = { .st_mode = S_IFREG | 0644 };
	struct FTW ftw = { .base = 0, .level = 1 };
	char child[4200];
	snprintf(child, sizeof(child), "%s/child", path);
	int r = fn(child, &st, FTW_F, &ftw);
	if (r)
		return r;
	st.st_mode = S_IFDIR | 0755;
	ftw.level = 0;
	return fn(path, &st, FTW_DP, &ftw);
}

void fz_sync(void)
{
}

int fz_kill(pid_t pid, int sig)
{
	return fail(ESRCH);
}

/* The agent waits for its socket to take more (H_DETACH): make room by reading it. */
int fz_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	char junk[65536];
	if (drain_fd >= 0)
		while (recv(drain_fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
			;
	for (nfds_t i = 0; i < n; i++)
		fds[i].revents = fds[i].events;
	return (int)n;
}

/* Starts nothing: checks the request the agent built and hands back pipes whose other
 * ends are closed, and a pid no process has. */
int spawn_start(const struct spawn_req *r, struct spawn_out *o, char *msg, size_t msglen)
{
	static pid_t next = 0x40000000;
	size_t total = 0;
	for (size_t i = 0; i < r->argc; i++)
		total += strlen(r->argv[i]);
	if (r->argv[r->argc] != NULL)
		abort();
	for (char *const *e = r->envp; *e; e++)
		total += strlen(*e);
	total += strlen(r->cwd);
	if (total % 17 == 0) {
		snprintf(msg, msglen, "exec %s: No such file or directory", r->argv[0]);
		return -ENOENT;
	}
	int in[2] = { -1, -1 }, out[2], err[2];
	if ((r->want_stdin && pipe2(in, O_CLOEXEC | O_NONBLOCK) < 0) || pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(err, O_CLOEXEC | O_NONBLOCK) < 0) {
		snprintf(msg, msglen, "pipe: out of descriptors");
		return -EMFILE;
	}
	if (in[0] >= 0)
		close(in[0]);
	close(out[1]);
	close(err[1]);
	*o = (struct spawn_out){ .pid = next++, .in = in[1], .out = out[0], .err = err[0] };
	return 0;
}

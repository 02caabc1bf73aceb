/*
 * daemon/driver/vm_log.c - the log keeper of a microVM: two pipes from QEMU
 * into two bounded files (see vm_log.h).
 */
#include "daemon/driver/vm_log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/host/spawn.h"

#define HALF (VM_LOG_MAX / 2)
#define CHUNK (64 * 1024)

static const char *const NAMES[VM_LOG_STREAMS] = { "console.log", "qemu.log" };
static const char *const OLDER[VM_LOG_STREAMS] = { "console.log.1", "qemu.log.1" };

pid_t vm_log_start(const char *vmdir, int qemu_ends[VM_LOG_STREAMS])
{
	int pipes[VM_LOG_STREAMS][2], ours[VM_LOG_STREAMS];
	int made = 0, rc = 0;
	for (; made < VM_LOG_STREAMS; made++) {
		if (pipe2(pipes[made], O_CLOEXEC) < 0) {
			rc = -errno;
			break;
		}
		ours[made] = pipes[made][0];
		if (fcntl(pipes[made][1], F_SETFL, O_NONBLOCK) < 0) {
			rc = -errno;
			made++; /* closed below with the others */
			break;
		}
	}
	pid_t pid = rc;
	if (rc == 0) {
		char *argv[] = { "/proc/self/exe", VM_LOG_KEEPER_ARG, (char *)vmdir, NULL };
		pid = spawn_start_keep(argv, ours, VM_LOG_STREAMS, -1, -1);
	}
	for (int i = 0; i < made; i++) {
		close(pipes[i][0]);
		if (pid < 0)
			close(pipes[i][1]);
		else
			qemu_ends[i] = pipes[i][1];
	}
	return pid;
}

void vm_log_settle(const char *vmdir)
{
	char path[800];
	snprintf(path, sizeof(path), "%s/log.lock", vmdir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* no keeper ever ran here */
	/* flock has no deadline of its own: tried every 10 ms, within VM_LOG_SETTLE_MS */
	for (int waited = 0; waited < VM_LOG_SETTLE_MS; waited += 10) {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	close(fd);
}

/* ---- the keeper ---- */

struct sink {
	int dirfd, in, out;
	int which;
	uint64_t size;    /* of NAME */
	uint64_t dropped; /* bytes of output pushed out so far */
	uint64_t mark[2]; /* bytes of NAME and of NAME.1 that are our counting line, not output */
};

/* Writes all of buf, or gives up on the rest (a full disk: those bytes are dropped). */
static void put_all(struct sink *s, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(s->out, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->dropped += n;
			return;
		}
		buf += w;
		n -= (size_t)w;
		s->size += (uint64_t)w;
	}
}

static int sink_open(struct sink *s, bool fresh)
{
	if (s->out >= 0)
		close(s->out);
	s->out = openat(s->dirfd, NAMES[s->which], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (fresh ? O_TRUNC : 0),
			0600);
	struct stat st;
	s->size = s->out >= 0 && fstat(s->out, &st) == 0 ? (uint64_t)st.st_size : 0;
	return s->out < 0 ? -errno : 0;
}

/* NAME becomes NAME.1 (what NAME.1 held is dropped and counted) and a new NAME starts, with a
 * line saying how much was dropped so far. */
static void sink_rotate(struct sink *s)
{
	struct stat st;
	if (fstatat(s->dirfd, OLDER[s->which], &st, 0) == 0 && (uint64_t)st.st_size > s->mark[1])
		s->dropped += (uint64_t)st.st_size - s->mark[1];
	s->mark[1] = 0;
	/* a NAME past the half (written before there was a keeper) is dropped whole, not kept */
	if (s->size > HALF || renameat(s->dirfd, NAMES[s->which], s->dirfd, OLDER[s->which]) < 0)
		s->dropped += s->size - s->mark[0]; /* NAME itself is cut instead */
	else
		s->mark[1] = s->mark[0];
	s->mark[0] = 0;
	if (sink_open(s, true) < 0 || !s->dropped)
		return;
	char line[96];
	int k = snprintf(line, sizeof(line), "[space: %llu earlier bytes of this log were dropped]\n",
			 (unsigned long long)s->dropped);
	uint64_t before = s->size;
	put_all(s, line, (size_t)k);
	s->mark[0] = s->size - before;
}

static void sink_put(struct sink *s, const char *buf, size_t n)
{
	while (n > 0) {
		if (s->out < 0 || s->size >= HALF)
			sink_rotate(s);
		if (s->out < 0) {
			s->dropped += n;
			return;
		}
		size_t room = HALF - s->size;
		size_t k = n < room ? n : room;
		put_all(s, buf, k);
		buf += k;
		n -= k;
	}
}

int vm_log_keep(const char *vmdir)
{
	int dirfd = open(vmdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 1;
	/* held until the keeper ends: vm_log_settle waits on it */
	int lock = openat(dirfd, "log.lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return 1;
	struct sink sinks[VM_LOG_STREAMS];
	struct pollfd pf[VM_LOG_STREAMS];
	for (int i = 0; i < VM_LOG_STREAMS; i++) {
		sinks[i] = (struct sink){ .dirfd = dirfd, .in = 3 + i, .out = -1, .which = i };
		sink_open(&sinks[i], false);
		pf[i] = (struct pollfd){ .fd = 3 + i, .events = POLLIN };
	}
	static char buf[CHUNK];
	int open_ends = VM_LOG_STREAMS;
	while (open_ends > 0) {
		if (poll(pf, VM_LOG_STREAMS, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		for (int i = 0; i < VM_LOG_STREAMS; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			ssize_t n = read(pf[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) { /* QEMU's end is closed: it ended */
				close(pf[i].fd);
				pf[i].fd = -1;
				open_ends--;
				continue;
			}
			sink_put(&sinks[i], buf, (size_t)n);
		}
	}
	return 0;
}

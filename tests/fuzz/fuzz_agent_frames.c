/*
 * tests/fuzz/fuzz_agent_frames.c - host -> agent: the byte stream space-agent
 * reads from spaced, through the agent's real reader (agent/conn.c), its
 * dispatch table (agent/dispatch.c) and its real handlers: exec parsing and
 * process bookkeeping (proc.c, user.c, spawn.c's environment), file
 * operations (files.c) and transfers (xfer.c).
 *
 * Those sources are compiled with fakesys.h force-included, so their file
 * system calls, kill() and the agent's one blocking poll() go to fakes
 * (fakesys.c) and spawn_start starts nothing: the fuzzer can send H_REMOVE
 * "/" or H_SIGNAL 9 without consequence.
 *
 * Each input starts a fresh agent connected to a socketpair. The input is
 * written to the socket and the agent's socket callback runs until it has
 * read everything (or dropped the connection, as it must on a malformed
 * frame); downloads and listings are pumped, and whatever the agent answers
 * is read back and checked to be well-formed frames of the agent's kinds,
 * each within SP_MAX_PAYLOAD, with A_HELLO never among them (it is sent only
 * on connect). Every descriptor and allocation is released after the input
 * (LeakSanitizer).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/dispatch.h"
#include "fakesys_impl.h"
#include "lib/buf.h"
#include "lib/frame.h"

static struct agent a;
static int host_fd = -1;
static struct buf answers;

/* What main.c provides to the modules: the clocks, the log and the poll set. */
uint64_t agent_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t agent_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void agent_log(const char *fmt, ...)
{
}

void pollset_add(struct pollset *ps, int fd, short events, watch_fn *fn, void *obj)
{
	if (ps->n >= AGENT_MAX_FDS)
		return;
	ps->fds[ps->n] = (struct pollfd){ .fd = fd, .events = events };
	ps->fn[ps->n] = fn;
	ps->obj[ps->n] = obj;
	ps->n++;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_sys_init();
	return 0;
}

static void start(void)
{
	memset(&a, 0, sizeof(a));
	a.sigfd = -1;
	a.boot_id = 42;
	if (conn_init(&a, &conn_unix, "/nonexistent/agent.sock", &dispatch_hooks) < 0)
		abort();
	proc_init(&a);
	xfer_init(&a);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	int big = 8 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	a.conn.fd = sv[0];
	a.conn.generation = 1;
	host_fd = sv[1];
	fz_sys_set_drain(host_fd);
}

static void read_answers(void)
{
	for (;;) {
		uint8_t *dst = buf_reserve(&answers, 65536);
		if (!dst)
			return;
		ssize_t r = recv(host_fd, dst, 65536, MSG_DONTWAIT);
		if (r <= 0)
			return;
		buf_commit(&answers, (size_t)r);
	}
}

/* One round of the agent's loop for the connection: its socket callback, then transfers. */
static void agent_round(void)
{
	struct pollset ps = { .n = 0 };
	conn_watch(&a, &ps);
	for (unsigned i = 0; i < ps.n; i++)
		ps.fn[i](&a, ps.obj[i], ps.fds[i].fd, (short)(ps.fds[i].events & (POLLIN | POLLOUT)));
	xfer_pump(&a);
	conn_flush(&a);
	read_answers();
}

static void feed(const uint8_t *data, size_t size)
{
	size_t sent = 0;
	for (int idle = 0; idle < 64 && conn_up(&a);) {
		if (sent < size) {
			ssize_t w = send(host_fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
		}
		int queued = 0;
		ioctl(a.conn.fd, FIONREAD, &queued);
		if (queued == 0 && sent == size) {
			/* everything read: a few more rounds let transfers finish */
			if (!xfer_busy(&a))
				break;
			idle++;
		}
		agent_round();
	}
	read_answers();
}

static void check_answers(void)
{
	bool debug = getenv("FUZZ_DEBUG") != NULL; /* lists the answers, to see what a seed reaches */
	size_t pos = 0;
	while (pos < answers.len) {
		struct frame f;
		long used = frame_parse(answers.data + pos, answers.len - pos, &f);
		if (used == 0)
			break; /* the agent dropped the connection in the middle of a frame */
		assert(used > 0);
		/* H_OPEN: A_OPEN, A_HELLO; H_PORTS: A_PORT, each of a family, then A_END */
		assert((f.type >= SP_A_HELLO && f.type <= SP_A_END) || f.type == SP_A_OPEN || f.type == SP_A_PORT);
		if (f.type == SP_A_PORT) {
			assert(f.len == sizeof(struct sp_port));
			const struct sp_port *p = (const void *)f.payload;
			assert(p->family == SP_FAMILY_IPV4 || p->family == SP_FAMILY_IPV6);
		}
		if (debug)
			fprintf(stderr, "answer type %u chan %#x len %u\n", f.type, f.chan, f.len);
		if (f.type == SP_A_ERROR) {
			size_t off = sizeof(struct sp_error);
			assert(frame_need(&f, off) == 0 && frame_str(&f, &off) != NULL && off == f.len);
		}
		pos += (size_t)used;
	}
}

static void stop(void)
{
	xfer_abandon_all(&a);
	struct proc_table *t = &a.procs;
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		struct proc *p = &t->slots[i];
		if (p->state == PROC_FREE)
			continue;
		for (int k = 0; k < 2; k++)
			if (p->out[k] >= 0)
				close(p->out[k]);
		if (p->in >= 0)
			close(p->in);
		while (p->in_head) {
			struct stdin_chunk *c = p->in_head;
			p->in_head = c->next;
			free(c);
		}
		free(p->cmdline);
	}
	for (unsigned k = 0; k < SP_EXITED_KEEP; k++)
		free(t->exited[k].cmdline);
	while (a.conn.head) {
		struct outframe *o = a.conn.head;
		a.conn.head = o->next;
		free(o);
	}
	if (a.conn.fd >= 0)
		close(a.conn.fd);
	free(a.conn.in);
	close(host_fd);
	host_fd = -1;
	fz_sys_set_drain(-1);
	buf_free(&answers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	start();
	feed(data, size);
	check_answers();
	stop();
	return 0;
}

/*
 * tests/fuzz/fuzz_daemon_frames.c - agent -> host: the bytes a sandbox's
 * agent (or anything inside the sandbox that connects to its socket in the
 * agent's place) sends to spaced, read and checked by the real transport
 * (daemon/io/chan.c), dispatched through the real handler table
 * (daemon/core/peer.c) and turned into answers by the real daemon/core/op.c.
 *
 * The target runs the channel's own event callback, as the I/O thread does,
 * on one sandbox whose agent is the other end of a socketpair
 * (harness_daemon.c). The connection starts in service; every third input
 * starts it afresh instead (before the hello), so the hello, its listing and
 * the phase checks are reached too. Before each input, requests of
 * every kind wait on the sandbox: a captured exec, a streamed exec, a
 * background start, a listing, a stat, a download, an upload and a folder
 * watch (each under its tag), two stream readers of process 100 and two waiters
 * on process 101; process 102 has the "drop" output policy and a stream reader, 103 the same
 * policy and none.
 * The input is written to the socket and read by on_readable until spaced
 * has taken all of it (or dropped the connection). Then the streams are
 * read as the HTTP layer would (op_take), which returns credit to the agent.
 *
 * Checked: no memory error or undefined behaviour (ASan, UBSan) whatever the
 * bytes, and every answer that came out is a status with a JSON body or an
 * error with a code.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/core/peer.h"
#include "daemon/core/proc.h"
#include "daemon/core/sandbox.h"
#include "harness_daemon.h"

static struct fz z;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_daemon_init(&z);
	return 0;
}

enum { N_OPS = 13 };

static struct op *linked(enum op_kind kind, bool stream, const char *path, bool list)
{
	struct op *op = fz_op(&z, NULL, 0);
	op->kind = kind;
	op->stream = stream;
	op->exec.t0 = mono_ms();
	op->what = strdup(path ? path : "cmd");
	if (path)
		json_object_set_new(op->query, "path", json_string(path));
	if (list)
		op->json = json_array();
	op_link(op, z.sb);
	return op;
}

/* A stream reader of p's output, as GET .../output makes. */
static struct op *reader_of(struct proc *p)
{
	struct op *reader = fz_op(&z, NULL, 0);
	reader->kind = OP_ATTACH;
	reader->stream = true;
	reader->responding = true;
	reader->sb = z.sb;
	op_attach(reader, p);
	return reader;
}

static void setup(struct op *ops[N_OPS])
{
	ops[0] = linked(OP_EXEC, false, NULL, false);
	ops[1] = linked(OP_EXEC, true, NULL, false);
	ops[2] = linked(OP_EXEC, false, NULL, false);
	ops[2]->exec.background = true;
	ops[3] = linked(OP_CALL, false, "/work", true);
	ops[4] = linked(OP_CALL, false, "/work/a.txt", false);
	ops[5] = linked(OP_READ, false, "/work/big.bin", false);
	ops[6] = linked(OP_WRITE, false, "/work/up.bin", false);
	ops[6]->upload.credit = SP_WINDOW;
	ops[12] = linked(OP_WATCH, true, "/work", false);

	struct proc *p = proc_get(z.sb, 100);
	ops[7] = reader_of(p);
	ops[10] = reader_of(p);
	struct proc *dropping = proc_get(z.sb, 102);
	dropping->drop = true;
	ops[11] = reader_of(dropping);
	proc_get(z.sb, 103)->drop = true;

	struct proc *q = proc_get(z.sb, 101);
	for (int i = 8; i < 10; i++) {
		struct op *w = fz_op(&z, NULL, 0);
		w->kind = i == 8 ? OP_WAIT : OP_STDIN;
		w->sb = z.sb;
		w->proc = q;
		w->next = q->waiters;
		q->waiters = w;
		ops[i] = w;
	}
}

/* Feeds the input to spaced through the socket until it has read all of it. */
static void feed(const uint8_t *data, size_t size)
{
	size_t sent = 0;
	for (;;) {
		if (z.sb->chan.fd < 0)
			return; /* spaced dropped the connection */
		if (sent < size) {
			ssize_t w = send(z.agent_fd, data + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
		}
		int queued = 0;
		if (ioctl(z.sb->chan.fd, FIONREAD, &queued) < 0 || queued == 0) {
			if (sent == size)
				return;
			continue;
		}
		z.sb->chan.csrc.fn(&z.sb->chan.csrc, EPOLLIN);
		/* what spaced answers (H_PS, credit) must not fill the socket */
		uint8_t *junk;
		size_t n;
		fz_drain(&z, &junk, &n);
		free(junk);
	}
}

static void check_answer(struct op *op)
{
	if (op->err.kind) {
		assert(op->err.kind > ERR_NONE && op->err.kind < ERR_KINDS);
		assert(err_code(op->err.kind)[0]);
	}
	if (op->done && !op->err.kind && !op->responding && op->json)
		assert(json_is_object(op->json) || json_is_array(op->json));
	/* read the stream as the HTTP layer would, returning credit */
	uint8_t buf[65536];
	for (int i = 0; i < 64 && buf_avail(&op->out) > 0; i++) {
		uint32_t credit = 0;
		op_take(op, buf, sizeof(buf), &credit);
		op_return_credit(op, credit);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op *ops[N_OPS];
	static unsigned round;
	daemon_lock(&z.d);
	setup(ops);
	if (++round % 3 == 0)
		z.sb->chan.phase = CHAN_OPEN; /* a fresh connection: the hello comes first */
	daemon_unlock(&z.d);

	feed(data, size);

	daemon_lock(&z.d);
	for (int i = 0; i < N_OPS; i++)
		check_answer(ops[i]);
	for (int i = 0; i < N_OPS; i++)
		fz_op_free(ops[i]);
	fz_reset(&z);
	daemon_unlock(&z.d);
	return 0;
}

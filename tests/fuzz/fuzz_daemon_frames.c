/*
 * tests/fuzz/fuzz_daemon_frames.c - agent -> host: the bytes a sandbox's
 * agent (or anything inside the sandbox that connects to its socket in the
 * agent's place) sends to spaced, read and dispatched by the real
 * daemon/agent.c and turned into answers by the real daemon/op.c.
 *
 * daemon/agent.c is included, not linked, to reach its reader
 * (on_readable) and dispatcher, which are static: the target then runs the
 * exact code of spaced's I/O thread on one sandbox whose agent is the other
 * end of a socketpair (harness_daemon.c). Before each input, requests of
 * every kind wait on the sandbox: a captured exec, a streamed exec, a
 * background start, a listing, a stat, a download and an upload (each under
 * its tag), a stream reader of process 100 and two waiters on process 101.
 * The input is written to the socket and read by on_readable until spaced
 * has taken all of it (or dropped the connection). Then the streams are
 * read as the HTTP layer would (op_take), which returns credit to the agent.
 *
 * Checked: no memory error or undefined behaviour (ASan, UBSan) whatever the
 * bytes, and every answer that came out is a status with a JSON body or an
 * error with a code.
 */
#include "daemon/io/agent.c"

#include <assert.h>
#include <sys/ioctl.h>

#include "daemon/core/sandbox.h"
#include "harness_daemon.h"

static struct fz z;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_daemon_init(&z);
	return 0;
}

enum { N_OPS = 10 };

static struct op *linked(enum op_kind kind, bool stream, const char *path, bool list)
{
	struct op *op = fz_op(&z, NULL, 0);
	op->kind = kind;
	op->stream = stream;
	op->t0 = mono_ms();
	op->what = strdup(path ? path : "cmd");
	if (path)
		json_object_set_new(op->query, "path", json_string(path));
	if (list)
		op->json = json_array();
	op_link(op, z.sb);
	return op;
}

static void setup(struct op *ops[N_OPS])
{
	ops[0] = linked(OP_EXEC, false, NULL, false);
	ops[1] = linked(OP_EXEC, true, NULL, false);
	ops[2] = linked(OP_EXEC, false, NULL, false);
	ops[2]->background = true;
	ops[3] = linked(OP_CALL, false, "/work", true);
	ops[4] = linked(OP_CALL, false, "/work/a.txt", false);
	ops[5] = linked(OP_READ, false, "/work/big.bin", false);
	ops[6] = linked(OP_WRITE, false, "/work/up.bin", false);
	ops[6]->credit = SP_WINDOW;

	struct proc *p = agent_proc(z.sb, 100, true);
	struct op *reader = fz_op(&z, NULL, 0);
	reader->kind = OP_ATTACH;
	reader->stream = true;
	reader->responding = true;
	reader->sb = z.sb;
	op_attach(reader, p);
	ops[7] = reader;

	struct proc *q = agent_proc(z.sb, 101, true);
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
		on_readable(&z.d, z.sb);
		/* what spaced answers (H_PS, credit) must not fill the socket */
		uint8_t *junk;
		size_t n;
		fz_drain(&z, &junk, &n);
		free(junk);
	}
}

static void check_answer(struct op *op)
{
	if (op->err.status) {
		assert(op->err.status >= 400 && op->err.status < 600);
		assert(op->err.code[0]);
	}
	if (op->done && !op->err.status && !op->responding && op->json)
		assert(json_is_object(op->json) || json_is_array(op->json));
	/* read the stream as the HTTP layer would, returning credit */
	uint8_t buf[65536];
	for (int i = 0; i < 64 && buf_avail(&op->out) > 0; i++) {
		uint32_t credit = 0;
		op_take(op, buf, sizeof(buf), &credit);
		if (op->sb && credit && op->proc) {
			uint32_t give = credit < op->proc->owed ? credit : op->proc->owed;
			op->proc->owed -= give;
			agent_credit(op->d, op->sb, op->proc->pid, give);
		} else if (op->sb && credit && op->kind == OP_READ) {
			agent_credit(op->d, op->sb, op->tag, credit);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct op *ops[N_OPS];
	daemon_lock(&z.d);
	setup(ops);
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

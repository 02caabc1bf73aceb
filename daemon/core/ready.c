/*
 * daemon/core/ready.c - a template's start command and its ready check (ready.h).
 */
#include "daemon/core/ready.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/core/op.h"
#include "daemon/core/proc.h"
#include "lib/buf.h"

static int put_str(struct buf *b, const char *s)
{
	return buf_put(b, s, strlen(s) + 1);
}

/* Sends H_EXEC for op: `/bin/sh -c script` as a process of sb that names no user, folder or
 * environment, killed after timeout_ms (0: never). [L] */
static int send_script(struct op *op, struct sandbox *sb, const char *script, uint32_t timeout_ms)
{
	struct sp_exec x = { .argc = 3, .timeout_ms = timeout_ms };
	if (sb->conf.has_user) {
		x.uid = sb->conf.uid;
		x.gid = sb->conf.gid;
	}
	struct buf s = { 0 };
	int rc = put_str(&s, "") < 0 || put_str(&s, sb->conf.workdir) < 0 || put_str(&s, "/bin/sh") < 0 ||
			 put_str(&s, "-c") < 0 || put_str(&s, script) < 0
		 ? -ENOMEM
		 : 0;
	if (rc == 0 && sizeof(x) + buf_avail(&s) > SP_MAX_PAYLOAD)
		rc = -E2BIG;
	if (rc == 0) {
		op->kind = OP_EXEC;
		op->exec.t0 = mono_ms();
		op_link(op, sb);
		rc = chan_send(&sb->chan, SP_H_EXEC, op->tag, &x, sizeof(x), buf_head(&s), buf_avail(&s));
		if (rc < 0)
			op_unlink(op);
	}
	buf_free(&s);
	return rc;
}

/* Runs script in sb and waits, d->lock released, for its answer: its pid once started
 * (background), or its exit (op->json). The op, or NULL with e filled. [L] */
static struct op *run(struct daemon *d, struct sandbox *sb, const char *what, const char *script, bool background,
		      uint32_t timeout_ms, struct err *e)
{
	struct op *op = calloc(1, sizeof(*op));
	if (!op || !(op->what = strdup(what))) {
		free(op);
		err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
		return NULL;
	}
	op->d = d;
	op->exec.background = background;
	int rc = send_script(op, sb, script, timeout_ms);
	if (rc < 0) {
		op_free(op);
		err_set(e, rc == -E2BIG ? ERR_NOT_READY : ERR_UNAVAILABLE, -rc,
			"sandbox %s: %s: %s", sb->id, what, rc == -E2BIG ? "the command is too long" : "cannot reach its agent");
		return NULL;
	}
	/* the agent ends the command at timeout_ms; beyond that, only a lost agent keeps it */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (timeout_ms + AGENT_HELLO_TIMEOUT_MS) / 1000;
	while (!op->done && daemon_wait(d, &until) != ETIMEDOUT)
		;
	if (!op->done) {
		op_unlink(op);
		op_free(op);
		err_set(e, ERR_INTERNAL, ETIMEDOUT, "sandbox %s: %s: its agent did not answer", sb->id, what);
		return NULL;
	}
	if (op->err.kind) {
		*e = op->err;
		op_free(op);
		return NULL;
	}
	return op;
}

/* The last READY_LOG_TAIL bytes of the start command's output, one line, into out. [L] */
static void log_tail(struct daemon *d, struct sandbox *sb, char *out, size_t n)
{
	char script[96];
	struct err e = { 0 };
	snprintf(script, sizeof(script), "tail -c %d %s", READY_LOG_TAIL, READY_START_LOG);
	struct op *op = run(d, sb, "reading the start command's output", script, false, 5000, &e);
	const char *text = op ? json_string_value(json_object_get(op->json, "stdout")) : NULL;
	snprintf(out, n, "%s", text && *text ? text : "(none)");
	for (char *c = out; *c; c++)
		if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
	if (op)
		op_free(op);
}

int ready_run(struct daemon *d, struct sandbox *sb, const char *start, const char *ready, struct err *e)
{
	uint32_t pid = 0;
	char *script = NULL;
	if (start) {
		if (asprintf(&script, "exec >>%s 2>&1 </dev/null\n%s", READY_START_LOG, start) < 0)
			return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
		struct op *op = run(d, sb, start, script, true, 0, e);
		free(script);
		if (!op)
			return -EIO;
		pid = op->pid;
		op_free(op);
	}
	if (!ready)
		return 0;
	/* one process polls, so a create costs one request however long the start takes; it
	 * gives up (97) once the start command's process is gone */
	char alive[64] = "";
	if (pid)
		snprintf(alive, sizeof(alive), "[ -d /proc/%u ] || exit 97\n", pid);
	if (asprintf(&script, "while ! { %s\n} >/dev/null 2>&1 </dev/null; do\n%ssleep %d.%03d\ndone", ready, alive,
		     READY_POLL_MS / 1000, READY_POLL_MS % 1000) < 0)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	int64_t timeout_ms = (int64_t)d->cfg.ready_timeout_s * 1000;
	struct op *op = run(d, sb, ready, script, false, (uint32_t)timeout_ms, e);
	free(script);
	if (!op)
		return -EIO;
	json_t *r = op->json;
	int code = (int)json_integer_value(json_object_get(r, "exit_code"));
	bool late = json_is_true(json_object_get(r, "timed_out"));
	op_free(op);
	if (code == 0 && !late)
		return 0;
	char tail[READY_LOG_TAIL + 1];
	log_tail(d, sb, tail, sizeof(tail));
	if (late)
		return err_set(e, ERR_NOT_READY, ETIMEDOUT,
			       "the template's ready command did not succeed within %d s; the start command's output ends: %s",
			       d->cfg.ready_timeout_s, tail);
	if (code == 97 && pid)
		return err_set(e, ERR_NOT_READY, ECHILD,
			       "the template's start command ended before its ready command succeeded; its output ends: %s",
			       tail);
	return err_set(e, ERR_NOT_READY, EIO, "the template's ready command ended with %d; the start command's output ends: %s",
		       code, tail);
}

/*
 * daemon/api/api_exec.c - routes that run and manage processes in a sandbox:
 * exec (one result or an NDJSON stream), background processes, their
 * output, stdin, signals and waiting.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/codec.h"
#include "daemon/core/proc.h"
#include "daemon/api/api.h"
#include "daemon/core/sandbox.h"

#define EXEC_MAX_TIMEOUT_S (7 * 24 * 3600)
#define EXEC_MAX_STDIN SP_WINDOW /* bytes given inline with "stdin"; more goes through /stdin */

static const struct field exec_fields[] = {
	{ "cmd", F_ARGV_OR_STRING }, { "env", F_STRMAP }, { "cwd", F_STRING }, { "stdin", F_STRING },
	{ "stdin_b64", F_STRING }, { "timeout", F_NUMBER }, { "user", F_STRING }, { "stream", F_BOOL },
	{ "stdin_open", F_BOOL }, { "tag", F_STRING }, { "pty", F_OBJECT_OR_FALSE }, { "output", F_STRING },
	{ NULL, 0 },
};

/* A terminal's size from {"cols": C, "rows": R}, each 1..SP_PTY_MAX. Returns 0 or -EINVAL with
 * op->err set. */
static int parse_winsize(struct op *op, json_t *o, uint8_t ws[sizeof(struct sp_winsize)])
{
	json_t *cols = json_object_get(o, "cols"), *rows = json_object_get(o, "rows");
	if (!json_is_integer(cols) || !json_is_integer(rows) || json_object_size(o) != 2)
		return err_set(&op->err, ERR_INVALID, EINVAL,
			       "a terminal's size is {\"cols\": C, \"rows\": R}, both integers");
	json_int_t c = json_integer_value(cols), r = json_integer_value(rows);
	if (c < 1 || c > SP_PTY_MAX || r < 1 || r > SP_PTY_MAX)
		return err_set(&op->err, ERR_INVALID, EINVAL,
			       "a terminal has 1..%u columns and 1..%u rows", SP_PTY_MAX, SP_PTY_MAX);
	frame_put_u16(ws + offsetof(struct sp_winsize, cols), (uint16_t)c);
	frame_put_u16(ws + offsetof(struct sp_winsize, rows), (uint16_t)r);
	return 0;
}

/* Whether sb's agent can start terminals; else op->err says why (409). */
static bool agent_has_pty(struct op *op, const struct sandbox *sb)
{
	if (sb->peer.version >= 2)
		return true;
	err_set(&op->err, ERR_CONFLICT, ENOTSUP,
		"sandbox %s runs an agent of protocol %u, from before terminals: start one in a new sandbox",
		sb->id, sb->peer.version);
	return false;
}

static int put_str(struct buf *b, const char *s)
{
	return buf_put(b, s, strlen(s) + 1);
}

/* Joins argv with spaces, for listings and messages. */
static char *join_cmd(json_t *cmd)
{
	if (json_is_string(cmd))
		return strdup(json_string_value(cmd));
	struct buf b = { 0 };
	size_t i;
	json_t *a;
	json_array_foreach(cmd, i, a) {
		if (i)
			buf_put(&b, " ", 1);
		buf_put(&b, json_string_value(a), json_string_length(a));
	}
	buf_put(&b, "", 1);
	return (char *)b.data;
}

/* Builds and sends H_EXEC for op from its validated body, with flags (SP_EXEC_*) added. */
/* Checks an exec's fields that need no encoding: cmd, tag, output, cwd, timeout and pty (whose
 * size goes to ws). Returns 0 or -errno with op->err set. */
static int exec_check(struct op *op, struct sandbox *sb, json_t *body, uint8_t *ws)
{
	const char *cwd = json_string_value(json_object_get(body, "cwd"));
	const char *tag = json_string_value(json_object_get(body, "tag"));
	const char *output = json_string_value(json_object_get(body, "output"));
	json_t *tmo = json_object_get(body, "timeout"), *pty = json_object_get(body, "pty");
	double timeout = tmo ? json_number_value(tmo) : 0;
	if (!json_object_get(body, "cmd"))
		return err_set(&op->err, ERR_INVALID, EINVAL, "field \"cmd\" is required");
	if (tag && strlen(tag) > PROC_TAG_MAX)
		return err_set(&op->err, ERR_INVALID, EINVAL, "a tag is at most %d bytes", PROC_TAG_MAX);
	if (output && strcmp(output, "block") != 0 && strcmp(output, "drop") != 0)
		return err_set(&op->err, ERR_INVALID, EINVAL,
			       "\"output\" is \"block\" (unread output holds the process back) or \"drop\"");
	op->exec.drop = output && strcmp(output, "drop") == 0;
	/* a relative cwd: the agent takes it from the user's home (or /work), when it knows how */
	bool relative_ok = cwd && cwd[0] && cwd[0] != '/' && (sb->peer.features & SP_FEATURE_FILE_USER);
	if (cwd && !relative_ok && api_check_path(op, cwd, strlen(cwd), "cwd") < 0)
		return -EINVAL;
	if (relative_ok && strlen(cwd) > API_MAX_PATH)
		return err_set(&op->err, ERR_INVALID, EINVAL, "cwd is longer than %d bytes", API_MAX_PATH);
	if (!(timeout >= 0 && timeout <= EXEC_MAX_TIMEOUT_S))
		return err_set(&op->err, ERR_INVALID, EINVAL, "timeout must be 0..%d seconds", EXEC_MAX_TIMEOUT_S);
	if (json_is_object(pty) && (parse_winsize(op, pty, ws) < 0 || !agent_has_pty(op, sb)))
		return -EINVAL;
	return 0;
}

/* Who an exec runs as, into x's ids and the first string of strs: "UID:GID", a name the agent
 * looks up, or root; none named: its template's user. Returns 0 or -EINVAL with op->err set. */
static int exec_user(struct op *op, const struct sandbox *sb, const char *user, struct sp_exec *x, struct buf *strs)
{
	unsigned long long uid, gid;
	int used = 0;
	if (user && sscanf(user, "%llu:%llu%n", &uid, &gid, &used) == 2 && (size_t)used == strlen(user) &&
	    isdigit((unsigned char)user[0]) && isdigit((unsigned char)user[strcspn(user, ":") + 1])) {
		if (uid >= 0xffffffffull || gid >= 0xffffffffull)
			return err_set(&op->err, ERR_INVALID, EINVAL, "user %s: ids are 0..4294967294", user);
		x->uid = (uint32_t)uid; /* "UID:GID", as docker exec -u takes it */
		x->gid = (uint32_t)gid;
		put_str(strs, "");
	} else if (user && *user && strcmp(user, "root") != 0) {
		x->uid = x->gid = 0xffffffffu;
		put_str(strs, user);
	} else {
		if (!user && sb->conf.has_user) { /* its template's (an image's USER) */
			x->uid = sb->conf.uid;
			x->gid = sb->conf.gid;
		}
		put_str(strs, "");
	}
	return 0;
}

/* An exec's argv (a string runs under /bin/sh -c) and environment after the user and folder in
 * strs, counted in x. Returns 0 or -EINVAL with op->err set. */
static int exec_args(struct op *op, json_t *cmd, json_t *env, struct sp_exec *x, struct buf *strs)
{
	if (json_is_string(cmd)) {
		x->argc = 3;
		put_str(strs, "/bin/sh");
		put_str(strs, "-c");
		put_str(strs, json_string_value(cmd));
	} else {
		size_t i;
		json_t *a;
		x->argc = (uint32_t)json_array_size(cmd);
		json_array_foreach(cmd, i, a) put_str(strs, json_string_value(a));
	}
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v) {
		if (!*k || strchr(k, '='))
			return err_set(&op->err, ERR_INVALID, EINVAL, "bad environment variable name \"%s\"", k);
		buf_put(strs, k, strlen(k));
		buf_put(strs, "=", 1);
		put_str(strs, json_string_value(v));
		x->envc++;
	}
	return 0;
}

static int send_exec(struct op *op, struct sandbox *sb, json_t *body, uint32_t flags)
{
	json_t *cmd = json_object_get(body, "cmd"), *env = json_object_get(body, "env");
	json_t *pty = json_object_get(body, "pty"), *tmo = json_object_get(body, "timeout");
	const char *cwd = json_string_value(json_object_get(body, "cwd"));
	const char *tag = json_string_value(json_object_get(body, "tag"));
	double timeout = tmo ? json_number_value(tmo) : 0;
	uint8_t ws[sizeof(struct sp_winsize)] = { 0 };
	if (exec_check(op, sb, body, ws) < 0)
		return -EINVAL;

	struct sp_exec x = { .flags = flags | (json_is_object(pty) ? SP_EXEC_PTY | SP_EXEC_STDIN : 0) };
	struct buf strs = { 0 };
	if (exec_user(op, sb, json_string_value(json_object_get(body, "user")), &x, &strs) < 0)
		return -EINVAL;
	char joined[API_MAX_PATH + 300];
	bool relative = cwd && cwd[0] && cwd[0] != '/' && (sb->peer.features & SP_FEATURE_FILE_USER);
	if (relative && sb->conf.workdir[0]) { /* a template's own working folder is where it starts */
		snprintf(joined, sizeof(joined), "%s/%s", sb->conf.workdir, cwd);
		cwd = joined;
	}
	put_str(&strs, cwd ? cwd : sb->conf.workdir);
	if (exec_args(op, cmd, env, &x, &strs) < 0) {
		buf_free(&strs);
		return -EINVAL;
	}
	x.timeout_ms = (uint32_t)(timeout * 1000);
	if (timeout > 0 && x.timeout_ms == 0)
		x.timeout_ms = 1;
	if (json_is_true(json_object_get(body, "stdin_open")) || json_object_get(body, "stdin") ||
	    json_object_get(body, "stdin_b64"))
		x.flags |= SP_EXEC_STDIN;
	/* the fixed part: struct sp_exec, and a terminal's size after it */
	uint8_t fixed[sizeof(x) + sizeof(ws)];
	size_t nfixed = sizeof(x) + (x.flags & SP_EXEC_PTY ? sizeof(ws) : 0);
	if (x.argc + x.envc > SP_MAX_ARGS || nfixed + buf_avail(&strs) > SP_MAX_PAYLOAD) {
		buf_free(&strs);
		return err_set(&op->err, ERR_TOO_LARGE, E2BIG,
			       "command and environment are limited to %u entries and %u bytes", SP_MAX_ARGS,
			       SP_MAX_PAYLOAD - (unsigned)sizeof(x));
	}
	memcpy(fixed, &x, sizeof(x));
	memcpy(fixed + sizeof(x), ws, sizeof(ws));
	op->what = join_cmd(cmd);
	/* what the process listing shows of it: argv, the environment and folder asked, its tag */
	json_t *argv = json_is_string(cmd) ? json_pack("[s, s, O]", "/bin/sh", "-c", cmd) : json_incref(cmd);
	op->spec = json_pack("{s:o, s:o, s:s, s:s*}", "argv", argv, "env", env ? json_incref(env) : json_object(),
			     "cwd", cwd ? cwd : sb->conf.workdir[0] ? sb->conf.workdir : "/work", "tag", tag);
	if (op->spec && json_is_object(pty))
		json_object_set_new(op->spec, "pty", json_deep_copy(pty));
	op->kind = OP_EXEC;
	op->exec.t0 = mono_ms();
	op_link(op, sb);
	int rc = chan_send(&sb->chan, SP_H_EXEC, op->tag, fixed, nfixed, buf_head(&strs), buf_avail(&strs));
	buf_free(&strs);
	if (rc < 0) {
		op_unlink(op);
		return err_set(&op->err, ERR_UNAVAILABLE, -rc, "sandbox %s: cannot reach its agent", sb->id);
	}
	return 0;
}

/* Decodes "stdin" / "stdin_b64" into op->body, which holds the bytes to send once started. */
static int take_stdin(struct op *op, json_t *body)
{
	json_t *s = json_object_get(body, "stdin");
	json_t *b64 = json_object_get(body, "stdin_b64");
	buf_free(&op->body);
	if (s && b64)
		return err_set(&op->err, ERR_INVALID, EINVAL, "give stdin or stdin_b64, not both");
	if (s) {
		buf_put(&op->body, json_string_value(s), json_string_length(s));
	} else if (b64) {
		size_t n = json_string_length(b64);
		uint8_t *dst = buf_reserve(&op->body, n / 4 * 3 + 3);
		long got = dst ? codec_b64_decode(dst, json_string_value(b64), n) : -1;
		if (got < 0)
			return err_set(&op->err, ERR_INVALID, EINVAL, "stdin_b64 is not valid base64");
		buf_commit(&op->body, (size_t)got);
	}
	if (buf_avail(&op->body) > EXEC_MAX_STDIN)
		return err_set(&op->err, ERR_TOO_LARGE, E2BIG,
			       "inline stdin is limited to %u bytes; stream more through the process's stdin route",
			       EXEC_MAX_STDIN);
	op->upload.stdin_pending = s || b64;
	return 0;
}

static int start(struct op *op, bool background)
{
	json_t *body;
	if (api_body(op, exec_fields, &body) < 0)
		return API_DONE;
	struct sandbox *sb = api_sandbox(op, true);
	int rc = sb ? 0 : -ENOENT;
	if (rc == 0 && background && json_object_get(body, "stream"))
		rc = err_set(&op->err, ERR_INVALID, EINVAL, "\"stream\" is for exec, not for processes");
	if (rc == 0)
		rc = take_stdin(op, body);
	op->exec.background = background;
	op->stream = json_is_true(json_object_get(body, "stream"));
	if (rc == 0)
		rc = send_exec(op, sb, body, 0);
	json_decref(body);
	return rc == 0 ? API_PENDING : API_DONE;
}

int api_agent_process(struct op *op, struct sandbox *sb, json_t *argv)
{
	json_t *body = json_pack("{s:O, s:b}", "cmd", argv, "stdin_open", 1);
	op->exec.background = true;
	op->stream = false;
	int rc = body ? send_exec(op, sb, body, SP_EXEC_AGENT | SP_EXEC_STDIN)
		      : err_set(&op->err, ERR_INTERNAL, ENOMEM, "out of memory");
	json_decref(body);
	return rc == 0 ? API_PENDING : API_DONE;
}

int api_exec(struct op *op)
{
	return start(op, false);
}

int api_proc_start(struct op *op)
{
	return start(op, true);
}

/* The process op->pid of op's sandbox; NULL with op->err set. */
static struct proc *find_proc(struct op *op, struct sandbox **sbp, bool need_agent)
{
	struct sandbox *sb = api_sandbox(op, need_agent);
	if (!sb)
		return NULL;
	struct proc *p = proc_find(sb, op->pid);
	if (!p)
		err_set(&op->err, ERR_NOT_FOUND, ESRCH, "no process %u in sandbox %s", op->pid, sb->id);
	*sbp = sb;
	return p;
}

/* The running process op->pid; NULL with op->err set (404, or 409 once it exited). */
static struct proc *running_proc(struct op *op, struct sandbox **sbp)
{
	struct proc *p = find_proc(op, sbp, true);
	if (p && p->exited) {
		err_set(&op->err, ERR_CONFLICT, ESRCH, "process %u has exited", p->pid);
		return NULL;
	}
	return p;
}

/* Links op to p as one of the requests that wait on it (its exit, or stdin credit). [L] */
static void wait_on(struct op *op, enum op_kind kind, struct sandbox *sb, struct proc *p)
{
	op->kind = kind;
	op->sb = sb;
	op->proc = p;
	op->next = p->waiters;
	p->waiters = op;
}

int api_proc_list(struct op *op)
{
	struct sandbox *sb = api_sandbox(op, false);
	if (!sb)
		return API_DONE;
	json_t *arr = json_array();
	/* procs is newest first; list oldest first */
	for (struct proc *p = sb->procs; p; p = p->next)
		json_array_insert_new(arr, 0, proc_json(p));
	op->json = json_pack("{s:o}", "processes", arr);
	return API_DONE;
}

int api_proc_get(struct op *op)
{
	struct sandbox *sb;
	struct proc *p = find_proc(op, &sb, false);
	if (p)
		op->json = proc_json(p);
	return API_DONE;
}

/* Output streams reading sb's processes. */
static int readers_of(const struct sandbox *sb)
{
	int n = 0;
	for (const struct proc *p = sb->procs; p; p = p->next)
		n += p->nreaders;
	return n;
}

int api_proc_output(struct op *op)
{
	struct sandbox *sb;
	struct proc *p = find_proc(op, &sb, false);
	if (!p)
		return API_DONE;
	if (p->nreaders >= PROC_MAX_READERS) {
		err_set(&op->err, ERR_TOO_MANY, EBUSY, "process %u has %d readers, the most it may have", p->pid,
			PROC_MAX_READERS);
		return API_DONE;
	}
	if (readers_of(sb) >= SANDBOX_MAX_READERS) {
		err_set(&op->err, ERR_TOO_MANY, EBUSY, "the processes of sandbox %s have %d readers, the most they may have",
			sb->id, SANDBOX_MAX_READERS);
		return API_DONE;
	}
	sandbox_touch(sb);
	op->kind = OP_ATTACH;
	op->stream = true;
	op->responding = true;
	op->exec.t0 = mono_ms() - (now_ms() - p->started_ms);
	op->sb = sb;
	op_attach(op, p);
	return API_DONE;
}

int api_proc_stdin(struct op *op)
{
	struct sandbox *sb;
	struct proc *p = running_proc(op, &sb);
	if (p)
		wait_on(op, OP_STDIN, sb, p);
	return API_DONE;
}

int api_proc_stdin_upload(struct op *op, const char *data, size_t *size)
{
	struct proc *p = op->proc;
	if ((!p || !op->sb) && data == NULL && *size == 0) {
		/* it exited after taking every byte the body held: the write happened */
		op->answer = ANSWER_EMPTY;
		op->done = true;
		return API_DONE;
	}
	if (!p || !op->sb) {
		err_set(&op->err, ERR_CONFLICT, ESRCH, "process %u exited before taking all of its stdin", op->pid);
		return API_DONE;
	}
	while (*size > 0 && p->stdin_credit > 0) {
		size_t n = *size;
		if (n > SP_MAX_PAYLOAD)
			n = SP_MAX_PAYLOAD;
		if (n > p->stdin_credit)
			n = p->stdin_credit;
		if (!chan_data_room(&op->sb->chan, n))
			return API_PENDING; /* the agent's queue is full: woken when it drains */
		if (chan_send(&op->sb->chan, SP_H_STDIN, p->pid, data, n, NULL, 0) < 0) {
			err_set(&op->err, ERR_UNAVAILABLE, ENOTCONN, "sandbox %s: its agent is not connected", op->sb->id);
			return API_DONE;
		}
		p->stdin_credit -= (uint32_t)n;
		data += n;
		*size -= n;
	}
	if (*size > 0)
		return API_PENDING;
	if (data == NULL) { /* end of the body */
		op->answer = ANSWER_EMPTY;
		op_unlink(op);
		op->done = true;
	}
	return API_DONE;
}

int api_proc_stdin_close(struct op *op)
{
	struct sandbox *sb;
	struct proc *p = find_proc(op, &sb, true);
	if (!p)
		return API_DONE;
	if (!p->exited)
		chan_send(&sb->chan, SP_H_STDIN, p->pid, NULL, 0, NULL, 0);
	op->answer = ANSWER_EMPTY;
	return API_DONE;
}

static int signal_number(json_t *v)
{
	static const struct { const char *name; int num; } names[] = {
		{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
		{ "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "STOP", SIGSTOP }, { "CONT", SIGCONT }, { "ALRM", SIGALRM },
	};
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		return n >= 1 && n <= 64 ? (int)n : -1;
	}
	const char *s = json_string_value(v);
	if (!s)
		return -1;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, s) == 0)
			return names[i].num;
	return -1;
}

int api_proc_signal(struct op *op)
{
	static const struct field fields[] = { { "signal", F_INT_OR_STRING }, { NULL, 0 } };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	json_t *v = json_object_get(body, "signal");
	int signo = v ? signal_number(v) : SIGTERM;
	json_decref(body);
	if (signo < 0) {
		err_set(&op->err, ERR_INVALID, EINVAL, "unknown signal");
		return API_DONE;
	}
	struct sandbox *sb;
	struct proc *p = running_proc(op, &sb);
	if (!p)
		return API_DONE;
	uint8_t payload[4];
	frame_put_u32(payload, (uint32_t)signo);
	chan_send(&sb->chan, SP_H_SIGNAL, p->pid, payload, sizeof(payload), NULL, 0);
	op->answer = ANSWER_EMPTY;
	return API_DONE;
}

int api_proc_resize(struct op *op)
{
	static const struct field fields[] = { { "cols", F_INT }, { "rows", F_INT }, { NULL, 0 } };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	uint8_t ws[sizeof(struct sp_winsize)];
	int rc = parse_winsize(op, body, ws);
	struct sandbox *sb;
	struct proc *p = rc == 0 ? running_proc(op, &sb) : NULL;
	json_t *pty = p ? json_object_get(p->spec, "pty") : NULL;
	if (p && !pty)
		err_set(&op->err, ERR_CONFLICT, ENOTTY, "process %u has no terminal", p->pid);
	if (pty) {
		json_object_update(pty, body); /* the listing shows the size it has now */
		chan_send(&sb->chan, SP_H_RESIZE, p->pid, ws, sizeof(ws), NULL, 0);
		op->answer = ANSWER_EMPTY;
	}
	json_decref(body);
	return API_DONE;
}

int api_proc_wait(struct op *op)
{
	const char *t = json_string_value(json_object_get(op->query, "timeout"));
	double timeout = -1;
	if (t) {
		char *end;
		timeout = strtod(t, &end);
		if (!*t || *end || !(timeout >= 0 && timeout <= EXEC_MAX_TIMEOUT_S)) {
			err_set(&op->err, ERR_INVALID, EINVAL, "timeout must be 0..%d seconds", EXEC_MAX_TIMEOUT_S);
			return API_DONE;
		}
	}
	struct sandbox *sb;
	struct proc *p = find_proc(op, &sb, false);
	if (!p)
		return API_DONE;
	if (p->exited) {
		op->json = proc_json(p);
		return API_DONE;
	}
	wait_on(op, OP_WAIT, sb, p);
	if (timeout >= 0)
		op_set_deadline(op, mono_ms() + (int64_t)(timeout * 1000));
	return API_PENDING;
}

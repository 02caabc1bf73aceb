/*
 * e2b/process.c - E2B's process.Process service on spaced's processes (docs/e2b.md).
 *
 * Start is spaced's exec with an output stream (POST .../exec, "stream": true), carried as one
 * Connect stream: a start event with the pid first, the output as data events in the order
 * spaced read it, then the end event and the end of the stream. The command's
 * Connect-Timeout-Ms is its lifetime (spaced's timeout kills its process group; the stream
 * ends with deadline_exceeded). Connect is one more reader of a running process's output
 * (spaced gives each reader all of it); its deadline bounds only the stream. A client that goes
 * away leaves the process running. Commands start with spaced's "drop" output policy: as under
 * envd, one that nobody reads is never held back (spaced keeps its last output for a Connect),
 * and one whose stream is connected waits for it (the pipe to the client is the only buffer,
 * stream.c), so a slow reader slows the command and misses nothing.
 *
 * E2B's List, and a selector by tag, read what spaced's process records keep of each start
 * (argv, env, cwd, tag).
 */
#include "e2b/process.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2b/connect.h"
#include "e2b/stream.h"
#include "e2b/users.h"

/* The ProcessInfo of a running process of spaced's listing (new reference). */
static json_t *process_info(const json_t *proc)
{
	uint32_t pid = (uint32_t)json_integer_value(json_object_get(proc, "pid"));
	const json_t *argv = json_object_get(proc, "argv");
	if (json_array_size(argv) == 0) /* adopted after a restart of spaced: its command line only */
		return json_pack("{s:{s:s?, s:[], s:{}}, s:i}", "config", "cmd",
				 json_string_value(json_object_get(proc, "cmd")), "args", "envs", "pid", (int)pid);
	json_t *args = json_array();
	for (size_t i = 1; i < json_array_size(argv); i++)
		json_array_append(args, json_array_get(argv, i));
	json_t *out = json_pack("{s:{s:O, s:o, s:O?, s:O?}, s:i}", "config", "cmd", json_array_get(argv, 0), "args",
				args, "envs", json_object_get(proc, "env"), "cwd", json_object_get(proc, "cwd"), "pid",
				(int)pid);
	if (json_is_string(json_object_get(proc, "tag")))
		json_object_set(out, "tag", json_object_get(proc, "tag"));
	return out;
}

/* The pid of a ProcessSelector ({"pid": N}, or {"tag": T}: the running process spaced's
 * records give that tag), or 0. */
static uint32_t selected_pid(struct gw *gw, const char *sbid, const json_t *msg)
{
	const json_t *sel = json_object_get(msg, "process");
	int64_t pid = 0;
	if (connect_int(json_object_get(sel, "pid"), &pid) == 0)
		return pid > 0 && pid <= UINT32_MAX ? (uint32_t)pid : 0;
	const char *tag = json_string_value(json_object_get(sel, "tag"));
	char path[96];
	json_t *reply = NULL, *p;
	struct client_err e = { 0 };
	uint32_t found = 0;
	size_t i;
	if (!tag || !gw_sandbox_path(path, sizeof(path), sbid, "/processes") ||
	    client_request(&gw->up, "GET", path, NULL, &reply, &e) < 0)
		return 0;
	json_array_foreach(json_object_get(reply, "processes"), i, p)
		if (!found && strcmp(json_string_value(json_object_get(p, "state")) ?: "", "running") == 0 &&
		    strcmp(json_string_value(json_object_get(p, "tag")) ?: "", tag) == 0)
			found = (uint32_t)json_integer_value(json_object_get(p, "pid"));
	json_decref(reply);
	return found;
}

/* One Start or Connect stream. */
struct call {
	struct gw *gw;
	char sbid[16];
	json_t *ask;          /* Start: spaced's process start body; NULL for Connect */
	uint32_t pid;
	bool pty;             /* its output is a terminal's: data events carry "pty" */
	int64_t deadline;     /* Connect: when the stream ends (mono ms; 0: never) */
	struct gw_stream *s;
	int64_t last;         /* when the last envelope went */
	bool started;         /* the start event went */
	bool ended;           /* the end event went */
	bool gone;            /* the client left */
	const char *code;     /* the end of the stream: an error code, or NULL */
	char msg[300];
};

static void call_free(void *p)
{
	struct call *c = p;
	json_decref(c->ask);
	free(c);
}

static int send_msg(struct call *c, uint8_t flags, json_t *msg)
{
	struct buf b = { 0 };
	int rc = msg && connect_put(&b, flags, msg) == 0 ? gw_stream_write(c->s, buf_head(&b), buf_avail(&b)) : -ENOMEM;
	json_decref(msg);
	buf_free(&b);
	c->last = gw_mono_ms();
	if (rc == -EPIPE)
		c->gone = true;
	return rc;
}

/* Go's name of a signal, as E2B's status strings carry it. */
static const char *signal_name(int sig)
{
	static const char *const names[] = { NULL, "hangup", "interrupt", "quit", "illegal instruction",
					     "trace/breakpoint trap", "aborted", "bus error",
					     "floating point exception", "killed", "user defined signal 1",
					     "segmentation fault", "user defined signal 2", "broken pipe", "alarm clock",
					     "terminated" };
	return sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) ? names[sig] : NULL;
}

/* The end event of spaced's exit event. */
static json_t *end_event(const json_t *ev)
{
	const json_t *sig = json_object_get(ev, "signal");
	char status[64];
	json_t *end;
	if (json_is_integer(sig)) {
		int n = (int)json_integer_value(sig);
		const char *name = signal_name(n);
		if (name)
			snprintf(status, sizeof(status), "signal: %s", name);
		else
			snprintf(status, sizeof(status), "signal: signal %d", n);
		end = json_pack("{s:i, s:s, s:s}", "exitCode", -1, "status", status, "error", status);
	} else {
		int code = (int)json_integer_value(json_object_get(ev, "exit_code"));
		snprintf(status, sizeof(status), "exit status %d", code);
		end = json_pack("{s:b, s:s}", "exited", 1, "status", status);
		if (code != 0) {
			json_object_set_new(end, "exitCode", json_integer(code));
			json_object_set_new(end, "error", json_string(status));
		}
	}
	return json_pack("{s:{s:o}}", "event", "end", end);
}

/* The start event: first on the stream, once spaced reads the process for it. */
static int send_start(struct call *c)
{
	c->started = true;
	return send_msg(c, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", (int)c->pid)) < 0 ? -EPIPE : 0;
}

/* A Connect's output stream opened: spaced counts it among the process's readers, so what the
 * process prints from now on comes to it. */
static int on_opened(void *arg)
{
	return send_start(arg);
}

static int on_event(json_t *ev, void *arg)
{
	struct call *c = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type)
		return 0;
	if (strcmp(type, "start") == 0) { /* a Start's: the pid, first of all */
		c->pid = (uint32_t)json_integer_value(json_object_get(ev, "pid"));
		return send_start(c);
	}
	if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
		const json_t *text = json_object_get(ev, "data");
		uint8_t *raw = NULL;
		size_t n = 0;
		json_t *b64;
		if (text)
			b64 = connect_bytes_json((const uint8_t *)json_string_value(text), json_string_length(text));
		else if (connect_bytes(json_string_value(json_object_get(ev, "data_b64")) ?: "", &raw, &n) == 0)
			b64 = connect_bytes_json(raw, n);
		else
			b64 = NULL;
		free(raw);
		if (!b64)
			return 0;
		return send_msg(c, 0, json_pack("{s:{s:{s:o}}}", "event", "data", c->pty ? "pty" : type, b64)) < 0 ? -EPIPE
															     : 0;
	}
	if (strcmp(type, "exit") == 0) {
		if (json_is_true(json_object_get(ev, "timed_out"))) {
			c->code = "deadline_exceeded";
			snprintf(c->msg, sizeof(c->msg), "the command ran past its timeout and was killed");
			return 1;
		}
		c->ended = true;
		return send_msg(c, 0, end_event(ev)) < 0 ? -EPIPE : 1;
	}
	if (strcmp(type, "error") == 0) {
		const json_t *e = json_object_get(ev, "error");
		c->code = connect_code_of(json_string_value(json_object_get(e, "code")), 0);
		snprintf(c->msg, sizeof(c->msg), "%s", json_string_value(json_object_get(e, "message")) ?: "spaced failed");
		return 1;
	}
	return 0; /* keepalive, oom: nothing E2B shows */
}

static int on_tick(void *arg)
{
	struct call *c = arg;
	if (gw_stream_gone(c->s)) {
		c->gone = true;
		return -EPIPE;
	}
	int64_t now = gw_mono_ms();
	if (c->deadline && now >= c->deadline) {
		c->code = "deadline_exceeded";
		snprintf(c->msg, sizeof(c->msg), "the stream reached its timeout (the process goes on)");
		return -ETIMEDOUT;
	}
	if (now - c->last >= GW_KEEPALIVE_S * 1000 &&
	    send_msg(c, 0, json_pack("{s:{s:{}}}", "event", "keepalive")) < 0)
		return -EPIPE;
	return 0;
}

static void run_call(struct gw_stream *s, void *arg)
{
	struct call *c = arg;
	c->s = s;
	c->last = gw_mono_ms();
	char path[96];
	struct client_err e = { 0 };
	json_t *reply = NULL;
	struct client_stream_ops ops = { .event = on_event, .tick = on_tick, .wake_fd = -1, .arg = c };
	int rc;
	if (c->code) /* refused before it began */
		goto end;
	if (c->ask) {
		/* one request starts it and reads it, so nothing it prints goes by unread */
		gw_sandbox_path(path, sizeof(path), c->sbid, "/exec");
		rc = client_stream(&c->gw->up, "POST", path, c->ask, &ops, &e);
	} else {
		char one[96];
		snprintf(one, sizeof(one), "/processes/%u", c->pid);
		gw_sandbox_path(path, sizeof(path), c->sbid, one);
		if (client_request(&c->gw->up, "GET", path, NULL, &reply, &e) < 0 ||
		    strcmp(json_string_value(json_object_get(reply, "state")) ?: "", "running") != 0) {
			c->code = e.kind && e.status != 404 ? connect_code_of(e.code, e.status) : "not_found";
			snprintf(c->msg, sizeof(c->msg), "process %u is not running", c->pid);
			json_decref(reply);
			goto end;
		}
		c->pty = json_is_object(json_object_get(reply, "pty"));
		json_decref(reply);
		char out[96];
		snprintf(out, sizeof(out), "/processes/%u/output", c->pid);
		gw_sandbox_path(path, sizeof(path), c->sbid, out);
		memset(&e, 0, sizeof(e));
		ops.opened = on_opened;
		rc = client_stream(&c->gw->up, "GET", path, NULL, &ops, &e);
	}
	if (c->gone)
		return;
	if (rc < 0 && !c->code && !c->started) { /* refused: an error in place of the start */
		c->code = e.kind == CLIENT_ERR_API ? connect_code_of(e.code, e.status) : "unavailable";
		if (e.kind == CLIENT_ERR_API && (strcmp(e.code, "exec_failed") == 0 || e.status == 400))
			c->code = "invalid_argument";
		snprintf(c->msg, sizeof(c->msg), "%s", e.message[0] ? e.message : "spaced refused the stream");
	} else if (rc < 0 && !c->code) {
		c->code = e.kind == CLIENT_ERR_API ? connect_code_of(e.code, e.status) : "unavailable";
		snprintf(c->msg, sizeof(c->msg), "%s", e.message[0] ? e.message : "the output stream ended early");
	} else if (!c->ended && !c->code) {
		c->code = "unavailable";
		snprintf(c->msg, sizeof(c->msg), "the output stream ended before the process did");
	}
end:;
	struct buf b = { 0 };
	if (connect_end(&b, c->code, c->msg) == 0)
		gw_stream_write(s, buf_head(&b), buf_avail(&b));
	buf_free(&b);
}

/* spaced's {"cols", "rows"} of an E2B PTY ({"size": {"cols", "rows"}}), or NULL if it is not one.
 * spaced judges the numbers (400 for a size no terminal has). */
static json_t *pty_size(const json_t *pty)
{
	const json_t *size = json_object_get(pty, "size");
	int64_t cols = 0, rows = 0; /* proto3 leaves a 0 out */
	const json_t *jc = json_object_get(size, "cols"), *jr = json_object_get(size, "rows");
	if (!json_is_object(size) || (jc && connect_int(jc, &cols) < 0) || (jr && connect_int(jr, &rows) < 0) ||
	    cols < 0 || cols > INT32_MAX || rows < 0 || rows > INT32_MAX)
		return NULL;
	return json_pack("{s:I, s:I}", "cols", (json_int_t)cols, "rows", (json_int_t)rows);
}

static enum MHD_Result start(struct req *r, const char *sbid, json_t *msg)
{
	const json_t *proc = json_object_get(msg, "process");
	const char *cmd = json_string_value(json_object_get(proc, "cmd"));
	const json_t *args = json_object_get(proc, "args"), *envs = json_object_get(proc, "envs");
	const char *cwd = json_string_value(json_object_get(proc, "cwd"));
	if (!cmd || !*cmd || (args && !json_is_array(args)) || (envs && !json_is_object(envs)))
		return gw_connect_error(r, "invalid_argument", "process.cmd is required; args a list, envs an object");
	json_t *size = NULL;
	const json_t *pty = json_object_get(msg, "pty");
	if (pty && !json_is_null(pty) && !(size = pty_size(pty)))
		return gw_connect_error(r, "invalid_argument", "pty.size must be {cols, rows}");
	struct call *c = calloc(1, sizeof(*c));
	if (!c)
		return MHD_NO;
	c->gw = r->gw;
	snprintf(c->sbid, sizeof(c->sbid), "%s", sbid);
	json_t *argv = json_pack("[s]", cmd);
	size_t i;
	json_t *a;
	json_array_foreach(args, i, a)
		json_array_append_new(argv, json_is_string(a) ? json_incref(a) : json_string(""));
	c->ask = json_pack("{s:o, s:b, s:b, s:s}", "cmd", argv, "stdin_open", json_is_true(json_object_get(msg, "stdin")),
			   "stream", 1, "output", "drop");
	if (size) { /* a terminal's input is always open */
		c->pty = true;
		json_object_set_new(c->ask, "pty", size);
		json_object_del(c->ask, "stdin_open");
	}
	if (envs)
		json_object_set(c->ask, "env", (json_t *)envs);
	char user[GW_USER_MAX + 1];
	const char *as = users_of(r, sbid, user, sizeof(user));
	if (as)
		json_object_set_new(c->ask, "user", json_string(as));
	/* a user's folder is its home, as under envd; spaced's own is /work for root (and takes
	 * other users' relative folders from their homes) */
	bool root = as && strcmp(as, "root") == 0;
	const char *base = root ? "/root" : !as ? "/work" : NULL;
	char cwd_abs[4200];
	if (cwd && *cwd && cwd[0] != '/' && base)
		snprintf(cwd_abs, sizeof(cwd_abs), "%s/%s", base, cwd);
	else if (cwd && *cwd)
		snprintf(cwd_abs, sizeof(cwd_abs), "%s", cwd);
	else
		snprintf(cwd_abs, sizeof(cwd_abs), "%s", root ? base : "");
	if (cwd_abs[0])
		json_object_set_new(c->ask, "cwd", json_string(cwd_abs));
	long t = gw_timeout_s(r);
	if (t > 0)
		json_object_set_new(c->ask, "timeout", json_integer(t));
	const char *tag = json_string_value(json_object_get(msg, "tag"));
	if (tag)
		json_object_set_new(c->ask, "tag", json_string(tag));
	return gw_stream_start(r, "application/connect+json", run_call, c, call_free);
}

static enum MHD_Result attach(struct req *r, const char *sbid, json_t *msg)
{
	uint32_t pid = selected_pid(r->gw, sbid, msg);
	struct call *c = calloc(1, sizeof(*c));
	if (!c)
		return MHD_NO;
	c->gw = r->gw;
	snprintf(c->sbid, sizeof(c->sbid), "%s", sbid);
	c->pid = pid;
	long t = gw_timeout_s(r);
	c->deadline = t > 0 ? gw_mono_ms() + t * 1000 : 0;
	if (!pid) {
		c->code = "not_found";
		snprintf(c->msg, sizeof(c->msg), "no such process");
	}
	return gw_stream_start(r, "application/connect+json", run_call, c, call_free);
}

/* A unary call on one process: spaced's answer mapped, {} on success. */
static enum MHD_Result on_process(struct req *r, const char *sbid, uint32_t pid, const char *method, const char *rest,
				  json_t *body, const void *raw, size_t n)
{
	char one[96], path[128];
	snprintf(one, sizeof(one), "/processes/%u%s", pid, rest);
	gw_sandbox_path(path, sizeof(path), sbid, one);
	struct client_err e = { 0 };
	int rc = raw ? client_request_raw(&r->gw->up, method, path, raw, n, NULL, &e)
		     : client_request(&r->gw->up, method, path, body, NULL, &e);
	if (rc == 0)
		return gw_json(r, 200, json_object());
	if (e.kind != CLIENT_ERR_API)
		return gw_connect_error(r, "unavailable", "%s", e.message);
	if (e.status == 404 || (e.status == 409 && strstr(e.message, "exited")))
		return gw_connect_error(r, "not_found", "process %u is not running", pid);
	return gw_connect_error(r, connect_code_of(e.code, e.status), "%s", e.message);
}

static enum MHD_Result list(struct req *r, const char *sbid)
{
	char path[96];
	json_t *reply = NULL;
	struct client_err e = { 0 };
	gw_sandbox_path(path, sizeof(path), sbid, "/processes");
	if (client_request(&r->gw->up, "GET", path, NULL, &reply, &e) < 0)
		return gw_connect_error(r, e.kind == CLIENT_ERR_API ? connect_code_of(e.code, e.status) : "unavailable", "%s",
					e.message);
	json_t *out = json_array(), *p;
	size_t i;
	json_array_foreach(json_object_get(reply, "processes"), i, p)
		if (strcmp(json_string_value(json_object_get(p, "state")) ?: "", "running") == 0)
			json_array_append_new(out, process_info(p));
	json_decref(reply);
	return gw_json(r, 200, json_pack("{s:o}", "processes", out));
}

/* A stream's call (Start, Connect): its one envelope, or NULL with the answer queued in *rc (a
 * stream's errors go in its end, under 200). */
static json_t *stream_begin(struct req *r, enum MHD_Result *rc)
{
	char why[200];
	json_t *msg = connect_request(buf_head(&r->body), buf_avail(&r->body), why, sizeof(why));
	if (msg)
		return msg;
	struct call *c = calloc(1, sizeof(*c));
	if (!c) {
		*rc = MHD_NO;
		return NULL;
	}
	c->code = "invalid_argument";
	snprintf(c->msg, sizeof(c->msg), "%s", why);
	*rc = gw_stream_start(r, "application/connect+json", run_call, c, call_free);
	return NULL;
}

/* A stream's call: its envelope handed to fn (start, attach). */
static enum MHD_Result on_stream(struct req *r, const struct route_args *a,
				 enum MHD_Result (*fn)(struct req *r, const char *sbid, json_t *msg))
{
	enum MHD_Result rc;
	json_t *msg = stream_begin(r, &rc);
	if (!msg)
		return rc;
	rc = fn(r, a->sbid, msg);
	json_decref(msg);
	return rc;
}

enum MHD_Result process_start(struct req *r, const struct route_args *a)
{
	return on_stream(r, a, start);
}

enum MHD_Result process_connect(struct req *r, const struct route_args *a)
{
	return on_stream(r, a, attach);
}

enum MHD_Result process_list(struct req *r, const struct route_args *a)
{
	enum MHD_Result rc;
	json_t *msg = gw_unary(r, &rc);
	if (!msg)
		return rc;
	json_decref(msg);
	return list(r, a->sbid);
}

/* A unary call on one process: fn given its message and the process it selects; not_found
 * when it selects none. */
static enum MHD_Result on_pid(struct req *r, const struct route_args *a,
			      enum MHD_Result (*fn)(struct req *r, const char *sbid, uint32_t pid, const json_t *msg))
{
	enum MHD_Result rc;
	json_t *msg = gw_unary(r, &rc);
	if (!msg)
		return rc;
	uint32_t pid = selected_pid(r->gw, a->sbid, msg);
	rc = pid ? fn(r, a->sbid, pid, msg) : gw_connect_error(r, "not_found", "no such process");
	json_decref(msg);
	return rc;
}

static enum MHD_Result send_input(struct req *r, const char *sbid, uint32_t pid, const json_t *msg)
{
	const json_t *in = json_object_get(msg, "input");
	/* typed at a terminal or written to a pipe: spaced's stdin either way */
	const char *b64 = json_string_value(json_object_get(in, "stdin"));
	if (!b64)
		b64 = json_string_value(json_object_get(in, "pty"));
	uint8_t *raw = NULL;
	size_t n = 0;
	enum MHD_Result rc;
	if (!b64 || connect_bytes(b64, &raw, &n) < 0)
		rc = gw_connect_error(r, "invalid_argument", "input.stdin or input.pty must be base64 bytes");
	else if (n == 0)
		rc = gw_json(r, 200, json_object());
	else
		rc = on_process(r, sbid, pid, "POST", "/stdin", NULL, raw, n);
	free(raw);
	return rc;
}

static enum MHD_Result close_stdin(struct req *r, const char *sbid, uint32_t pid, const json_t *msg)
{
	return on_process(r, sbid, pid, "DELETE", "/stdin", NULL, NULL, 0);
}

static enum MHD_Result send_signal(struct req *r, const char *sbid, uint32_t pid, const json_t *msg)
{
	const json_t *s = json_object_get(msg, "signal");
	const char *name = json_string_value(s);
	int64_t num = 0;
	int sig = name ? (strcmp(name, "SIGNAL_SIGKILL") == 0 ? 9 : strcmp(name, "SIGNAL_SIGTERM") == 0 ? 15 : 0)
		       : (connect_int(s, &num) == 0 && (num == 9 || num == 15) ? (int)num : 0);
	if (!sig)
		return gw_connect_error(r, "invalid_argument", "signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
	json_t *body = json_pack("{s:i}", "signal", sig);
	enum MHD_Result rc = on_process(r, sbid, pid, "POST", "/signal", body, NULL, 0);
	json_decref(body);
	return rc;
}

static enum MHD_Result update(struct req *r, const char *sbid, uint32_t pid, const json_t *msg)
{
	json_t *size = pty_size(json_object_get(msg, "pty"));
	enum MHD_Result rc = size ? on_process(r, sbid, pid, "POST", "/resize", size, NULL, 0)
				  : gw_connect_error(r, "invalid_argument", "pty.size must be {cols, rows}");
	json_decref(size);
	return rc;
}

enum MHD_Result process_send_input(struct req *r, const struct route_args *a)
{
	return on_pid(r, a, send_input);
}

enum MHD_Result process_close_stdin(struct req *r, const struct route_args *a)
{
	return on_pid(r, a, close_stdin);
}

enum MHD_Result process_send_signal(struct req *r, const struct route_args *a)
{
	return on_pid(r, a, send_signal);
}

enum MHD_Result process_update(struct req *r, const struct route_args *a)
{
	return on_pid(r, a, update);
}

enum MHD_Result process_unknown(struct req *r, const struct route_args *a)
{
	enum MHD_Result rc;
	json_t *msg = gw_unary(r, &rc);
	if (!msg)
		return rc;
	json_decref(msg);
	if (strcmp(a->param[0], "StreamInput") == 0)
		return gw_connect_error(r, "unimplemented", "StreamInput (a client stream) is not offered; SendInput is");
	return gw_connect_error(r, "unimplemented", "process.Process/%s does not exist", a->param[0]);
}

/*
 * daemon/core/op_frame.c - the agent's replies turned into answers: a frame for a request's
 * tag is checked (its size, its names) and becomes the request's JSON, a listing's entries
 * within their limits, a started process, a write's progress or a watch's events.
 */
#include "daemon/core/op.h"
#include "daemon/core/op_private.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/entry.h"
#include "daemon/core/proc.h"

/* Whether an entry name from the agent is one name: not empty, not . or .., no slash. */
static bool name_ok(const char *name)
{
	return name[0] && strchr(name, '/') == NULL && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	       strlen(name) <= 255;
}

/* An A_STAT frame as JSON: at the path the agent resolved, else at `dir` + its name for a
 * listing of dir, else at `path`, the one asked for; NULL when the frame breaks the protocol. */
static json_t *stat_json(const struct frame *f, const char *dir, const char *path, const char **namep)
{
	struct entry e;
	if (entry_parse(f, &e) < 0)
		return NULL;
	*namep = e.name;
	char full[4400];
	if (e.path[0] == '/')
		snprintf(full, sizeof(full), "%s", e.path);
	else if (dir)
		snprintf(full, sizeof(full), "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e.name);
	else
		snprintf(full, sizeof(full), "%s", path);
	return entry_json(&e, full);
}

static void on_error_frame(struct op *op, const struct frame *f)
{
	struct sp_error er;
	memcpy(&er, f->payload, sizeof(er));
	size_t off = sizeof(er);
	const char *msg = frame_str(f, &off);
	struct err e = { 0 };
	if (op->kind == OP_EXEC && er.err != EAGAIN)
		err_set(&e, ERR_EXEC_FAILED, er.err, "%s", msg ? msg : strerror(er.err));
	else if (msg && *msg)
		err_from_errno(&e, er.err, "%s", msg);
	else
		err_from_errno(&e, er.err, "%s: %s", op->what ? op->what : "request", strerror(er.err));
	op_unlink(op);
	op_fail(op, &e);
}

static int on_started(struct op *op, const struct frame *f, char *why)
{
	struct sp_started st;
	memcpy(&st, f->payload, sizeof(st));
	struct sandbox *sb = op->sb;
	struct proc *p = proc_get(sb, st.pid);
	op_unlink(op);
	if (!p) {
		snprintf(why, CHAN_MAX_WHY, "the agent names more than %d processes", SANDBOX_MAX_PROCS_TRACKED);
		struct err e = { 0 };
		err_set(&e, ERR_UNAVAILABLE, EPROTO, "sandbox %s: %s", sb->id, why);
		op_fail(op, &e);
		return -EPROTO;
	}
	p->exited = false;
	p->listed = true;
	p->hearsay = false;
	p->started_ms = now_ms();
	p->stdin_credit = SP_WINDOW;
	p->drop = op->exec.drop;
	p->dropped = 0;
	free(p->cmd);
	p->cmd = op->what ? strdup(op->what) : NULL;
	json_decref(p->spec);
	p->spec = json_incref(op->spec);
	op->pid = st.pid;
	if (op->upload.stdin_pending) {
		/* inline stdin (at most one window): hand it over, then end of file */
		const uint8_t *in = buf_head(&op->body);
		size_t left = buf_avail(&op->body);
		while (left > 0) {
			size_t n = left < SP_MAX_PAYLOAD ? left : SP_MAX_PAYLOAD;
			chan_send(&sb->chan, SP_H_STDIN, st.pid, in, n, NULL, 0);
			in += n;
			left -= n;
		}
		chan_send(&sb->chan, SP_H_STDIN, st.pid, NULL, 0, NULL, 0);
		p->stdin_credit -= (uint32_t)buf_avail(&op->body);
		op->upload.stdin_pending = false;
	}
	if (op->exec.background) {
		op->json = json_pack("{s:i}", "pid", st.pid);
		op->answer = ANSWER_CREATED;
		op_finish(op);
		return 0;
	}
	op->sb = sb;
	op_attach(op, p);
	if (op->stream) {
		op->responding = true;
		op_emit_json(op, json_pack("{s:s, s:i}", "type", "start", "pid", st.pid));
		op->done = true; /* headers can go: the handler answers with the stream */
	}
	return 0;
}

/* Takes `len` bytes on op's tag against its window; false when the agent sent beyond it. */
static bool take_window(struct op *op, uint32_t len, char *why)
{
	if (op->list.owed + len > SP_WINDOW) {
		snprintf(why, CHAN_MAX_WHY, "%u bytes on request %#x beyond its credit", op->list.owed + len, op->tag);
		return false;
	}
	op->list.owed += len;
	return true;
}

/* Ends a listing: its entries, and where to go on when it stopped at a limit. */
static void list_done(struct op *op)
{
	json_t *entries = op->json;
	op->json = json_pack("{s:o, s:b}", "entries", entries, "truncated", op->list.truncated);
	if (op->list.truncated && op->list.last_name)
		json_object_set_new(op->json, "next", json_string(op->list.last_name));
	op->answer = ANSWER_OK;
	op_unlink(op);
	op_finish(op);
}

/* One entry of a listing. Names must be single names; the answer stops at its limits. */
static int list_entry(struct op *op, const struct frame *f, char *why)
{
	const char *dir = json_string_value(json_object_get(op->query, "path"));
	const char *name;
	if (!take_window(op, f->len, why))
		return -EPROTO;
	json_t *e = stat_json(f, dir, NULL, &name);
	if (!e || !name_ok(name)) {
		json_decref(e);
		snprintf(why, CHAN_MAX_WHY, "a listing entry that is not one name");
		return -EPROTO;
	}
	/* what it adds to the answer: its name twice (name, path), the folder, its owner, group and
	 * link target (in the frame, beside the name and path), and the fields around them */
	size_t cost = 2 * strlen(name) + strlen(dir) + 160 + (f->len - sizeof(struct sp_stat));
	/* the agent lists in name order: the cursor skips what an earlier page gave */
	if (op->list.after && strcmp(name, op->list.after) <= 0) {
		json_decref(e);
	} else if (json_array_size(op->json) >= LIST_MAX_ENTRIES || op->list.bytes + cost > LIST_MAX_BYTES) {
		json_decref(e);
		op->list.truncated = true;
		chan_send(&op->sb->chan, SP_H_ABORT, op->tag, NULL, 0, NULL, 0);
		list_done(op);
		return 0;
	} else {
		op->list.bytes += cost;
		free(op->list.last_name);
		op->list.last_name = strdup(name);
		json_array_append_new(op->json, e);
	}
	/* taken: the window opens again (returned in halves, so most entries cost no frame) */
	if (op->list.owed >= SP_WINDOW / 2) {
		chan_credit(&op->sb->chan, op->tag, op->list.owed);
		op->list.owed = 0;
	}
	return 0;
}

/* One listening socket of a sandbox (H_PORTS): checked, then added to op->json's "ports". */
static int port_entry(struct op *op, const struct frame *f, char *why)
{
	json_t *ports = json_is_object(op->json) ? json_object_get(op->json, "ports") : NULL;
	struct sp_port p;
	memcpy(&p, f->payload, sizeof(p));
	char addr[INET6_ADDRSTRLEN];
	if (!json_is_array(ports) || json_array_size(ports) >= SP_PORTS_MAX ||
	    (p.family != SP_FAMILY_IPV4 && p.family != SP_FAMILY_IPV6) ||
	    !inet_ntop(p.family == SP_FAMILY_IPV4 ? AF_INET : AF_INET6, p.addr, addr, sizeof(addr))) {
		snprintf(why, CHAN_MAX_WHY, "a port that was not asked for, of no family, or past %u", SP_PORTS_MAX);
		return -EPROTO;
	}
	json_array_append_new(ports, json_pack("{s:i, s:s, s:s}", "port", (int)p.port, "address", addr,
					       "protocol", "tcp"));
	return 0;
}

/* The absolute path an A_OK names (H_FWRITE, H_MKDIR of an agent with SP_FEATURE_FILE_USER),
 * or NULL. */
static const char *answered_path(const struct frame *f)
{
	size_t off = 0;
	const char *path = frame_str(f, &off);
	return path && path[0] == '/' ? path : NULL;
}

static int on_call(struct op *op, const struct frame *f, char *why)
{
	bool listing = json_is_array(op->json);
	if (f->type == SP_A_PORT)
		return port_entry(op, f, why);
	if (f->type == SP_A_STAT && listing)
		return list_entry(op, f, why);
	if (f->type == SP_A_STAT) {
		const char *name;
		json_t *e = stat_json(f, NULL, json_string_value(json_object_get(op->query, "path")), &name);
		if (!e) {
			snprintf(why, CHAN_MAX_WHY, "a stat without a name, or with a broken extension");
			return -EPROTO;
		}
		json_decref(op->json);
		op->json = e;
		op->answer = ANSWER_OK;
		op_unlink(op);
		op_finish(op);
	} else if (f->type == SP_A_END && listing) {
		list_done(op);
	} else if (f->type == SP_A_OK || f->type == SP_A_END || f->type == SP_A_PONG) {
		const char *path = answered_path(f);
		if (path && json_is_object(op->json)) /* a made folder, where the agent put it */
			json_object_set_new(op->json, "path", json_string(path));
		op_unlink(op);
		op_finish(op);
	}
	return 0;
}

static int on_write(struct op *op, const struct frame *f, char *why)
{
	if (f->type == SP_A_OK) {
		const char *path = answered_path(f);
		op->upload.open = true;
		if (path && json_is_object(op->json))
			json_object_set_new(op->json, "path", json_string(path));
	} else if (f->type == SP_A_CREDIT) {
		uint32_t more = frame_get_u32(f->payload);
		if (more > SP_WINDOW || op->upload.credit + more > SP_WINDOW) {
			snprintf(why, CHAN_MAX_WHY, "upload credit beyond the window");
			return -EPROTO;
		}
		op->upload.credit += more;
		op_wake(op);
	} else if (f->type == SP_A_END) {
		op->answer = ANSWER_CREATED;
		op_unlink(op);
		op_finish(op);
	}
	return 0;
}

/* A watch's frames: A_OK starts the stream, each A_EVENT is a line, A_END ends it. */
static int on_watch(struct op *op, const struct frame *f, char *why)
{
	static const char *const types[] = { NULL, "create", "write", "remove", "rename", "chmod", "lost" };
	if (f->type == SP_A_OK && !op->responding) {
		op->responding = true;
		op->done = true; /* headers can go: the handler answers with the stream */
		op_emit_json(op, json_pack("{s:s, s:s}", "type", "start", "path", op->what));
	} else if (f->type == SP_A_EVENT) {
		size_t off = sizeof(struct sp_event);
		const char *name = frame_str(f, &off);
		uint32_t type = frame_get_u32(f->payload);
		if (!op->responding || !name || type == 0 || type >= sizeof(types) / sizeof(types[0]) ||
		    name[0] == '/' || (type == SP_EVENT_LOST && name[0])) {
			snprintf(why, CHAN_MAX_WHY, "a watch event that was not asked for or names no change");
			return -EPROTO;
		}
		if (!take_window(op, f->len, why))
			return -EPROTO;
		json_t *ev = type == SP_EVENT_LOST ? json_pack("{s:s}", "type", types[type])
						   : json_pack("{s:s, s:s}", "type", types[type], "name", name);
		char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
		json_decref(ev);
		size_t n = s ? strlen(s) : 0;
		if (s) {
			s[n] = '\n';
			op_emit(op, s, n + 1, f->len); /* the credit goes back as the client takes the line */
		} else {
			op_return_credit(op, f->len);
		}
		free(s);
	} else if (f->type == SP_A_END && op->responding) {
		op_emit_json(op, json_pack("{s:s}", "type", "end"));
		op->eof = true;
		op_unlink(op);
		op_wake(op);
	}
	return 0;
}

int op_on_frame(struct op *op, const struct frame *f, char *why)
{
	if (f->type == SP_A_ERROR) {
		on_error_frame(op, f);
		return 0;
	}
	switch (op->kind) {
	case OP_EXEC:
		return f->type == SP_A_STARTED ? on_started(op, f, why) : 0;
	case OP_CALL:
		return on_call(op, f, why);
	case OP_READ:
		if (f->type == SP_A_STAT) {
			op->responding = true;
			op->done = true;
			op_wake(op);
		} else if (f->type == SP_A_DATA) {
			if (!take_window(op, f->len, why))
				return -EPROTO;
			op_emit(op, (const char *)f->payload, f->len, f->len);
		} else if (f->type == SP_A_END) {
			op_unlink(op);
			op->eof = true;
			op_wake(op);
		}
		return 0;
	case OP_WRITE:
		return on_write(op, f, why);
	case OP_WATCH:
		return on_watch(op, f, why);
	default:
		return 0;
	}
}

/*
 * daemon/core/op.c - requests in flight: linking them to sandboxes and processes,
 * turning agent frames into answers and NDJSON events, waking suspended HTTP
 * connections, and returning output credit as the client takes bytes.
 */
#include "daemon/core/op.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <microhttpd.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/base/log.h"
#include "daemon/core/entry.h"
#include "daemon/core/proc.h"
#include "daemon/core/stats.h"
#include "daemon/io/chan.h"
#include "daemon/io/loop.h"
#include "lib/codec.h"

/* Connections to resume once this thread drops d->lock. */
static __thread struct MHD_Connection *to_resume[256];
static __thread unsigned n_resume;

/* How long d->lock is held, for the lock figures logged at exit (bench/lock.py reads
 * them). Written with the lock held. */
static struct {
	uint64_t holds, over_1ms, over_10ms;
	int64_t total_ns, max_ns;
} lock_stats;
static __thread int64_t held_since_ns;

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void daemon_lock(struct daemon *d)
{
	pthread_mutex_lock(&d->lock);
	held_since_ns = mono_ns();
}

static void count_hold(void)
{
	int64_t ns = mono_ns() - held_since_ns;
	lock_stats.holds++;
	lock_stats.total_ns += ns;
	lock_stats.over_1ms += ns >= 1000000;
	lock_stats.over_10ms += ns >= 10000000;
	if (ns > lock_stats.max_ns)
		lock_stats.max_ns = ns;
}

int daemon_wait(struct daemon *d, const struct timespec *until)
{
	stats_lock_held(d->stats, mono_ns() - held_since_ns);
	count_hold();
	int rc = pthread_cond_timedwait(&d->cond, &d->lock, until);
	held_since_ns = mono_ns();
	return rc;
}

void daemon_lock_report(struct daemon *d)
{
	daemon_lock(d);
	log_info("lock: held %llu times, %.3f ms in all, longest %.3f ms, %llu holds of 1 ms or more, %llu of 10 ms or more",
		 (unsigned long long)lock_stats.holds, lock_stats.total_ns / 1e6, lock_stats.max_ns / 1e6,
		 (unsigned long long)lock_stats.over_1ms, (unsigned long long)lock_stats.over_10ms);
	pthread_mutex_unlock(&d->lock);
}

void daemon_unlock(struct daemon *d)
{
	struct MHD_Connection *list[256];
	unsigned n = n_resume;
	memcpy(list, to_resume, n * sizeof(list[0]));
	n_resume = 0;
	stats_lock_held(d->stats, mono_ns() - held_since_ns);
	count_hold();
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < n; i++)
		MHD_resume_connection(list[i]);
}

void op_wake(struct op *op)
{
	if (!op->suspended || !op->conn)
		return;
	if (n_resume == sizeof(to_resume) / sizeof(to_resume[0])) {
		/* Never expected (256 wake-ups under one lock); resuming with the lock held is
		 * still correct, only slower. */
		MHD_resume_connection(op->conn);
	} else {
		to_resume[n_resume++] = op->conn;
	}
	op->suspended = false;
}

void op_suspend(struct op *op)
{
	if (op->suspended)
		return;
	MHD_suspend_connection(op->conn);
	op->suspended = true;
}

void op_finish(struct op *op)
{
	op->done = true;
	if (!op->conn)
		pthread_cond_broadcast(&op->d->cond); /* a job waits for it */
	op_wake(op);
}

uint32_t op_link(struct op *op, struct sandbox *sb)
{
	sb->next_tag = (sb->next_tag + 1) & ~SP_CHAN_REQ;
	if (sb->next_tag < AGENT_TAG_FIRST)
		sb->next_tag = AGENT_TAG_FIRST;
	op->tag = SP_CHAN_REQ | sb->next_tag;
	op->sb = sb;
	op->next = sb->ops;
	sb->ops = op;
	return op->tag;
}

static void list_remove(struct op **head, struct op *op)
{
	for (struct op **pp = head; *pp; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			op->next = NULL;
			return;
		}
}

/* Takes op out of p's readers; false when it was not one. */
static bool reader_remove(struct proc *p, struct op *op)
{
	for (struct op **pp = &p->readers; *pp; pp = &(*pp)->next_reader)
		if (*pp == op) {
			*pp = op->next_reader;
			op->next_reader = NULL;
			p->nreaders--;
			return true;
		}
	return false;
}

void op_unlink(struct op *op)
{
	loop_timer_del(&op->d->loop, &op->timer);
	if (op->proc) {
		struct proc *p = op->proc;
		op->proc = NULL;
		list_remove(&p->waiters, op);
		/* a reader that leaves holds nothing back any more: the others go on */
		if (reader_remove(p, op) && op->sb)
			op_proc_credit(op->sb, p);
	}
	if (op->sb) {
		list_remove(op->deferred ? &op->sb->deferred : &op->sb->ops, op);
		op->deferred = false;
		op->sb = NULL;
	}
}

/* Appends one line to the client stream; `raw` output bytes ride on it for credit. */
static void emit(struct op *op, const char *line, size_t n, uint32_t raw)
{
	buf_put(&op->out, line, n);
	op->out_written += n;
	op->emitted_ms = mono_ms();
	if (raw) {
		if (op->ring_n == OP_CREDIT_RING) {
			op->ring[OP_CREDIT_RING - 1].end = op->out_written;
			op->ring[OP_CREDIT_RING - 1].raw += raw;
		} else {
			op->ring[op->ring_n].end = op->out_written;
			op->ring[op->ring_n].raw = raw;
			op->ring_n++;
		}
	}
	op_wake(op);
}

static void emit_json(struct op *op, json_t *ev)
{
	char *s = json_dumps(ev, JSON_COMPACT);
	json_decref(ev);
	if (!s)
		return;
	size_t n = strlen(s);
	s[n] = '\n';
	emit(op, s, n + 1, 0);
	free(s);
}

void op_keepalive(struct op *op, int64_t now_ms)
{
	if (!op->stream || !op->responding || op->eof || op->kind == OP_READ)
		return;
	if (op->emitted_ms == 0)
		op->emitted_ms = now_ms;
	if (now_ms - op->emitted_ms >= STREAM_KEEPALIVE_MS)
		emit_json(op, json_pack("{s:s}", "type", "keepalive"));
}

bool op_check_gone(struct op *op)
{
	if (!op->suspended || !op->conn || op->gone)
		return op->gone;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(op->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	/* the peer's FIN (or a reset) is visible without reading what it may have sent */
	struct pollfd p = { .fd = ci->connect_fd, .events = POLLRDHUP };
	if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return false;
	op->gone = true;
	op_wake(op);
	return true;
}

void op_fail(struct op *op, const struct err *e)
{
	if (op->responding) {
		if (op->kind == OP_READ) {
			op->failed = true;
		} else {
			json_t *ev = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "code", e->code, "message",
					       e->msg);
			if (ev && e->state[0])
				json_object_set_new(json_object_get(ev, "error"), "state", json_string(e->state));
			emit_json(op, ev);
		}
		op->eof = true;
		op_wake(op);
		return;
	}
	if (op->err.status == 0)
		op->err = *e;
	op_finish(op);
}

void op_fail_list(struct op **head, const struct err *e)
{
	while (*head) {
		struct op *op = *head;
		op_unlink(op); /* takes it off the list */
		op_fail(op, e);
	}
}

void op_fail_process_requests(struct sandbox *sb, const struct err *e)
{
	for (struct proc *p = sb->procs; p; p = p->next) {
		while (p->readers) {
			struct op *op = p->readers;
			op_unlink(op);
			op_fail(op, e);
		}
		op_fail_list(&p->waiters, e);
	}
}

/* The captured-output budget of op's tenant: the administrator's own, or its tenant's while it
 * has requests in flight (this one among them); NULL if the tenant is unknown. */
static uint64_t *capture_budget(struct op *op)
{
	if (!op->tenant[0])
		return &op->d->admin_captured;
	for (struct tenant_load *t = op->d->loads; t; t = t->next)
		if (strcmp(t->tenant, op->tenant) == 0)
			return &t->captured;
	return NULL;
}

/* Encodes one output chunk as an event line: text when it is UTF-8, unless it is
 * mostly control characters (escaped, more than twice its size), base64 otherwise. */
static void emit_output(struct op *op, int which, const uint8_t *data, size_t n, uint32_t raw)
{
	static const char *names[2] = { "stdout", "stderr" };
	size_t esc = codec_json_escaped_len(data, n);
	size_t b64 = codec_b64_len(n);
	size_t tail;
	bool text = codec_utf8_check(data, n, &tail) && tail == 0 && esc <= 2 * n;
	size_t cap = 48 + (text ? esc : b64);
	char *line = malloc(cap);
	if (!line)
		return;
	size_t k = (size_t)snprintf(line, cap, "{\"type\":\"%s\",\"%s\":\"", names[which],
				    text ? "data" : "data_b64");
	k += text ? codec_json_escape(line + k, data, n) : codec_b64_encode(line + k, data, n);
	memcpy(line + k, "\"}\n", 3);
	emit(op, line, k + 3, raw);
	free(line);
}

/* Streams a chunk, holding back an incomplete UTF-8 sequence at its end. */
static void stream_output(struct op *op, int which, const uint8_t *data, uint32_t n)
{
	uint8_t *joined = NULL;
	size_t len = n;
	const uint8_t *p = data;
	if (op->hold_len[which]) {
		joined = malloc(op->hold_len[which] + (size_t)n);
		if (!joined)
			return;
		memcpy(joined, op->utf8_hold[which], op->hold_len[which]);
		memcpy(joined + op->hold_len[which], data, n);
		len += op->hold_len[which];
		p = joined;
		op->hold_len[which] = 0;
	}
	size_t tail = 0;
	if (codec_utf8_check(p, len, &tail) && tail > 0 && tail < 4) {
		memcpy(op->utf8_hold[which], p + len - tail, tail);
		op->hold_len[which] = (uint8_t)tail;
		len -= tail;
	}
	/* the raw bytes' credit rides on the next line when this chunk was only a held tail */
	op->raw_carry += n;
	if (len > 0) {
		emit_output(op, which, p, len, op->raw_carry);
		op->raw_carry = 0;
	}
	free(joined);
}

static void flush_holds(struct op *op)
{
	for (int w = 0; w < 2; w++)
		if (op->hold_len[w]) {
			uint8_t h[4];
			size_t n = op->hold_len[w];
			memcpy(h, op->utf8_hold[w], n);
			op->hold_len[w] = 0;
			emit_output(op, w, h, n, op->raw_carry);
			op->raw_carry = 0;
		}
}

/* An A_OOM payload (checked when it arrived): an event on a stream; a capture's answer counts
 * it from the process record (exit_json). */
static void on_oom_event(struct op *op, const uint8_t *data)
{
	if (!op->stream)
		return;
	struct sp_oom o;
	memcpy(&o, data, sizeof(o));
	flush_holds(op);
	emit_json(op, json_pack("{s:s, s:i, s:s, s:I, s:I, s:I}", "type", "oom", "pid", (int)o.victim, "cmd",
				(const char *)data + sizeof(o), "rss_bytes", (json_int_t)o.rss, "memory_used_bytes",
				(json_int_t)o.used, "memory_limit_bytes", (json_int_t)o.limit));
}

/* Tells a stream how many output bytes of a "drop" process were discarded while nobody read
 * it (proc_keep), before the tail that was kept. */
static void report_dropped(struct op *op)
{
	if (!op->stream || !op->dropped)
		return;
	flush_holds(op);
	emit_json(op, json_pack("{s:s, s:I}", "type", "dropped", "bytes", (json_int_t)op->dropped));
	op->dropped = 0;
}

void op_on_output(struct op *op, uint8_t type, const uint8_t *data, uint32_t n)
{
	if (type == SP_A_OOM) {
		report_dropped(op);
		on_oom_event(op, data);
		return;
	}
	int which = type == SP_A_STDERR;
	stats_add(op->d->stats, STATS_EXEC_OUTPUT_BYTES, n);
	if (op->stream) {
		/* under either policy a connected reader misses nothing: what its client has not
		 * taken yet holds back the process's credit (op_proc_credit) */
		report_dropped(op);
		op->untaken += n;
		stream_output(op, which, data, n);
		return;
	}
	/* A capture takes everything at once: the credit goes straight back. What it keeps is
	 * bounded per stream and, across every capture of its tenant, by TENANT_MAX_CAPTURE. */
	size_t room = op->trunc[which] ? 0 : EXEC_MAX_CAPTURE - buf_avail(&op->cap[which]);
	uint64_t *budget = capture_budget(op);
	uint64_t left = budget && *budget < TENANT_MAX_CAPTURE ? TENANT_MAX_CAPTURE - *budget : 0;
	if (room > left)
		room = (size_t)left;
	size_t keep = n < room ? n : room;
	if (keep > 0 && buf_put(&op->cap[which], data, keep) == 0) {
		*budget += keep;
		op->captured += keep;
	} else {
		keep = 0;
	}
	if (keep < n)
		op->trunc[which] = true;
	/* nothing held: the credit goes back with the other readers' (op_proc_credit) */
}

void op_release_capture(struct op *op)
{
	uint64_t *budget = op->captured ? capture_budget(op) : NULL;
	if (budget)
		*budget -= op->captured < *budget ? op->captured : *budget;
	op->captured = 0;
}

/* A captured stream as JSON: a string when it is UTF-8 and escaping it at most doubles it (a
 * stream of control bytes would grow six-fold), else base64 under name_b64. */
static void put_captured(json_t *o, const char *name, struct buf *b)
{
	size_t n = buf_avail(b);
	bool text = n == 0 || codec_json_escaped_len(buf_head(b), n) <= 2 * n;
	json_t *s = !text ? NULL : n ? json_stringn((const char *)buf_head(b), n) : json_string("");
	if (s) {
		json_object_set_new(o, name, s);
		return;
	}
	char *enc = malloc(codec_b64_len(buf_avail(b)) + 1);
	char key[32];
	if (!enc)
		return;
	size_t k = codec_b64_encode(enc, buf_head(b), buf_avail(b));
	snprintf(key, sizeof(key), "%s_b64", name);
	json_object_set_new(o, key, json_stringn(enc, k));
	free(enc);
}

static json_t *exit_json(struct op *op, const struct proc *p)
{
	return json_pack("{s:i, s:o, s:b, s:b, s:i, s:I}", "exit_code", p->code, "signal",
			 p->signo ? json_integer(p->signo) : json_null(), "timed_out", p->timed_out, "oom_killed",
			 p->oom_killed, "oom_kills", (int)p->oom_kills, "duration_ms", (json_int_t)(mono_ms() - op->t0));
}

void op_on_exit(struct op *op, const struct proc *p)
{
	if (op->stream) {
		report_dropped(op);
		flush_holds(op);
		json_t *ev = exit_json(op, p);
		json_object_set_new(ev, "type", json_string("exit"));
		emit_json(op, ev);
		op->eof = true;
		op_unlink(op);
		op_wake(op);
		return;
	}
	json_t *r = exit_json(op, p);
	json_object_set_new(r, "pid", json_integer(p->pid));
	put_captured(r, "stdout", &op->cap[0]);
	put_captured(r, "stderr", &op->cap[1]);
	buf_free(&op->cap[0]);
	buf_free(&op->cap[1]);
	op_release_capture(op);
	if (op->trunc[0])
		json_object_set_new(r, "stdout_truncated", json_true());
	if (op->trunc[1])
		json_object_set_new(r, "stderr_truncated", json_true());
	op->status = 200;
	op->json = r;
	op_unlink(op);
	op_finish(op);
}

void op_proc_credit(struct sandbox *sb, struct proc *p)
{
	uint32_t hold = 0;
	for (const struct op *r = p->readers; r; r = r->next_reader)
		if (r->untaken > hold)
			hold = r->untaken;
	if (!p->readers && !p->drop)
		hold = p->pending_out;
	if (p->owed > hold) {
		chan_credit(&sb->chan, p->pid, p->owed - hold);
		p->owed = hold;
	}
}

void op_attach(struct op *op, struct proc *p)
{
	op->next_reader = p->readers;
	p->readers = op;
	p->nreaders++;
	op->proc = p;
	op->dropped += p->dropped;
	p->dropped = 0;
	report_dropped(op);
	while (buf_avail(&p->pending) >= 5) {
		const uint8_t *h = buf_head(&p->pending);
		uint32_t n = frame_get_u32(h + 1);
		op_on_output(op, h[0], h + 5, n);
		buf_consume(&p->pending, 5 + (size_t)n);
	}
	if (op->sb)
		op->sb->pending_bytes -= p->pending_raw < op->sb->pending_bytes ? p->pending_raw : op->sb->pending_bytes;
	p->pending_raw = 0;
	p->pending_out = 0;
	buf_free(&p->pending);
	if (op->sb)
		op_proc_credit(op->sb, p);
	if (p->exited)
		op_on_exit(op, p);
}

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
		err_set(&e, 422, "exec_failed", er.err, "%s", msg ? msg : strerror(er.err));
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
		err_set(&e, 503, "unavailable", EPROTO, "sandbox %s: %s", sb->id, why);
		op_fail(op, &e);
		return -EPROTO;
	}
	p->exited = false;
	p->listed = true;
	p->hearsay = false;
	p->started_ms = now_ms();
	p->stdin_credit = SP_WINDOW;
	p->drop = op->drop;
	p->dropped = 0;
	free(p->cmd);
	p->cmd = op->what ? strdup(op->what) : NULL;
	json_decref(p->spec);
	p->spec = json_incref(op->spec);
	op->pid = st.pid;
	if (op->stdin_pending) {
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
		op->stdin_pending = false;
	}
	if (op->background) {
		op->json = json_pack("{s:i}", "pid", st.pid);
		op->status = 201;
		op_finish(op);
		return 0;
	}
	op->sb = sb;
	op_attach(op, p);
	if (op->stream) {
		op->responding = true;
		emit_json(op, json_pack("{s:s, s:i}", "type", "start", "pid", st.pid));
		op->done = true; /* headers can go: the handler answers with the stream */
	}
	return 0;
}

/* Takes `len` bytes on op's tag against its window; false when the agent sent beyond it. */
static bool take_window(struct op *op, uint32_t len, char *why)
{
	if (op->owed + len > SP_WINDOW) {
		snprintf(why, CHAN_MAX_WHY, "%u bytes on request %#x beyond its credit", op->owed + len, op->tag);
		return false;
	}
	op->owed += len;
	return true;
}

/* Ends a listing: its entries, and where to go on when it stopped at a limit. */
static void list_done(struct op *op)
{
	json_t *entries = op->json;
	op->json = json_pack("{s:o, s:b}", "entries", entries, "truncated", op->truncated);
	if (op->truncated && op->last_name)
		json_object_set_new(op->json, "next", json_string(op->last_name));
	op->status = 200;
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
	if (op->after && strcmp(name, op->after) <= 0) {
		json_decref(e);
	} else if (json_array_size(op->json) >= LIST_MAX_ENTRIES || op->list_bytes + cost > LIST_MAX_BYTES) {
		json_decref(e);
		op->truncated = true;
		chan_send(&op->sb->chan, SP_H_ABORT, op->tag, NULL, 0, NULL, 0);
		list_done(op);
		return 0;
	} else {
		op->list_bytes += cost;
		free(op->last_name);
		op->last_name = strdup(name);
		json_array_append_new(op->json, e);
	}
	/* taken: the window opens again (returned in halves, so most entries cost no frame) */
	if (op->owed >= SP_WINDOW / 2) {
		chan_credit(&op->sb->chan, op->tag, op->owed);
		op->owed = 0;
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
		op->status = 200;
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
		op->upload_open = true;
		if (path && json_is_object(op->json))
			json_object_set_new(op->json, "path", json_string(path));
	} else if (f->type == SP_A_CREDIT) {
		uint32_t more = frame_get_u32(f->payload);
		if (more > SP_WINDOW || op->credit + more > SP_WINDOW) {
			snprintf(why, CHAN_MAX_WHY, "upload credit beyond the window");
			return -EPROTO;
		}
		op->credit += more;
		op_wake(op);
	} else if (f->type == SP_A_END) {
		op->status = 201;
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
		emit_json(op, json_pack("{s:s, s:s}", "type", "start", "path", op->what));
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
			emit(op, s, n + 1, f->len); /* the credit goes back as the client takes the line */
		} else {
			op_return_credit(op, f->len);
		}
		free(s);
	} else if (f->type == SP_A_END && op->responding) {
		emit_json(op, json_pack("{s:s}", "type", "end"));
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
			emit(op, (const char *)f->payload, f->len, f->len);
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

void op_return_credit(struct op *op, uint32_t credit)
{
	if (!op->sb || !credit)
		return;
	if (op->kind == OP_READ || op->kind == OP_WATCH) {
		uint32_t give = credit < op->owed ? credit : op->owed;
		op->owed -= give;
		chan_credit(&op->sb->chan, op->tag, give);
	} else if (op->proc) {
		op->untaken -= credit < op->untaken ? credit : op->untaken;
		op_proc_credit(op->sb, op->proc);
	}
}

/* A deadline passed: a deferred request gives up on the agent; a wait answers with the process
 * as it is now. */
static void op_deadline(struct timer *t)
{
	struct op *op = (struct op *)((char *)t - offsetof(struct op, timer));
	if (op->deferred) {
		struct err e = { 0 };
		err_set(&e, 503, "unavailable", ENOTCONN, "sandbox %s: its agent did not connect", op->sbid);
		op_unlink(op);
		op_fail(op, &e);
		return;
	}
	if (op->proc)
		op->json = proc_json(op->proc);
	op_unlink(op);
	op_finish(op);
}

void op_set_deadline(struct op *op, int64_t when_ms)
{
	op->timer.fn = op_deadline;
	loop_timer_add(&op->d->loop, &op->timer, when_ms);
}

size_t op_take(struct op *op, uint8_t *dst, size_t max, uint32_t *credit)
{
	size_t n = buf_avail(&op->out);
	if (n > max)
		n = max;
	memcpy(dst, buf_head(&op->out), n);
	buf_consume(&op->out, n);
	op->out_read += n;
	uint32_t give = 0;
	unsigned k = 0;
	while (k < op->ring_n && op->ring[k].end <= op->out_read)
		give += op->ring[k++].raw;
	if (k) {
		memmove(op->ring, op->ring + k, (op->ring_n - k) * sizeof(op->ring[0]));
		op->ring_n -= k;
	}
	*credit = give;
	if (op->on_take)
		op->on_take(op);
	return n;
}

void op_free(struct op *op)
{
	op_release_capture(op);
	free(op->after);
	free(op->last_name);
	buf_free(&op->body);
	buf_free(&op->out);
	buf_free(&op->cap[0]);
	buf_free(&op->cap[1]);
	json_decref(op->json);
	json_decref(op->query);
	json_decref(op->spec);
	free(op->what);
	free(op);
}

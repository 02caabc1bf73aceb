/*
 * daemon/core/op_output.c - a process's output and exit reaching the requests that read it:
 * captured within the tenant's budget for an exec that answers once, or streamed as NDJSON
 * events under the client's credit; the exit's answer; a reader attached to a running process.
 */
#include "daemon/core/op.h"
#include "daemon/core/op_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/stats.h"
#include "lib/codec.h"

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
	op_emit(op, line, k + 3, raw);
	free(line);
}

/* Streams a chunk, holding back an incomplete UTF-8 sequence at its end. */
static void stream_output(struct op *op, int which, const uint8_t *data, uint32_t n)
{
	uint8_t *joined = NULL;
	size_t len = n;
	const uint8_t *p = data;
	if (op->exec.hold_len[which]) {
		joined = malloc(op->exec.hold_len[which] + (size_t)n);
		if (!joined)
			return;
		memcpy(joined, op->exec.utf8_hold[which], op->exec.hold_len[which]);
		memcpy(joined + op->exec.hold_len[which], data, n);
		len += op->exec.hold_len[which];
		p = joined;
		op->exec.hold_len[which] = 0;
	}
	size_t tail = 0;
	if (codec_utf8_check(p, len, &tail) && tail > 0 && tail < 4) {
		memcpy(op->exec.utf8_hold[which], p + len - tail, tail);
		op->exec.hold_len[which] = (uint8_t)tail;
		len -= tail;
	}
	/* the raw bytes' credit rides on the next line when this chunk was only a held tail */
	op->exec.raw_carry += n;
	if (len > 0) {
		emit_output(op, which, p, len, op->exec.raw_carry);
		op->exec.raw_carry = 0;
	}
	free(joined);
}

static void flush_holds(struct op *op)
{
	for (int w = 0; w < 2; w++)
		if (op->exec.hold_len[w]) {
			uint8_t h[4];
			size_t n = op->exec.hold_len[w];
			memcpy(h, op->exec.utf8_hold[w], n);
			op->exec.hold_len[w] = 0;
			emit_output(op, w, h, n, op->exec.raw_carry);
			op->exec.raw_carry = 0;
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
	op_emit_json(op, json_pack("{s:s, s:i, s:s, s:I, s:I, s:I}", "type", "oom", "pid", (int)o.victim, "cmd",
				(const char *)data + sizeof(o), "rss_bytes", (json_int_t)o.rss, "memory_used_bytes",
				(json_int_t)o.used, "memory_limit_bytes", (json_int_t)o.limit));
}

/* Tells a stream how many output bytes of a "drop" process were discarded while nobody read
 * it (proc_keep), before the tail that was kept. */
static void report_dropped(struct op *op)
{
	if (!op->stream || !op->exec.dropped)
		return;
	flush_holds(op);
	op_emit_json(op, json_pack("{s:s, s:I}", "type", "dropped", "bytes", (json_int_t)op->exec.dropped));
	op->exec.dropped = 0;
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
		op->exec.untaken += n;
		stream_output(op, which, data, n);
		return;
	}
	/* A capture takes everything at once: the credit goes straight back. What it keeps is
	 * bounded per stream and, across every capture of its tenant, by TENANT_MAX_CAPTURE. */
	size_t room = op->exec.trunc[which] ? 0 : EXEC_MAX_CAPTURE - buf_avail(&op->exec.cap[which]);
	uint64_t *budget = capture_budget(op);
	uint64_t left = budget && *budget < TENANT_MAX_CAPTURE ? TENANT_MAX_CAPTURE - *budget : 0;
	if (room > left)
		room = (size_t)left;
	size_t keep = n < room ? n : room;
	if (keep > 0 && buf_put(&op->exec.cap[which], data, keep) == 0) {
		*budget += keep;
		op->exec.captured += keep;
	} else {
		keep = 0;
	}
	if (keep < n)
		op->exec.trunc[which] = true;
	/* nothing held: the credit goes back with the other readers' (op_proc_credit) */
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
			 p->oom_killed, "oom_kills", (int)p->oom_kills, "duration_ms", (json_int_t)(mono_ms() - op->exec.t0));
}

void op_on_exit(struct op *op, const struct proc *p)
{
	if (op->stream) {
		report_dropped(op);
		flush_holds(op);
		json_t *ev = exit_json(op, p);
		json_object_set_new(ev, "type", json_string("exit"));
		op_emit_json(op, ev);
		op->eof = true;
		op_unlink(op);
		op_wake(op);
		return;
	}
	json_t *r = exit_json(op, p);
	json_object_set_new(r, "pid", json_integer(p->pid));
	put_captured(r, "stdout", &op->exec.cap[0]);
	put_captured(r, "stderr", &op->exec.cap[1]);
	buf_free(&op->exec.cap[0]);
	buf_free(&op->exec.cap[1]);
	op_release_capture(op);
	if (op->exec.trunc[0])
		json_object_set_new(r, "stdout_truncated", json_true());
	if (op->exec.trunc[1])
		json_object_set_new(r, "stderr_truncated", json_true());
	op->answer = ANSWER_OK;
	op->json = r;
	op_unlink(op);
	op_finish(op);
}

void op_attach(struct op *op, struct proc *p)
{
	op->next_reader = p->readers;
	p->readers = op;
	p->nreaders++;
	op->proc = p;
	op->exec.dropped += p->dropped;
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

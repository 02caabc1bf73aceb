/*
 * tests/unit/daemon/core/test_op.c - a process's output on its way to the clients that read
 * it (daemon/core/op.c, op_output.c, op_frame.c): while a reader is connected nothing is lost
 * and the agent gets its credit back only as the slowest reader's client takes the bytes;
 * with nobody reading, "block" holds the output for the next reader and "drop" keeps only its
 * tail and counts the rest; credit given back never exceeds what was taken; a UTF-8 sequence
 * cut between two chunks arrives whole; a capture keeps EXEC_MAX_CAPTURE bytes, within its
 * tenant's TENANT_MAX_CAPTURE, and never holds the process back.
 *
 * The test plays the agent, which sends output only within the credit it holds and whose
 * frames reach the readers as peer.c's on_output and deliver hand them over, and the HTTP
 * layer, whose client takes bytes with op_take and gives their credit back with
 * op_return_credit as api/http.c's stream_reader does. The agent's channel (chan_credit,
 * chan_send) and the front's resume of a suspended connection are fakes below that
 * record what the module gave them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "daemon/core/op.h"
#include "daemon/core/proc.h"
#include "daemon/core/stats.h"
#include "lib/codec.h"

#define PID 42
#define TAG (SP_CHAN_REQ | 7u)
#define STREAM_MAX (EXEC_MAX_CAPTURE + 2 * SP_MAX_PAYLOAD) /* bytes of output one test sends, at most */

/* The agent's side: its credit per process (and per download tag), what it sent. */
static struct {
	struct daemon d;
	struct sandbox sb;
	struct proc *p;
	uint32_t window;       /* output bytes the agent may still send for PID */
	uint64_t sent;         /* output bytes it sent for PID */
	uint64_t credited;     /* credit spaced gave back for PID */
	uint64_t tag_credited; /* credit spaced gave back on TAG */
	uint8_t stream[STREAM_MAX]; /* what it sent, in order */
	void *woken[8];
	unsigned nwoken;
} w;

int chan_credit(struct chan *c, uint32_t chan, uint32_t bytes)
{
	assert_ptr_equal(c, &w.sb.chan);
	if (chan == TAG) {
		w.tag_credited += bytes;
		return 0;
	}
	assert_int_equal(chan, PID);
	w.credited += bytes;
	w.window += bytes;
	/* credit back never exceeds what the agent sent: its window is never more than whole */
	assert_true(w.window <= SP_WINDOW);
	assert_true(w.credited <= w.sent);
	return 0;
}

int chan_send(struct chan *c, uint8_t type, uint32_t chan, const void *a, size_t na, const void *b, size_t nb)
{
	assert_ptr_equal(c, &w.sb.chan);
	return 0;
}

/* The front of the test's requests: it records the connections the core resumes. */
static void front_resume(void *conn)
{
	assert_true(w.nwoken < sizeof(w.woken) / sizeof(w.woken[0]));
	w.woken[w.nwoken++] = conn;
}

static const struct op_front front = { .resume = front_resume };

static int setup(void **state)
{
	memset(&w, 0, offsetof(typeof(w), stream));
	pthread_mutex_init(&w.d.lock, NULL);
	pthread_cond_init(&w.d.cond, NULL);
	w.d.stats = stats_new();
	w.sb.d = &w.d;
	snprintf(w.sb.id, sizeof(w.sb.id), "0123456789ab");
	w.p = proc_get(&w.sb, PID);
	w.window = SP_WINDOW;
	for (size_t i = 0; i < STREAM_MAX; i++) /* letters in an order that shows a byte out of place */
		w.stream[i] = (uint8_t)('a' + (i * 7 + i / 26) % 26);
	return 0;
}

static int teardown(void **state)
{
	proc_free_all(&w.sb);
	stats_free(w.d.stats);
	pthread_cond_destroy(&w.d.cond);
	pthread_mutex_destroy(&w.d.lock);
	return 0;
}

/* The agent sends data as output of PID, if its credit allows (else false: the process waits). */
static bool agent_sends(uint8_t type, const uint8_t *data, uint32_t n)
{
	if (n > w.window)
		return false;
	w.window -= n;
	w.sent += n;
	struct proc *p = w.p;
	p->owed += n;
	if (p->readers) {
		for (struct op *r = p->readers, *next; r; r = next) {
			next = r->next_reader;
			op_on_output(r, type, data, n);
		}
	} else {
		assert_int_equal(proc_keep(&w.sb, p, type, data, n), 0);
	}
	op_proc_credit(&w.sb, p);
	return true;
}

/* The next n bytes of the test's stream, as output. */
static bool agent_sends_next(uint32_t n)
{
	assert_true(w.sent + n <= STREAM_MAX);
	return agent_sends(SP_A_STDOUT, w.stream + w.sent, n);
}

/* A client reading one request's stream: the output its events carried, and the rest. */
struct client {
	struct op *op;
	struct buf line; /* bytes of a line not yet whole */
	struct buf out;  /* stdout, decoded */
	uint64_t dropped;
	unsigned dropped_events, b64_events, events;
	bool exited;
};

static void event(struct client *c, const char *text, size_t n)
{
	json_error_t je;
	json_t *ev = json_loadb(text, n, 0, &je);
	assert_non_null(ev); /* every line is JSON, and its strings UTF-8 */
	const char *type = json_string_value(json_object_get(ev, "type"));
	assert_non_null(type);
	c->events++;
	if (strcmp(type, "stdout") == 0) {
		json_t *data = json_object_get(ev, "data"), *b64 = json_object_get(ev, "data_b64");
		if (data) {
			buf_put(&c->out, json_string_value(data), json_string_length(data));
		} else {
			assert_non_null(b64);
			uint8_t *dec = malloc(json_string_length(b64) / 4 * 3 + 1);
			long k = codec_b64_decode(dec, json_string_value(b64), json_string_length(b64));
			assert_true(k >= 0);
			buf_put(&c->out, dec, (size_t)k);
			free(dec);
			c->b64_events++;
		}
	} else if (strcmp(type, "dropped") == 0) {
		/* said before any output that follows what was discarded */
		c->dropped += (uint64_t)json_integer_value(json_object_get(ev, "bytes"));
		c->dropped_events++;
	} else if (strcmp(type, "exit") == 0) {
		c->exited = true;
	}
	json_decref(ev);
}

/* The client takes up to max bytes of its stream, as the HTTP layer hands them over; how many. */
static size_t client_takes(struct client *c, size_t max)
{
	static uint8_t tmp[1024 * 1024];
	if (max > sizeof(tmp))
		max = sizeof(tmp);
	uint32_t credit = 0;
	size_t n = op_take(c->op, tmp, max, &credit);
	op_return_credit(c->op, credit);
	buf_put(&c->line, tmp, n);
	const uint8_t *nl;
	while ((nl = memchr(buf_head(&c->line), '\n', buf_avail(&c->line)))) {
		size_t len = (size_t)(nl - buf_head(&c->line));
		event(c, (const char *)buf_head(&c->line), len);
		buf_consume(&c->line, len + 1);
	}
	/* what the agent got back is never more than this client has (every test's output is
	 * ASCII, so a byte of output is a byte the client decoded) */
	assert_true(w.credited <= w.sent);
	return n;
}

static void client_takes_all(struct client *c)
{
	while (client_takes(c, SIZE_MAX) > 0)
		;
}

/* The client has exactly bytes [from, from + n) of the test's stream, in order. */
static void assert_got(const struct client *c, uint64_t from, uint64_t n)
{
	assert_int_equal(buf_avail(&c->out), n);
	assert_memory_equal(buf_head(&c->out), w.stream + from, n);
}

/* A client connects to PID's output: a stream (GET .../output), or a capture (an exec that
 * answers once). */
static void client_joins(struct client *c, bool stream)
{
	memset(c, 0, sizeof(*c));
	struct op *op = calloc(1, sizeof(*op));
	op->d = &w.d;
	op->kind = stream ? OP_ATTACH : OP_EXEC;
	op->stream = stream;
	op->responding = stream;
	op->sb = &w.sb;
	op_attach(op, w.p);
	c->op = op;
}

static void client_leaves(struct client *c)
{
	op_unlink(c->op);
	op_free(c->op);
	buf_free(&c->line);
	buf_free(&c->out);
}

static void test_reader_gets_everything_and_credit_follows_its_client(void **state)
{
	struct client c;
	client_joins(&c, true);
	/* the agent sends its whole window; the client has taken nothing: no credit goes back */
	while (agent_sends_next(SP_MAX_PAYLOAD / 4))
		;
	assert_int_equal(w.sent, SP_WINDOW);
	assert_int_equal(w.credited, 0);
	assert_false(agent_sends_next(1)); /* the process waits for its reader */
	/* credit follows what the client takes, never ahead of it */
	client_takes(&c, 100000);
	assert_true(w.credited > 0);
	assert_int_equal(w.credited, buf_avail(&c.out)); /* exactly the lines it has taken whole */
	client_takes_all(&c);
	assert_int_equal(w.credited, SP_WINDOW);
	assert_got(&c, 0, SP_WINDOW);
	/* and the process goes on */
	assert_true(agent_sends_next(1000));
	client_takes_all(&c);
	assert_got(&c, 0, SP_WINDOW + 1000);
	assert_int_equal(w.credited, w.sent);
	client_leaves(&c);
}

static void test_credit_waits_for_the_slowest_reader(void **state)
{
	struct client a, b;
	client_joins(&a, true);
	client_joins(&b, true);
	for (int i = 0; i < 3; i++)
		assert_true(agent_sends_next(1000));
	client_takes_all(&a);
	assert_int_equal(w.credited, 0); /* b has taken nothing yet */
	client_takes(&b, 1);
	client_takes_all(&b);
	assert_int_equal(w.credited, 3000);
	assert_got(&a, 0, 3000);
	assert_got(&b, 0, 3000);

	/* the slowest reader leaves: it holds nothing back any more */
	assert_true(agent_sends_next(2000));
	client_takes_all(&a);
	assert_int_equal(w.credited, 3000);
	client_leaves(&b);
	assert_int_equal(w.credited, 5000);
	assert_got(&a, 0, 5000);
	client_leaves(&a);
}

static void test_a_reader_misses_nothing_whatever_the_policy(void **state)
{
	/* "drop" only applies while nobody reads: a connected reader holds the process back */
	w.p->drop = true;
	struct client c;
	client_joins(&c, true);
	while (agent_sends_next(SP_MAX_PAYLOAD))
		;
	assert_int_equal(w.sent, SP_WINDOW);
	assert_int_equal(w.credited, 0);
	client_takes_all(&c);
	assert_got(&c, 0, SP_WINDOW);
	assert_int_equal(c.dropped_events, 0);
	assert_int_equal(w.credited, SP_WINDOW);
	client_leaves(&c);
}

static void test_block_holds_output_for_the_next_reader(void **state)
{
	while (agent_sends_next(SP_MAX_PAYLOAD / 2))
		;
	assert_int_equal(w.sent, SP_WINDOW);
	assert_int_equal(w.credited, 0); /* nobody read it: the process waits */
	assert_false(agent_sends_next(1));

	struct client c;
	client_joins(&c, true);
	assert_int_equal(w.credited, 0); /* handed to the reader, not yet taken by its client */
	client_takes(&c, 100000);
	assert_true(w.credited > 0);
	assert_int_equal(w.credited, buf_avail(&c.out));
	client_takes_all(&c);
	assert_got(&c, 0, SP_WINDOW);
	assert_int_equal(c.dropped_events, 0);
	assert_int_equal(w.credited, SP_WINDOW);
	assert_true(agent_sends_next(10));
	client_takes_all(&c);
	assert_got(&c, 0, SP_WINDOW + 10);
	client_leaves(&c);
}

static void test_drop_keeps_the_tail_and_counts_the_rest(void **state)
{
	w.p->drop = true;
	/* nobody reads: the process is never held back */
	for (int i = 0; i < 40; i++) {
		assert_true(agent_sends_next(SP_MAX_PAYLOAD / 4));
		assert_int_equal(w.credited, w.sent);
	}
	uint64_t before = w.sent;
	assert_true(before > PROC_DROP_KEEP);

	struct client c;
	client_joins(&c, true);
	client_takes_all(&c);
	assert_int_equal(c.dropped_events, 1);
	assert_int_equal(c.dropped, before - PROC_DROP_KEEP);
	assert_got(&c, before - PROC_DROP_KEEP, PROC_DROP_KEEP); /* the most recent output, whole */

	/* from now on the reader gets everything, and holds the process back */
	while (agent_sends_next(SP_MAX_PAYLOAD / 4))
		;
	assert_int_equal(w.sent - w.credited, SP_WINDOW);
	client_takes_all(&c);
	assert_int_equal(c.dropped_events, 1);
	assert_int_equal(buf_avail(&c.out), w.sent - c.dropped);
	assert_memory_equal(buf_head(&c.out), w.stream + c.dropped, w.sent - c.dropped);
	assert_int_equal(w.credited, w.sent);
	client_leaves(&c);
}

static void test_a_reader_that_leaves_stops_holding_back(void **state)
{
	struct client c;
	client_joins(&c, true);
	assert_true(agent_sends_next(3000));
	client_takes(&c, 10); /* not even one line */
	assert_int_equal(w.credited, 0);
	client_leaves(&c);
	assert_int_equal(w.credited, 3000);
	/* "block" again: what comes now waits for the next reader */
	assert_true(agent_sends_next(500));
	assert_int_equal(w.credited, 3000);
	client_joins(&c, true);
	client_takes_all(&c);
	assert_got(&c, 3000, 500);
	assert_int_equal(w.credited, 3500);
	client_leaves(&c);
}

static void test_a_capture_gives_credit_back_at_once(void **state)
{
	struct client cap;
	client_joins(&cap, false);
	for (unsigned i = 0; i < 2 * SP_WINDOW / SP_MAX_PAYLOAD; i++) /* two windows, never held back */
		assert_true(agent_sends_next(SP_MAX_PAYLOAD));
	assert_int_equal(w.credited, 2 * SP_WINDOW);
	assert_true(agent_sends_next(100));
	assert_int_equal(w.credited, 2 * SP_WINDOW + 100);

	/* a stream beside it holds the process back until its client takes the bytes */
	struct client c;
	client_joins(&c, true);
	assert_true(agent_sends_next(200));
	assert_int_equal(w.credited, 2 * SP_WINDOW + 100);
	client_takes_all(&c);
	assert_int_equal(w.credited, 2 * SP_WINDOW + 300);
	assert_got(&c, 2 * SP_WINDOW + 100, 200);

	/* the capture's answer holds everything it took */
	w.p->exited = true;
	op_on_exit(cap.op, w.p);
	assert_true(cap.op->done);
	json_t *out = json_object_get(cap.op->json, "stdout");
	assert_int_equal(json_string_length(out), 2 * SP_WINDOW + 300);
	assert_memory_equal(json_string_value(out), w.stream, 2 * SP_WINDOW + 300);
	client_leaves(&cap);
	client_leaves(&c);
}

/* What the capture's answer holds: its stdout, and whether it was cut. */
static size_t captured(struct client *cap, bool *truncated)
{
	w.p->exited = true;
	op_on_exit(cap->op, w.p);
	assert_true(cap->op->done);
	json_t *out = json_object_get(cap->op->json, "stdout");
	*truncated = json_is_true(json_object_get(cap->op->json, "stdout_truncated"));
	assert_memory_equal(json_string_value(out), w.stream, json_string_length(out));
	return json_string_length(out);
}

static void test_a_capture_keeps_all_at_its_limit(void **state)
{
	struct client cap;
	client_joins(&cap, false);
	while (w.sent < EXEC_MAX_CAPTURE)
		assert_true(agent_sends_next(SP_MAX_PAYLOAD));
	assert_int_equal(w.sent, EXEC_MAX_CAPTURE);
	bool cut;
	assert_int_equal(captured(&cap, &cut), EXEC_MAX_CAPTURE); /* at the edge: all of it */
	assert_false(cut);
	assert_int_equal(w.d.admin_captured, 0); /* given back with the answer */
	client_leaves(&cap);
}

static void test_a_capture_past_its_limit_is_cut(void **state)
{
	struct client cap;
	client_joins(&cap, false);
	while (w.sent <= EXEC_MAX_CAPTURE)
		assert_true(agent_sends_next(SP_MAX_PAYLOAD)); /* never held back */
	assert_int_equal(w.credited, w.sent);
	bool cut;
	assert_int_equal(captured(&cap, &cut), EXEC_MAX_CAPTURE);
	assert_true(cut);
	assert_int_equal(w.d.admin_captured, 0);
	client_leaves(&cap);
}

static void test_captures_share_their_tenants_budget(void **state)
{
	/* the administrator's other captures hold all but 100 bytes of the budget */
	w.d.admin_captured = TENANT_MAX_CAPTURE - 100;
	struct client cap;
	client_joins(&cap, false);
	assert_true(agent_sends_next(1000));
	assert_int_equal(w.d.admin_captured, TENANT_MAX_CAPTURE);
	assert_int_equal(w.credited, 1000);
	bool cut;
	assert_int_equal(captured(&cap, &cut), 100);
	assert_true(cut);
	assert_int_equal(w.d.admin_captured, TENANT_MAX_CAPTURE - 100);
	client_leaves(&cap);
}

static void test_many_lines_before_the_client_reads(void **state)
{
	/* more chunks than the credit ring has entries: the last entry gathers the rest */
	struct client c;
	client_joins(&c, true);
	unsigned chunks = OP_CREDIT_RING * 3;
	for (unsigned i = 0; i < chunks; i++)
		assert_true(agent_sends_next(100));
	assert_int_equal(c.op->ring_n, OP_CREDIT_RING);
	while (client_takes(&c, 333) > 0)
		assert_true(w.credited <= buf_avail(&c.out));
	assert_got(&c, 0, chunks * 100);
	assert_int_equal(w.credited, chunks * 100);
	client_leaves(&c);
}

/* A chunk of bytes the test gives (not from its stream). */
static void agent_sends_text(const char *s)
{
	assert_true(agent_sends(SP_A_STDOUT, (const uint8_t *)s, (uint32_t)strlen(s)));
}

static void test_utf8_cut_between_chunks_arrives_whole(void **state)
{
	struct client c, cap;
	client_joins(&c, true);
	client_joins(&cap, false);
	agent_sends_text("h\xc3");
	agent_sends_text("\xa9llo ");
	agent_sends_text("\xe2"); /* a euro sign in three frames */
	agent_sends_text("\x82");
	client_takes_all(&c);
	assert_int_equal(w.credited, 7); /* the lines so far carry their held bytes' credit */
	agent_sends_text("\xac!");
	client_takes_all(&c);
	assert_int_equal(c.b64_events, 0); /* every line was text */
	assert_int_equal(buf_avail(&c.out), strlen("h\xc3\xa9llo \xe2\x82\xac!"));
	assert_memory_equal(buf_head(&c.out), "h\xc3\xa9llo \xe2\x82\xac!", buf_avail(&c.out));
	assert_int_equal(w.credited, w.sent);

	/* a capture joins the pieces too */
	w.p->exited = true;
	op_on_exit(cap.op, w.p);
	assert_string_equal(json_string_value(json_object_get(cap.op->json, "stdout")), "h\xc3\xa9llo \xe2\x82\xac!");
	client_leaves(&cap);
	client_leaves(&c);
}

static void test_a_cut_sequence_left_at_exit_is_not_lost(void **state)
{
	struct client c;
	client_joins(&c, true);
	agent_sends_text("ok\xf0\x9f");
	w.p->exited = true;
	op_on_exit(c.op, w.p);
	client_takes_all(&c);
	assert_true(c.exited);
	assert_int_equal(buf_avail(&c.out), 4);
	assert_memory_equal(buf_head(&c.out), "ok\xf0\x9f", 4);
	assert_int_equal(w.credited, 4);
	client_leaves(&c);
}

/* Several readers taking at their own pace, the agent sending whenever its credit allows: at
 * every step the agent holds no more credit than a whole window, and has back no more than the
 * slowest client took; in the end every client has every byte, in order, and the credit is all
 * back. */
static void test_readers_at_their_own_pace(void **state)
{
	enum { READERS = 3 };
	struct client c[READERS];
	for (int i = 0; i < READERS; i++)
		client_joins(&c[i], true);
	uint32_t seed = 12345;
	while (w.sent < 8 * 1024 * 1024) {
		seed = seed * 1103515245u + 12345u;
		uint32_t r = seed >> 8;
		if (r % 3 == 0) {
			agent_sends_next(1 + r % SP_MAX_PAYLOAD);
		} else {
			struct client *k = &c[(r / 3) % READERS];
			client_takes(k, 1 + (r >> 6) % (96 * 1024));
			size_t least = SIZE_MAX;
			for (int i = 0; i < READERS; i++)
				if (buf_avail(&c[i].out) < least)
					least = buf_avail(&c[i].out);
			assert_true(w.credited <= least);
		}
	}
	for (int i = 0; i < READERS; i++) {
		client_takes_all(&c[i]);
		assert_got(&c[i], 0, w.sent);
	}
	assert_int_equal(w.credited, w.sent);
	for (int i = 0; i < READERS; i++)
		client_leaves(&c[i]);
}

static void test_output_wakes_a_waiting_client(void **state)
{
	struct client c;
	client_joins(&c, true);
	void *conn = &c; /* never dereferenced by the front */
	c.op->front = &front;
	c.op->conn = conn;
	c.op->suspended = true; /* its stream was empty: the HTTP layer suspended it */
	daemon_lock(&w.d);
	assert_true(agent_sends_next(10));
	assert_int_equal(w.nwoken, 0); /* not with the lock held */
	daemon_unlock(&w.d);
	assert_int_equal(w.nwoken, 1);
	assert_ptr_equal(w.woken[0], conn);
	c.op->conn = NULL;
	client_takes_all(&c);
	assert_got(&c, 0, 10);
	client_leaves(&c);
}

/* A download's bytes (A_DATA on its tag) within the window the request gave; the credit goes
 * back on the tag as its client takes them, never more than came. */
static void test_download_credit(void **state)
{
	struct op *op = calloc(1, sizeof(*op));
	op->d = &w.d;
	op->kind = OP_READ;
	op->sb = &w.sb;
	op->tag = TAG;
	op->responding = true;
	struct frame f = { .type = SP_A_DATA, .chan = TAG, .len = SP_MAX_PAYLOAD, .payload = w.stream };
	char why[CHAN_MAX_WHY] = "";
	for (unsigned i = 0; i < SP_WINDOW / SP_MAX_PAYLOAD; i++)
		assert_int_equal(op_on_frame(op, &f, why), 0);
	/* one byte past the window breaks the protocol */
	struct frame more = { .type = SP_A_DATA, .chan = TAG, .len = 1, .payload = w.stream };
	assert_int_equal(op_on_frame(op, &more, why), -EPROTO);
	assert_true(strlen(why) > 0);
	assert_int_equal(w.tag_credited, 0);

	static uint8_t got[SP_WINDOW];
	size_t have = 0;
	uint32_t credit;
	have += op_take(op, got, 1000, &credit);
	op_return_credit(op, credit);
	assert_int_equal(w.tag_credited, 0); /* the first frame is not all taken yet */
	have += op_take(op, got + have, SP_MAX_PAYLOAD, &credit);
	op_return_credit(op, credit);
	assert_int_equal(w.tag_credited, SP_MAX_PAYLOAD);
	op_return_credit(op, SP_WINDOW); /* more than it owes: no more than it owes goes back */
	assert_int_equal(w.tag_credited, SP_WINDOW);
	while (have < SP_WINDOW) {
		have += op_take(op, got + have, SP_WINDOW, &credit);
		op_return_credit(op, credit);
	}
	assert_int_equal(w.tag_credited, SP_WINDOW);
	assert_int_equal(have, SP_WINDOW);
	for (unsigned i = 0; i < SP_WINDOW / SP_MAX_PAYLOAD; i++)
		assert_memory_equal(got + i * SP_MAX_PAYLOAD, w.stream, SP_MAX_PAYLOAD);
	op_unlink(op);
	op_free(op);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_reader_gets_everything_and_credit_follows_its_client),
		T(test_credit_waits_for_the_slowest_reader),
		T(test_a_reader_misses_nothing_whatever_the_policy),
		T(test_block_holds_output_for_the_next_reader),
		T(test_drop_keeps_the_tail_and_counts_the_rest),
		T(test_a_reader_that_leaves_stops_holding_back),
		T(test_a_capture_gives_credit_back_at_once),
		T(test_a_capture_keeps_all_at_its_limit),
		T(test_a_capture_past_its_limit_is_cut),
		T(test_captures_share_their_tenants_budget),
		T(test_many_lines_before_the_client_reads),
		T(test_utf8_cut_between_chunks_arrives_whole),
		T(test_a_cut_sequence_left_at_exit_is_not_lost),
		T(test_readers_at_their_own_pace),
		T(test_output_wakes_a_waiting_client),
		T(test_download_credit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/daemon/io/test_chan.c - the agent channel's transport
 * (daemon/io/chan.c) and its handler table: a frame reaches its handler only
 * when its type is in the table, its payload holds the fixed part, and the
 * connection is in a phase the message is allowed in; everything else, and a
 * handler's refusal, drops the connection with the reason. The write queue is
 * capped, and queued credit returns for one channel merge. An A_OPEN on a port spaced
 * dials is the agent's end of the connection. After a suspend, what the VM's port held is read
 * on as the rest of the connection that ended.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/io/chan.h"

static int calls, drops;
static uint32_t payload_bytes; /* of every frame a handler took */
static char last_why[CHAN_MAX_WHY];

static int ok_fn(void *ctx, const struct frame *f, char *why)
{
	calls++;
	payload_bytes += f->len;
	return 0;
}

static int refuse_fn(void *ctx, const struct frame *f, char *why)
{
	snprintf(why, CHAN_MAX_WHY, "refused by its handler");
	return -EPROTO;
}

static void dropped(void *ctx, const char *why)
{
	drops++;
	snprintf(last_why, sizeof(last_why), "%s", why ? why : "(peer closed)");
}

static const struct chan_msg msgs[] = {
	{ SP_A_HELLO, 16, CHAN_IN(CHAN_OPEN), ok_fn },
	{ SP_A_STDOUT, 0, CHAN_IN(CHAN_READY) | CHAN_IN(CHAN_TAIL), ok_fn },
	{ SP_A_ERROR, 4, CHAN_IN(CHAN_READY), refuse_fn },
};
static const struct chan_proto proto = { msgs, 3, dropped, NULL };

static struct loop lp = { .epfd = -1, .wakefd = -1 };
static struct chan c;
static int peer = -1;

static int setup(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	chan_init(&c, &proto, NULL);
	c.loop = &lp;
	c.fd = sv[0];
	c.phase = CHAN_OPEN;
	peer = sv[1];
	calls = drops = 0;
	payload_bytes = 0;
	last_why[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	chan_close(&c);
	close(peer);
	return 0;
}

/* Sends one frame from the peer and lets the channel read it. */
static void feed(uint8_t type, uint32_t ch, const void *p, uint32_t n)
{
	uint8_t hdr[SP_HDR_SIZE];
	frame_put_header(hdr, type, ch, n);
	assert_int_equal(send(peer, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	if (n)
		assert_int_equal(send(peer, p, n, 0), (ssize_t)n);
	c.csrc.fn(&c.csrc, EPOLLIN);
}

static void test_lookup(void **state)
{
	assert_non_null(chan_lookup(&proto, SP_A_STDOUT));
	assert_null(chan_lookup(&proto, SP_A_PONG));
}

static void test_allowed_frame_reaches_handler(void **state)
{
	uint8_t hello[16] = { 0 };
	feed(SP_A_HELLO, 0, hello, sizeof(hello));
	assert_int_equal(calls, 1);
	assert_int_equal(drops, 0);
	assert_true(c.fd >= 0);
}

static void test_unknown_type_drops(void **state)
{
	feed(99, 0, NULL, 0);
	assert_int_equal(calls, 0);
	assert_int_equal(drops, 1);
	assert_true(c.fd < 0);
	assert_non_null(strstr(last_why, "not one the agent sends"));
}

static void test_short_payload_drops(void **state)
{
	uint8_t hello[15] = { 0 }; /* one byte short of the fixed part */
	feed(SP_A_HELLO, 0, hello, sizeof(hello));
	assert_int_equal(calls, 0);
	assert_int_equal(drops, 1);
	assert_non_null(strstr(last_why, "shorter"));
}

static void test_wrong_phase_drops(void **state)
{
	feed(SP_A_STDOUT, 5, "x", 1); /* output before the hello */
	assert_int_equal(calls, 0);
	assert_int_equal(drops, 1);
	assert_non_null(strstr(last_why, "before the hello"));
}

static void test_second_hello_drops(void **state)
{
	uint8_t hello[16] = { 0 };
	c.phase = CHAN_READY; /* as after a hello and its listing */
	feed(SP_A_HELLO, 0, hello, sizeof(hello));
	assert_int_equal(calls, 0);
	assert_int_equal(drops, 1);
}

static void test_handler_refusal_drops(void **state)
{
	c.phase = CHAN_READY;
	uint8_t e[8] = { 0 };
	feed(SP_A_ERROR, SP_CHAN_REQ | 3, e, sizeof(e));
	assert_int_equal(drops, 1);
	assert_string_equal(last_why, "refused by its handler");
}

static void test_send_needs_ready(void **state)
{
	assert_int_equal(chan_send(&c, SP_H_PING, 1, NULL, 0, NULL, 0), -ENOTCONN);
	c.phase = CHAN_READY;
	assert_int_equal(chan_send(&c, SP_H_PING, 1, NULL, 0, NULL, 0), 0);
	uint8_t big[SP_MAX_PAYLOAD + 1];
	assert_int_equal(chan_send(&c, SP_H_STDIN, 1, big, sizeof(big), NULL, 0), -E2BIG);
}

static void test_credit_merges(void **state)
{
	c.phase = CHAN_READY;
	/* a peer that does not read: fill its socket so frames stay queued */
	uint8_t fill[SP_MAX_PAYLOAD] = { 0 };
	while (chan_queued(&c) == 0)
		assert_int_equal(chan_send(&c, SP_H_STDIN, 9, fill, sizeof(fill), NULL, 0), 0);
	size_t before = chan_queued(&c);
	assert_int_equal(chan_credit(&c, 7, 100), 0);
	assert_int_equal(chan_queued(&c), before + SP_HDR_SIZE + 4);
	assert_int_equal(chan_credit(&c, 7, 50), 0); /* merged into the one queued */
	assert_int_equal(chan_queued(&c), before + SP_HDR_SIZE + 4);
	assert_int_equal(frame_get_u32(c.wq.data + c.wq.len - 4), 150);
	assert_int_equal(chan_credit(&c, 8, 1), 0); /* another channel: a frame of its own */
	assert_int_equal(chan_queued(&c), before + 2 * (SP_HDR_SIZE + 4));
}

/* On a port spaced dials (a microVM's), A_OPEN after the opening is the agent's end of the
 * connection; on the gVisor socket the agent never sends one. */
static void test_agents_end_on_a_dialled_port(void **state)
{
	uint8_t nonce[8] = { 0 };
	c.phase = CHAN_READY;
	snprintf(c.dial, sizeof(c.dial), "/nonexistent/agent.sock");
	feed(SP_A_OPEN, 0, nonce, sizeof(nonce));
	assert_int_equal(drops, 1);
	assert_true(c.fd < 0);
	assert_string_equal(last_why, "the agent ended the connection");
}

static void test_open_on_a_socket_drops_as_unknown(void **state)
{
	uint8_t nonce[8] = { 0 };
	c.phase = CHAN_READY;
	feed(SP_A_OPEN, 0, nonce, sizeof(nonce));
	assert_int_equal(drops, 1);
	assert_non_null(strstr(last_why, "not one the agent sends"));
}

/* An H_OPEN the port left unanswered is overdue after the given time, and only while the
 * connection is still opening. */
static void test_open_overdue(void **state)
{
	c.opening = true;
	c.open_ms = 1000;
	assert_false(chan_open_overdue(&c, 5999, 5000));
	assert_true(chan_open_overdue(&c, 6000, 5000));
	c.opening = false;
	assert_false(chan_open_overdue(&c, 60000, 5000));
}

static void test_queue_cap_breaks_connection(void **state)
{
	c.phase = CHAN_READY;
	uint8_t fill[SP_MAX_PAYLOAD] = { 0 };
	int rc = 0;
	size_t sent = 0;
	while ((rc = chan_send(&c, SP_H_STDIN, 9, fill, sizeof(fill), NULL, 0)) == 0)
		sent += sizeof(fill);
	assert_int_equal(rc, -ENOBUFS);
	assert_true(chan_queued(&c) == 0); /* what was queued is let go at once */
	assert_true(sent >= CHAN_MAX_QUEUE - SP_MAX_PAYLOAD);
	assert_int_equal(chan_send(&c, SP_H_PING, 1, NULL, 0, NULL, 0), -ENOTCONN);
	/* the reader then drops it with the reason */
	c.csrc.fn(&c.csrc, EPOLLIN);
	assert_int_equal(drops, 1);
	assert_non_null(strstr(last_why, "unread"));
}

/* Writes one frame's bytes to out; returns how many. */
static size_t frame_bytes(uint8_t *out, uint8_t type, uint32_t ch, const void *p, uint32_t n)
{
	frame_put_header(out, type, ch, n);
	memcpy(out + SP_HDR_SIZE, p, n);
	return SP_HDR_SIZE + n;
}

/* The old connection of a dialled port carries "abc" (a whole output frame) and the header and
 * first `part` payload bytes of a 10-byte one, then QEMU ends it; a new connection opens with nonce 77. */
static void suspend_mid_frame(bool keep, size_t part)
{
	uint8_t b[256];
	c.phase = CHAN_READY;
	snprintf(c.dial, sizeof(c.dial), "/nonexistent/agent.sock");
	chan_keep_tail(&c, keep);
	size_t n = frame_bytes(b, SP_A_STDOUT, 5, "abc", 3);
	n += frame_bytes(b + n, SP_A_STDOUT, 5, "0123456789", 10) - (10 - part);
	assert_int_equal(send(peer, b, n, 0), (ssize_t)n);
	c.csrc.fn(&c.csrc, EPOLLIN);
	assert_int_equal(calls, 1);
	close(peer);
	c.csrc.fn(&c.csrc, EPOLLIN);
	assert_int_equal(drops, 1);
	assert_true(c.fd < 0);

	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	c.fd = sv[0];
	c.phase = CHAN_OPEN;
	c.opening = true;
	c.nonce = 77;
	peer = sv[1];
}

/* Sends `b` (n bytes of what the port held), the A_OPEN for nonce 77 and a hello. */
static void open_after(const uint8_t *b, size_t n)
{
	uint8_t out[512], nonce[8], hello[16] = { 0 };
	frame_put_u64(nonce, 77);
	memcpy(out, b, n);
	n += frame_bytes(out + n, SP_A_OPEN, 0, nonce, sizeof(nonce));
	n += frame_bytes(out + n, SP_A_HELLO, 0, hello, sizeof(hello));
	assert_int_equal(send(peer, out, n, 0), (ssize_t)n);
	c.csrc.fn(&c.csrc, EPOLLIN);
	assert_false(c.opening);
	assert_int_equal(drops, 1);
}

/* After a suspend the rest of the cut frame, and what follows it before the A_OPEN, are the old
 * connection's output: it reaches the handlers; a frame of a type the tail does not take (here
 * one the table does not know) is passed over. */
static void test_what_a_suspend_cut_is_read_on(void **state)
{
	suspend_mid_frame(true, 4);
	uint8_t b[128], credit[4] = { 0 };
	size_t n = frame_bytes(b, SP_A_STDOUT, 5, "0123456789", 10) - 4 - SP_HDR_SIZE;
	memmove(b, b + SP_HDR_SIZE + 4, n); /* the 6 bytes the cut frame lacked */
	n += frame_bytes(b + n, SP_A_CREDIT, 5, credit, sizeof(credit));
	n += frame_bytes(b + n, SP_A_STDOUT, 5, "xy", 2);
	open_after(b, n);
	assert_int_equal(calls, 1 + 2 + 1); /* the cut frame, "xy", the hello */
	assert_int_equal(payload_bytes, 3 + 10 + 2 + 16);
	assert_false(c.tail_live);
}

/* Without a suspend, what comes before the A_OPEN is an earlier connection's and is dropped. */
static void test_before_the_open_is_dropped_without_a_suspend(void **state)
{
	suspend_mid_frame(false, 4);
	uint8_t b[64];
	size_t n = frame_bytes(b, SP_A_STDOUT, 5, "xy", 2);
	open_after(b, n);
	assert_int_equal(calls, 1 + 1); /* the hello */
}

/* A frame the agent had only begun to write is rewound and sent whole after its hello: the part
 * the port held is left out, and does not swallow the A_OPEN. */
static void test_a_rewound_frame_is_left_out(void **state)
{
	suspend_mid_frame(true, 4);
	open_after(NULL, 0);
	assert_int_equal(calls, 1 + 1);
	assert_false(c.tail_live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test_setup_teardown(test_allowed_frame_reaches_handler, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_type_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_payload_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_phase_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_hello_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handler_refusal_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_needs_ready, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credit_merges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_cap_breaks_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agents_end_on_a_dialled_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_overdue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_on_a_socket_drops_as_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_what_a_suspend_cut_is_read_on, setup, teardown),
		cmocka_unit_test_setup_teardown(test_before_the_open_is_dropped_without_a_suspend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_rewound_frame_is_left_out, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

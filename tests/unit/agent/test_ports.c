/*
 * tests/unit/agent/test_ports.c - reading the kernel's socket tables
 * (agent/ports.c): lines of /proc/net/tcp and /proc/net/tcp6 as Linux and
 * gVisor write them, listening sockets told from the others, addresses in
 * network order, and every kind of damaged line refused rather than guessed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agent/agent.h"
#include "agent/ports.h"

/* ports.c answers through conn.c; only its parser is tested here */
int conn_send(struct agent *a, uint8_t type, uint32_t chan, const void *fixed, size_t nfixed, const char *str)
{
	return 0;
}

int conn_send_error(struct agent *a, uint32_t chan, int err, const char *fmt, ...)
{
	return 0;
}

static int parse(const char *line, unsigned family, struct sp_port *p)
{
	memset(p, 0xee, sizeof(*p));
	return ports_parse_line(line, strlen(line), family, p);
}

static void ipv4_listening_sockets(void **state)
{
	struct sp_port p;
	static const uint8_t loopback[4] = { 127, 0, 0, 1 }, any[4] = { 0 };
	assert_int_equal(parse("   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
			       "18322 1 0000000000000000 100 0 0 10 0\n",
			       SP_FAMILY_IPV4, &p),
			 1);
	assert_int_equal(p.port, 8000);
	assert_int_equal(p.family, SP_FAMILY_IPV4);
	assert_memory_equal(p.addr, loopback, 4);
	assert_int_equal(parse("  12: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n",
			       SP_FAMILY_IPV4, &p),
			 1);
	assert_int_equal(p.port, 80);
	assert_memory_equal(p.addr, any, 4);
	/* gVisor ends its lines without the trailing fields Linux writes */
	assert_int_equal(parse("0: 0100007F:FFFF 00000000:0000 0A", SP_FAMILY_IPV4, &p), 1);
	assert_int_equal(p.port, 65535);
}

static void ipv6_listening_sockets(void **state)
{
	struct sp_port p;
	uint8_t loopback[16] = { 0 }, any[16] = { 0 };
	loopback[15] = 1;
	assert_int_equal(parse("   0: 00000000000000000000000001000000:22B8 00000000000000000000000000000000:0000 0A "
			       "00000000:00000000 00:00000000 00000000     0        0 1 1\n",
			       SP_FAMILY_IPV6, &p),
			 1);
	assert_int_equal(p.port, 8888);
	assert_int_equal(p.family, SP_FAMILY_IPV6);
	assert_memory_equal(p.addr, loopback, 16);
	assert_int_equal(parse("1: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A\n",
			       SP_FAMILY_IPV6, &p),
			 1);
	assert_memory_equal(p.addr, any, 16);
}

static void other_sockets_and_the_header_are_not_ports(void **state)
{
	struct sp_port p;
	assert_int_equal(parse("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
			       "timeout inode\n",
			       SP_FAMILY_IPV4, &p),
			 0);
	/* established, time-wait, a connecting socket */
	assert_int_equal(parse("   1: 0100007F:1F40 0100007F:A2C4 01 00000000:00000000 00:00000000\n", SP_FAMILY_IPV4, &p),
			 0);
	assert_int_equal(parse("   2: 0100007F:A2C4 0100007F:1F40 06 00000000:00000000\n", SP_FAMILY_IPV4, &p), 0);
	assert_int_equal(parse("   3: 0100007F:A2C6 0100007F:1F40 02\n", SP_FAMILY_IPV4, &p), 0);
}

static void damaged_lines_are_refused(void **state)
{
	struct sp_port p;
	static const char *const bad[] = {
		"",
		"\n",
		"garbage",
		"   0 0100007F:1F40 00000000:0000 0A",       /* no colon after the slot */
		"   : 0100007F:1F40 00000000:0000 0A",       /* no slot */
		"   0: 0100007:1F40 00000000:0000 0A",       /* seven digits */
		"   0: 0100007G:1F40 00000000:0000 0A",      /* not hex */
		"   0: 0100007F-1F40 00000000:0000 0A",      /* no colon before the port */
		"   0: 0100007F:1F4 00000000:0000 0A",       /* three digits of port */
		"   0: 0100007F:1F40",                       /* cut after the local address */
		"   0: 0100007F:1F40 00000000:0000",         /* no state */
		"   0: 0100007F:1F40 00000000:0000 0",       /* half a state */
		"   0: 0100007F:1F40 00000000:0000 0AB",     /* a state too long */
		"   0: 0100007F:1F4000000000:0000 0A",       /* no space between the addresses */
		"   0: 00000000000000000000000001000000:22B8 00000000:0000 0A", /* IPv6 in the IPv4 table */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i], SP_FAMILY_IPV4, &p);
		if (rc != -EINVAL)
			fail_msg("line %zu \"%s\": %d", i, bad[i], rc);
	}
	/* an IPv4 line in the IPv6 table, and a family that is neither */
	assert_int_equal(parse("   0: 0100007F:1F40 00000000:0000 0A", SP_FAMILY_IPV6, &p), -EINVAL);
	assert_int_equal(parse("   0: 0100007F:1F40 00000000:0000 0A", 5, &p), -EINVAL);
}

static void a_line_is_read_only_up_to_its_length(void **state)
{
	struct sp_port p;
	const char *line = "   0: 0100007F:1F40 00000000:0000 0A";
	/* cut inside the state: refused, never read past len */
	assert_int_equal(ports_parse_line(line, strlen(line) - 1, SP_FAMILY_IPV4, &p), -EINVAL);
	assert_int_equal(ports_parse_line(line, strlen(line), SP_FAMILY_IPV4, &p), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ipv4_listening_sockets),
		cmocka_unit_test(ipv6_listening_sockets),
		cmocka_unit_test(other_sockets_and_the_header_are_not_ports),
		cmocka_unit_test(damaged_lines_are_refused),
		cmocka_unit_test(a_line_is_read_only_up_to_its_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

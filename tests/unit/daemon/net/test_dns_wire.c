/*
 * tests/unit/daemon/net/test_dns_wire.c - the resolver's reading and writing of DNS messages
 * (daemon/net/dns_wire.c): questions, A records of answers with compressed names, REFUSED
 * answers, and damaged messages refused without reading past their end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/net/dns.h"

/* A query for www.Example.COM, type A, class IN. */
static const uint8_t QUERY[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w', 7, 'E', 'x', 'a',
				 'm', 'p', 'l', 'e', 3, 'C', 'O', 'M', 0, 0, 1, 0, 1 };

static void a_question_is_read(void **state)
{
	(void)state;
	char name[256];
	uint16_t qtype;
	assert_int_equal(dns_question(QUERY, sizeof(QUERY), name, sizeof(name), &qtype), 0);
	assert_string_equal(name, "www.example.com");
	assert_int_equal(qtype, 1);
	for (size_t n = 0; n < sizeof(QUERY); n++) /* every cut-short message */
		assert_int_equal(dns_question(QUERY, n, name, sizeof(name), &qtype), -EINVAL);
	uint8_t bad[sizeof(QUERY)];
	memcpy(bad, QUERY, sizeof(bad));
	bad[2] |= 0x80; /* an answer */
	assert_int_equal(dns_question(bad, sizeof(bad), name, sizeof(name), &qtype), -EINVAL);
	memcpy(bad, QUERY, sizeof(bad));
	bad[5] = 2; /* two questions */
	assert_int_equal(dns_question(bad, sizeof(bad), name, sizeof(name), &qtype), -EINVAL);
	memcpy(bad, QUERY, sizeof(bad));
	bad[12] = 0xc0; /* a pointer in the question */
	assert_int_equal(dns_question(bad, sizeof(bad), name, sizeof(name), &qtype), -EINVAL);
	assert_int_equal(dns_question(QUERY, sizeof(QUERY), name, 8, &qtype), -EINVAL); /* no room */
}

struct seen {
	int n;
	uint32_t addr[4], ttl[4];
};

static void each(uint32_t addr, uint32_t ttl, void *ctx)
{
	struct seen *s = ctx;
	s->addr[s->n] = addr;
	s->ttl[s->n++] = ttl;
}

static void a_records_are_found_behind_compressed_names(void **state)
{
	(void)state;
	uint8_t msg[128];
	memcpy(msg, QUERY, sizeof(QUERY));
	msg[2] = 0x81;
	msg[3] = 0x80;
	msg[7] = 3; /* three answers: a CNAME, then two A records */
	size_t p = sizeof(QUERY);
	static const uint8_t cname[] = { 0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 6, 3, 'c', 'd', 'n', 0xc0, 16 };
	static const uint8_t a1[] = { 0xc0, 45, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 10 };
	static const uint8_t a2[] = { 0xc0, 45, 0, 1, 0, 1, 0x80, 0, 0, 5, 0, 4, 192, 0, 2, 11 };
	memcpy(msg + p, cname, sizeof(cname));
	p += sizeof(cname);
	memcpy(msg + p, a1, sizeof(a1));
	p += sizeof(a1);
	memcpy(msg + p, a2, sizeof(a2));
	p += sizeof(a2);
	struct seen s = { 0 };
	assert_int_equal(dns_answers_a(msg, p, each, &s), 0);
	assert_int_equal(s.n, 2);
	uint8_t *b = (uint8_t *)&s.addr[0];
	assert_int_equal(b[3], 10);
	assert_int_equal(s.ttl[0], 300);
	assert_int_equal(s.ttl[1], 5); /* the top bit of a TTL is not a number */
	struct seen t = { 0 };
	assert_int_equal(dns_answers_a(msg, p - 1, each, &t), -EINVAL); /* the last record cut */
}

static void refused_answers_keep_the_question(void **state)
{
	(void)state;
	uint8_t out[512];
	size_t n = dns_refused(QUERY, sizeof(QUERY), out, sizeof(out));
	assert_int_equal(n, sizeof(QUERY));
	assert_int_equal(out[0], 0x12);
	assert_true(out[2] & 0x80);
	assert_int_equal(out[3] & 0xf, 5);
	assert_memory_equal(out + 12, QUERY + 12, sizeof(QUERY) - 12);
	assert_int_equal(dns_refused(QUERY, sizeof(QUERY) - 1, out, sizeof(out)), 0);
	assert_int_equal(dns_refused(QUERY, sizeof(QUERY), out, 20), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_question_is_read),
		cmocka_unit_test(a_records_are_found_behind_compressed_names),
		cmocka_unit_test(refused_answers_keep_the_question),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/fuzz/fuzz_net.c - what the network takes from users and from the wire: egress
 * policies (daemon/net/policy.c, as a create or a PATCH sends them) and the Host header the
 * port proxy routes by (daemon/net/proxy.c, proxy_parse_host; any client reaching the proxy
 * writes it), and the DNS messages spaced's resolver reads (from sandboxes and upstream).
 *
 * The first byte picks the part (its value modulo 3):
 *  - 0: the rest is JSON; a policy parsed from it (alone, and merged onto a fixed one) is
 *    in normal form (parsing it again gives the same), within NET_RULES_MAX entries, and
 *    renders rules that fit, or -ENOSPC, never past the buffer; net_cidr_normal of the raw
 *    bytes, NUL-terminated, is idempotent;
 *  - 2: the rest is a DNS message, as a sandbox or the upstream resolver sends it
 *    (daemon/net/dns_wire.c): a question read is a lower-case dotted name within 253
 *    characters; A records are read without reading past the message; a REFUSED answer made
 *    from it is no longer than the message and keeps its id;
 *  - 1: the rest is a Host value; an accepted one names a port 1..65535 and a 12-character
 *    lower-case hex id, and written back as "<port>-<id>.localhost" parses to the same.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/net/policy.h"
#include "daemon/net/proxy.h"
#include "daemon/net/dns.h"

static void policy(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	char norm[64], again[64];
	if (net_cidr_normal(s, norm, sizeof(norm)) == 0) {
		assert(net_cidr_normal(norm, again, sizeof(again)) == 0);
		assert(strcmp(norm, again) == 0);
	}
	json_t *in = json_loadb((const char *)data, size, 0, NULL);
	free(s);
	if (!in)
		return;
	json_t *base = json_pack("{s:s, s:[s], s:[s]}", "egress", "allow", "allow", "192.0.2.0/24", "deny", "192.0.2.9");
	for (int merged = 0; merged < 2; merged++) {
		struct err e = { 0 };
		json_t *p = net_policy_parse(in, merged ? base : NULL, NET_EGRESS_OPEN, &e);
		if (!p) {
			assert(e.kind == ERR_INVALID);
			continue;
		}
		assert(json_array_size(json_object_get(p, "allow")) + json_array_size(json_object_get(p, "deny")) <=
		       NET_RULES_MAX);
		struct err e2 = { 0 };
		json_t *q = net_policy_parse(p, NULL, NET_EGRESS_NONE, &e2);
		assert(q && json_equal(p, q));
		json_decref(q);
		static char rules[32768];
		int n = net_policy_rules(p, "space_fuzz", "sb0", rules, sizeof(rules));
		assert(n == -ENOSPC || (n > 0 && (size_t)n < sizeof(rules) && strlen(rules) == (size_t)n));
		json_decref(p);
	}
	json_decref(base);
	json_decref(in);
}

static void host(const uint8_t *data, size_t size)
{
	char id[SANDBOX_ID_LEN + 1];
	int port;
	char *h = malloc(size ? size : 1); /* exactly its size: nothing past it is read */
	memcpy(h, data, size);
	if (proxy_parse_host(h, size, "localhost", id, &port) == 0) {
		assert(port >= 1 && port <= 65535 && strlen(id) == SANDBOX_ID_LEN);
		for (int i = 0; i < SANDBOX_ID_LEN; i++)
			assert((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'));
		char back[64], id2[SANDBOX_ID_LEN + 1];
		int port2, n = snprintf(back, sizeof(back), "%d-%s.localhost", port, id);
		assert(proxy_parse_host(back, (size_t)n, "localhost", id2, &port2) == 0);
		assert(port2 == port && strcmp(id2, id) == 0);
	}
	free(h);
}

static void count_a(uint32_t addr, uint32_t ttl, void *ctx)
{
	(void)addr;
	assert(ttl <= 0x7fffffffu);
	++*(int *)ctx;
}

static void dns(const uint8_t *data, size_t size)
{
	uint8_t *m = malloc(size ? size : 1); /* exactly its size */
	memcpy(m, data, size);
	char name[256];
	uint16_t qtype;
	if (dns_question(m, size, name, sizeof(name), &qtype) == 0) {
		size_t len = strlen(name);
		assert(len > 0 && len <= 253);
		for (size_t i = 0; i < len; i++)
			assert(!(name[i] >= 'A' && name[i] <= 'Z'));
	}
	int n = 0;
	dns_answers_a(m, size, count_a, &n);
	uint8_t out[NET_DNS_MSG_MAX];
	size_t r = dns_refused(m, size, out, sizeof(out));
	if (r) {
		assert(r <= size && out[0] == m[0] && out[1] == m[1] && (out[3] & 0xf) == 5);
	}
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 3 == 0)
		policy(data + 1, size - 1);
	else if (data[0] % 3 == 1)
		host(data + 1, size - 1);
	else
		dns(data + 1, size - 1);
	return 0;
}

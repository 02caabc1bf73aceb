/*
 * tests/fuzz/fuzz_ports.c - agent/ports.c: lines of the kernel's socket
 * tables (/proc/net/tcp, /proc/net/tcp6), which a microVM's guest root can
 * make its kernel write as it likes.
 *
 * The input's first byte picks the table (even: IPv4, odd: IPv6); the rest is
 * cut into lines, each parsed on its own with its exact length (no NUL
 * after it). For every line:
 *  - the answer is -EINVAL, 0 or 1, and nothing past the line is read (the
 *    sanitizer sees each line in a buffer of exactly its size);
 *  - a listening socket comes back of the table's family, and the line
 *    written again in the kernel's own format parses to the same socket.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/ports.h"

/* ports.c answers through conn.c, which this target does not need */
int conn_send(struct agent *a, uint8_t type, uint32_t chan, const void *fixed, size_t nfixed, const char *str)
{
	return 0;
}

int conn_send_error(struct agent *a, uint32_t chan, int err, const char *fmt, ...)
{
	return 0;
}

static void canonical(const struct sp_port *p, char *out, size_t n)
{
	int len = snprintf(out, n, "   0: ");
	unsigned words = p->family == SP_FAMILY_IPV6 ? 4 : 1;
	for (unsigned w = 0; w < words; w++) {
		uint32_t v;
		memcpy(&v, p->addr + 4 * w, 4);
		len += snprintf(out + len, n - (size_t)len, "%08X", v);
	}
	len += snprintf(out + len, n - (size_t)len, ":%04X ", p->port);
	for (unsigned w = 0; w < words; w++)
		len += snprintf(out + len, n - (size_t)len, "00000000");
	snprintf(out + len, n - (size_t)len, ":0000 0A 00000000:00000000 00:00000000 00000000     0\n");
}

static void check_line(const char *line, size_t len, unsigned family)
{
	char *copy = malloc(len ? len : 1); /* exactly its size: a read past it is caught */
	assert(copy);
	memcpy(copy, line, len);
	struct sp_port p;
	memset(&p, 0, sizeof(p));
	int rc = ports_parse_line(copy, len, family, &p);
	free(copy);
	assert(rc == -EINVAL || rc == 0 || rc == 1);
	if (rc != 1)
		return;
	assert(p.family == family);
	char again[256];
	canonical(&p, again, sizeof(again));
	struct sp_port q;
	memset(&q, 0, sizeof(q));
	assert(ports_parse_line(again, strlen(again), family, &q) == 1);
	assert(memcmp(&p, &q, sizeof(p)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned family = data[0] & 1 ? SP_FAMILY_IPV6 : SP_FAMILY_IPV4;
	const char *s = (const char *)data + 1, *end = (const char *)data + size;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *stop = nl ? nl + 1 : end;
		check_line(s, (size_t)(stop - s), family);
		s = stop;
	}
	return 0;
}

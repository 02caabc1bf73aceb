/*
 * agent/ports.c - see ports.h.
 *
 * A line of the table, after the slot number:
 *   "   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 ..."
 * local address:port, remote address:port, state (0A is LISTEN), then fields we do not read.
 * Each 32-bit word of an address is printed as the kernel holds it in memory (%08X of a
 * big-endian word read on this little-endian machine), so the bytes of the word as this
 * machine stores the parsed number are the address's bytes in network order.
 */
#include "ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

#define TCP_LISTEN 0x0Au

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Exactly n hex digits at *p (n <= 8), advancing it; -1 when they are not there. */
static int64_t hex_field(const char **p, const char *end, unsigned n)
{
	uint32_t v = 0;
	if ((size_t)(end - *p) < n)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int d = hex_digit((*p)[i]);
		if (d < 0)
			return -1;
		v = v << 4 | (uint32_t)d;
	}
	*p += n;
	return v;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && **p == ' ')
		(*p)++;
}

/* ADDR:PORT with ADDR of words 32-bit words; the address into addr (may be NULL). */
static int endpoint(const char **p, const char *end, unsigned words, uint8_t *addr, uint16_t *port)
{
	for (unsigned w = 0; w < words; w++) {
		int64_t v = hex_field(p, end, 8);
		if (v < 0)
			return -EINVAL;
		uint32_t word = (uint32_t)v;
		if (addr)
			memcpy(addr + 4 * w, &word, 4);
	}
	if (*p >= end || **p != ':')
		return -EINVAL;
	(*p)++;
	int64_t v = hex_field(p, end, 4);
	if (v < 0)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int ports_parse_line(const char *line, size_t len, unsigned family, struct sp_port *out)
{
	const char *p = line, *end = line + len;
	unsigned words = family == SP_FAMILY_IPV6 ? 4 : 1;
	if (family != SP_FAMILY_IPV4 && family != SP_FAMILY_IPV6)
		return -EINVAL;
	while (end > p && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	skip_spaces(&p, end);
	if ((size_t)(end - p) >= 2 && memcmp(p, "sl", 2) == 0)
		return 0; /* the header */
	/* the slot: decimal digits and a colon */
	const char *digits = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p == digits || p >= end || *p != ':')
		return -EINVAL;
	p++;
	skip_spaces(&p, end);
	struct sp_port port = { .family = (uint8_t)family };
	uint16_t local_port, remote_port;
	if (endpoint(&p, end, words, port.addr, &local_port) < 0 || p >= end || *p != ' ')
		return -EINVAL;
	skip_spaces(&p, end);
	if (endpoint(&p, end, words, NULL, &remote_port) < 0 || p >= end || *p != ' ')
		return -EINVAL;
	skip_spaces(&p, end);
	int64_t state = hex_field(&p, end, 2);
	if (state < 0 || (p < end && *p != ' '))
		return -EINVAL;
	if (state != TCP_LISTEN)
		return 0;
	port.port = local_port;
	*out = port;
	return 1;
}

/* Whether the answer so far holds this socket already (one listed in both tables, or twice). */
static bool seen(const struct sp_port *list, unsigned n, const struct sp_port *p)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i].port == p->port && list[i].family == p->family && !memcmp(list[i].addr, p->addr, 16))
			return true;
	return false;
}

/* Whether p is the agent's own relay (connect.h), which is not a port of the sandbox's. */
static bool relay(const struct sp_port *p)
{
	struct in_addr a;
	inet_pton(AF_INET, SP_NET_ADDR, &a);
	return p->family == SP_FAMILY_IPV4 && p->port == SP_RELAY_PORT && !memcmp(p->addr, &a, 4);
}

/* Adds the listening sockets of one table to list; -errno when it cannot be opened. */
static int read_table(const char *path, unsigned family, struct sp_port *list, unsigned *n)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[PORTS_LINE_MAX];
	while (*n < SP_PORTS_MAX && fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
			int c; /* a line past the limit: not an entry; skipped whole */
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		struct sp_port p;
		if (ports_parse_line(line, len, family, &p) == 1 && !seen(list, *n, &p) && !relay(&p))
			list[(*n)++] = p;
	}
	fclose(f);
	return 0;
}

int ports_list(struct agent *a, const struct frame *f)
{
	static struct sp_port list[SP_PORTS_MAX];
	unsigned n = 0;
	int v4 = read_table("/proc/net/tcp", SP_FAMILY_IPV4, list, &n);
	int v6 = read_table("/proc/net/tcp6", SP_FAMILY_IPV6, list, &n);
	if (v4 < 0 && v6 < 0)
		return conn_send_error(a, f->chan, -v4, "/proc/net/tcp: %s", strerror(-v4)) < 0 ? -ENOMEM : 0;
	for (unsigned i = 0; i < n; i++)
		if (conn_send(a, SP_A_PORT, f->chan, &list[i], sizeof(list[i]), NULL) < 0)
			return -ENOMEM;
	return conn_send(a, SP_A_END, f->chan, NULL, 0, NULL) < 0 ? -ENOMEM : 0;
}

/*
 * daemon/net/dns_wire.c - the DNS messages the resolver reads and writes (see dns.h).
 *
 * RFC 1035: a 12-byte header (id, flags, four counts), then questions (a name, type, class),
 * then resource records (a name, type, class, TTL, the length of the data, the data). Names
 * are labels of 1-63 bytes ending with an empty one, or a pointer (two bytes, top bits 11) to
 * an earlier name. Nothing here follows a pointer: a question's name has none (one that does is
 * refused), and an answer's names are only skipped (a pointer ends a name), so no loop of
 * pointers can hold the reader.
 */
#include "daemon/net/dns.h"

#include <errno.h>
#include <string.h>

#define DNS_HEADER 12

static uint16_t u16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Skips the name at msg[*at], following nothing (a pointer ends it); -EINVAL if it overruns. */
static int skip_name(const uint8_t *msg, size_t n, size_t *at)
{
	size_t p = *at;
	for (int labels = 0; labels < 128; labels++) {
		if (p >= n)
			return -EINVAL;
		uint8_t len = msg[p];
		if ((len & 0xc0) == 0xc0) {
			if (p + 2 > n)
				return -EINVAL;
			*at = p + 2;
			return 0;
		}
		if (len & 0xc0)
			return -EINVAL;
		p += 1 + (size_t)len;
		if (len == 0) {
			*at = p;
			return 0;
		}
	}
	return -EINVAL;
}

int dns_question(const uint8_t *msg, size_t n, char *name, size_t nname, uint16_t *qtype)
{
	if (n < DNS_HEADER || nname < 2)
		return -EINVAL;
	uint16_t flags = u16(msg + 2);
	if ((flags & 0x8000) || ((flags >> 11) & 0xf) != 0 || u16(msg + 4) != 1)
		return -EINVAL; /* an answer, not a standard query, or not one question */
	size_t p = DNS_HEADER, used = 0;
	for (;;) {
		if (p >= n)
			return -EINVAL;
		uint8_t len = msg[p++];
		if (len == 0)
			break;
		if ((len & 0xc0) || p + len > n || used + len + 2 > nname || used + len + 1 > 253)
			return -EINVAL; /* no pointers in a question; names within 253 characters */
		if (used)
			name[used++] = '.';
		for (uint8_t i = 0; i < len; i++) {
			char c = (char)msg[p + i];
			if (c == '.' || c == '\0')
				return -EINVAL;
			name[used++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		}
		p += len;
	}
	if (used == 0 || p + 4 > n)
		return -EINVAL;
	name[used] = '\0';
	*qtype = u16(msg + p);
	return u16(msg + p + 2) == 1 ? 0 : -EINVAL; /* class IN */
}

int dns_answers_a(const uint8_t *msg, size_t n, void (*each)(uint32_t addr, uint32_t ttl, void *ctx), void *ctx)
{
	if (n < DNS_HEADER)
		return -EINVAL;
	unsigned qd = u16(msg + 4), an = u16(msg + 6);
	size_t p = DNS_HEADER;
	for (unsigned i = 0; i < qd; i++) {
		if (skip_name(msg, n, &p) < 0 || p + 4 > n)
			return -EINVAL;
		p += 4;
	}
	for (unsigned i = 0; i < an; i++) {
		if (skip_name(msg, n, &p) < 0 || p + 10 > n)
			return -EINVAL;
		uint16_t type = u16(msg + p), klass = u16(msg + p + 2);
		uint32_t ttl = (uint32_t)msg[p + 4] << 24 | (uint32_t)msg[p + 5] << 16 | (uint32_t)msg[p + 6] << 8 | msg[p + 7];
		uint16_t rdlen = u16(msg + p + 8);
		p += 10;
		if (p + rdlen > n)
			return -EINVAL;
		if (type == 1 && klass == 1 && rdlen == 4) {
			uint32_t addr;
			memcpy(&addr, msg + p, 4);
			each(addr, ttl & 0x7fffffffu, ctx);
		}
		p += rdlen;
	}
	return 0;
}

size_t dns_refused(const uint8_t *q, size_t n, uint8_t *out, size_t nout)
{
	size_t p = DNS_HEADER;
	if (n < DNS_HEADER || u16(q + 4) != 1 || skip_name(q, n, &p) < 0 || p + 4 > n || p + 4 > nout)
		return 0;
	p += 4;
	memcpy(out, q, p);
	out[2] = (uint8_t)(0x80 | (q[2] & 0x79)); /* an answer; the opcode and RD as asked */
	out[3] = 0x80 | 5;                        /* recursion available; REFUSED */
	memset(out + 6, 0, 6);                    /* no answers, authorities or additions */
	return p;
}

/*
 * daemon/net/proxy_http.c - the port proxy's reading of HTTP/1.1 requests (see proxy_http.h).
 *
 * Strict where readers differ: lines end with CRLF and nothing else, a header's name is a
 * token ended by its colon, the framing of a body (Content-Length or chunked) is said once,
 * and whatever falls outside that is refused rather than guessed at, so the sandbox's server
 * cannot read a request's end, its Host or its token other than the proxy did.
 */
#include "daemon/net/proxy_http.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { B_DONE, B_LENGTH, B_SIZE, B_DATA, B_DATA_END, B_TRAILER };

/* RFC 9110's tchar: what a method or a header's name is made of. */
static bool tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* A byte of a header's value: visible, a space, a tab, or not ASCII. */
static bool vchar(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || (ch > 0x20 && ch != 0x7f);
}

/* A byte a token (the sandbox's, hex; any other of up to PROXY_TOKEN_MAX such bytes) may hold. */
static bool token_char(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       ch == '-' || ch == '_' || ch == '.' || ch == '~';
}

static bool name_is(const char *p, size_t nl, const char *name)
{
	return nl == strlen(name) && !strncasecmp(p, name, nl);
}

static bool token_header(const char *p, size_t nl)
{
	return name_is(p, nl, "X-Space-Token") || name_is(p, nl, "E2b-Traffic-Access-Token");
}

/* Copies [v, v + vl) into out as a token, or "" when it does not fit. */
static void take_token(const char *v, size_t vl, char out[PROXY_TOKEN_MAX + 1])
{
	out[0] = '\0';
	if (vl > PROXY_TOKEN_MAX)
		return;
	for (size_t i = 0; i < vl; i++)
		if (!token_char((unsigned char)v[i]))
			return;
	memcpy(out, v, vl);
	out[vl] = '\0';
}

/* The next pair of a Cookie value [*p, end): its bounds, *p moved past it. false at the end. */
static bool next_cookie(const char **p, const char *end, const char **pair, size_t *pl)
{
	const char *q = *p;
	while (q < end && (*q == ' ' || *q == '\t' || *q == ';'))
		q++;
	if (q >= end)
		return false;
	const char *semi = memchr(q, ';', (size_t)(end - q));
	const char *stop = semi ? semi : end;
	const char *last = stop;
	while (last > q && (last[-1] == ' ' || last[-1] == '\t'))
		last--;
	*pair = q;
	*pl = (size_t)(last - q);
	*p = stop;
	return true;
}

static bool token_cookie(const char *pair, size_t pl)
{
	return pl >= 12 && !strncmp(pair, "space_token=", 12);
}

/* A decimal length: digits only, at most PROXY_LENGTH_MAX. */
static int parse_length(const char *v, size_t vl, uint64_t *out)
{
	if (vl == 0 || vl > 18)
		return -EINVAL;
	uint64_t n = 0;
	for (size_t i = 0; i < vl; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	*out = n;
	return 0;
}

/* The request line [p, eol): METHOD SP target SP HTTP/1.x. */
static int request_line(const char *p, const char *eol, struct proxy_head *h)
{
	const char *q = p;
	while (q < eol && tchar((unsigned char)*q))
		q++;
	if (q == p || q >= eol || *q != ' ' || (q - p == 7 && !strncmp(p, "CONNECT", 7)))
		return -EINVAL;
	const char *t = ++q;
	while (q < eol && (unsigned char)*q > 0x20 && (unsigned char)*q < 0x7f) /* visible ASCII */
		q++;
	if (q == t || q >= eol || *q != ' ')
		return -EINVAL;
	h->target = t;
	h->target_len = (size_t)(q - t);
	q++;
	if (eol - q != 8 || (strncmp(q, "HTTP/1.1", 8) != 0 && strncmp(q, "HTTP/1.0", 8) != 0))
		return -EINVAL;
	return 0;
}

/* The token in the target's query, if any: ?space_token= (the last one wins). */
static void query_token(struct proxy_head *h)
{
	const char *q = memchr(h->target, '?', h->target_len), *end = h->target + h->target_len;
	for (const char *p = q ? q + 1 : end; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		if (stop - p >= 12 && !strncmp(p, "space_token=", 12)) {
			h->qtoken_given = true;
			take_token(p + 12, (size_t)(stop - p - 12), h->qtoken);
		}
		p = stop + 1;
	}
}

/* One header line's name [p, colon) and value [v, v + vl) (without the spaces around it). */
static int header(struct proxy_head *h, const char *p, size_t nl, const char *v, size_t vl, int *lengths, int *te)
{
	if (name_is(p, nl, "Host")) {
		if (h->host)
			return -EINVAL;
		h->host = v;
		h->host_len = vl;
	} else if (token_header(p, nl)) {
		if (!h->token_given || h->token_from_cookie) {
			take_token(v, vl, h->token);
			h->token_given = true;
			h->token_from_cookie = false;
		}
	} else if (name_is(p, nl, "Cookie")) {
		const char *pair, *q = v;
		size_t pl;
		while (next_cookie(&q, v + vl, &pair, &pl))
			if (token_cookie(pair, pl) && !h->token_given) {
				take_token(pair + 12, pl - 12, h->token);
				h->token_given = true;
				h->token_from_cookie = true;
			}
	} else if (name_is(p, nl, "Content-Length")) {
		if (++*lengths > 1 || parse_length(v, vl, &h->length) < 0)
			return -EINVAL;
	} else if (name_is(p, nl, "Transfer-Encoding")) {
		if (++*te > 1)
			return -EINVAL;
		if (!(vl == 7 && !strncasecmp(v, "chunked", 7)))
			return -ENOSYS;
	} else if (name_is(p, nl, "Upgrade")) {
		h->upgrade = true;
	}
	return 0;
}

int proxy_http_head(const char *buf, size_t len, struct proxy_head *h)
{
	memset(h, 0, sizeof(*h));
	size_t n = len < PROXY_HEAD_MAX ? len : PROXY_HEAD_MAX;
	const char *blank = memmem(buf, n, "\r\n\r\n", 4);
	if (!blank)
		return len >= PROXY_HEAD_MAX ? -E2BIG : 0;
	h->len = (size_t)(blank - buf) + 4;
	const char *end = buf + h->len - 2; /* the last line's CRLF ends at end + 2 */
	int lengths = 0, te = 0, rc = 0;
	for (const char *p = buf; p < end && rc == 0;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!eol)
			return -EINVAL;
		for (const char *q = p; q < eol; q++)
			if (*q == '\r' || *q == '\n' || *q == '\0')
				return -EINVAL;
		if (p == buf) {
			rc = request_line(p, eol, h);
		} else {
			const char *colon = p;
			while (colon < eol && tchar((unsigned char)*colon))
				colon++;
			if (colon == p || colon >= eol || *colon != ':')
				return -EINVAL; /* no name, a space before the colon, or a folded line */
			const char *v = colon + 1, *ve = eol;
			for (const char *q = v; q < ve; q++)
				if (!vchar((unsigned char)*q))
					return -EINVAL;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			rc = header(h, p, (size_t)(colon - p), v, (size_t)(ve - v), &lengths, &te);
		}
		p = eol + 2;
	}
	if (rc < 0)
		return rc;
	if (lengths && te)
		return -EINVAL;
	h->body = te ? PROXY_BODY_CHUNKED : lengths && h->length ? PROXY_BODY_LENGTH : PROXY_BODY_NONE;
	query_token(h);
	return (int)h->len;
}

int proxy_http_rewrite(const char *buf, size_t len, char *out, size_t room)
{
	size_t used = 0;
	const char *end = buf + len - 2;
	for (const char *p = buf; p < end;) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!eol)
			return -EINVAL;
		const char *colon = p == buf ? NULL : memchr(p, ':', (size_t)(eol - p));
		size_t nl = colon ? (size_t)(colon - p) : 0;
		const char *from = p;
		p = eol + 2;
		if (colon && token_header(from, nl))
			continue;
		if (colon && name_is(from, nl, "Cookie")) {
			const char *pair, *q = colon + 1;
			size_t pl, start = used;
			bool any = false;
			while (next_cookie(&q, eol, &pair, &pl)) {
				if (token_cookie(pair, pl) || pl == 0)
					continue;
				const char *sep = any ? "; " : "Cookie: ";
				if (used + strlen(sep) + pl > room)
					return -ENOSPC;
				memcpy(out + used, sep, strlen(sep));
				used += strlen(sep);
				memcpy(out + used, pair, pl);
				used += pl;
				any = true;
			}
			if (!any) {
				used = start;
				continue;
			}
			if (used + 2 > room)
				return -ENOSPC;
			memcpy(out + used, "\r\n", 2);
			used += 2;
			continue;
		}
		size_t l = (size_t)(p - from);
		if (used + l > room)
			return -ENOSPC;
		memcpy(out + used, from, l);
		used += l;
	}
	if (used + 2 > room)
		return -ENOSPC;
	memcpy(out + used, "\r\n", 2);
	return (int)(used + 2);
}

void proxy_http_location(const char *target, size_t len, char *out, size_t n)
{
	size_t used = 0;
	const char *q = memchr(target, '?', len), *end = target + len;
	size_t path = q ? (size_t)(q - target) : len;
	/* a path of this host only: "//host" and "/\host" are other hosts to a browser */
	if (path == 0 || target[0] != '/' || (path > 1 && (target[1] == '/' || target[1] == '\\')) ||
	    path >= n) {
		snprintf(out, n, "/");
		return;
	}
	memcpy(out, target, path);
	used = path;
	char sep = '?';
	for (const char *p = q ? q + 1 : end; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		size_t l = (size_t)(stop - p);
		if (l > 0 && !(l >= 12 && !strncmp(p, "space_token=", 12)) && used + 1 + l < n) {
			out[used++] = sep;
			memcpy(out + used, p, l);
			used += l;
			sep = '&';
		}
		p = stop + 1;
	}
	out[used] = '\0';
}

void proxy_http_body_start(struct proxy_body *b, const struct proxy_head *h)
{
	b->left = h->body == PROXY_BODY_LENGTH ? h->length : 0;
	b->state = h->body == PROXY_BODY_LENGTH ? B_LENGTH : h->body == PROXY_BODY_CHUNKED ? B_SIZE : B_DONE;
}

/* A chunk's size line [p, eol): hex digits, then nothing or extensions after ';'. */
static int chunk_size(const char *p, const char *eol, uint64_t *size)
{
	uint64_t n = 0;
	const char *q = p;
	for (; q < eol && q - p < 16; q++) {
		int d = *q >= '0' && *q <= '9' ? *q - '0' : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10 : *q >= 'A' && *q <= 'F' ? *q - 'A' + 10 : -1;
		if (d < 0)
			break;
		n = n * 16 + (uint64_t)d;
	}
	if (q == p || n > PROXY_LENGTH_MAX)
		return -EINVAL;
	while (q < eol && (*q == ' ' || *q == '\t'))
		q++;
	if (q < eol && *q != ';')
		return -EINVAL;
	for (; q < eol; q++)
		if (!vchar((unsigned char)*q))
			return -EINVAL;
	*size = n;
	return 0;
}

/* The line at in[0, len): its length with CRLF (> 0), 0 when not all in, -EINVAL. */
static long line(const char *in, size_t len)
{
	size_t n = len < PROXY_CHUNK_LINE_MAX ? len : PROXY_CHUNK_LINE_MAX;
	const char *eol = memmem(in, n, "\r\n", 2);
	if (!eol)
		return len >= PROXY_CHUNK_LINE_MAX ? -EINVAL : 0;
	for (const char *q = in; q < eol; q++)
		if (*q == '\r' || *q == '\n' || *q == '\0')
			return -EINVAL;
	return (long)(eol - in) + 2;
}

int proxy_http_body(struct proxy_body *b, const char *in, size_t len, size_t *took)
{
	size_t used = 0;
	int rc = 0;
	while (rc == 0 && b->state != B_DONE) {
		const char *p = in + used;
		size_t avail = len - used;
		if (b->state == B_LENGTH || b->state == B_DATA) {
			size_t k = avail < b->left ? avail : (size_t)b->left;
			used += k;
			b->left -= k;
			if (b->left > 0)
				break;
			b->state = b->state == B_LENGTH ? B_DONE : B_DATA_END;
			continue;
		}
		if (b->state == B_DATA_END) {
			if (avail < 2)
				break;
			if (p[0] != '\r' || p[1] != '\n')
				rc = -EINVAL;
			used += 2;
			b->state = B_SIZE;
			continue;
		}
		long l = line(p, avail);
		if (l <= 0) {
			rc = (int)l;
			break;
		}
		if (b->state == B_SIZE) {
			if (chunk_size(p, p + l - 2, &b->left) < 0)
				rc = -EINVAL;
			b->state = b->left ? B_DATA : B_TRAILER;
		} else if (l != 2) { /* B_TRAILER: only the blank line that ends the body */
			rc = -EINVAL;
		} else {
			b->state = B_DONE;
		}
		used += (size_t)l;
	}
	*took = rc < 0 ? 0 : used;
	return rc < 0 ? rc : b->state == B_DONE;
}

int proxy_http_status(struct proxy_status *s, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s->in_head) { /* an interim answer's head: up to its blank line */
			s->last4 = (s->last4 << 8) | (unsigned char)p[i];
			if (s->last4 == 0x0d0a0d0au) {
				s->in_head = false;
				s->n = 0;
			}
			continue;
		}
		s->line[s->n++] = p[i];
		if (s->n < sizeof(s->line))
			continue;
		if (strncmp(s->line, "HTTP/1.", 7) != 0 || s->line[8] != ' ')
			return -1;
		if (!strncmp(s->line + 9, "101", 3))
			return 1;
		if (s->line[9] != '1')
			return -1;
		s->in_head = true;
		s->last4 = 0;
	}
	return 0;
}

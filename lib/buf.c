/*
 * lib/buf.c - growable byte buffer (see buf.h).
 */
#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint8_t *buf_reserve(struct buf *b, size_t n)
{
	if (b->off > 0 && b->off == b->len)
		b->off = b->len = 0;
	if (b->cap - b->len >= n)
		return b->data + b->len;
	if (b->off > 0 && b->off >= b->cap / 2) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= n)
			return b->data + b->len;
	}
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return NULL;
	b->data = p;
	b->cap = cap;
	return b->data + b->len;
}

void buf_commit(struct buf *b, size_t n)
{
	b->len += n;
}

int buf_put(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	uint8_t *dst = buf_reserve(b, n);
	if (!dst)
		return -ENOMEM;
	memcpy(dst, p, n);
	b->len += n;
	return 0;
}

void buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len) {
		b->off = b->len = 0;
		/* A drained buffer that grew large gives its memory back. */
		if (b->cap > 1024 * 1024) {
			free(b->data);
			b->data = NULL;
			b->cap = 0;
		}
	}
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->off = b->len = b->cap = 0;
}

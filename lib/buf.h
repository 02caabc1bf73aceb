/*
 * lib/buf.h - a growable byte buffer with a read offset, for queues of bytes
 * (socket write queues, stream buffers). The owner bounds its size; buf
 * itself only fails when memory does.
 */
#ifndef SPACE_LIB_BUF_H
#define SPACE_LIB_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *data;
	size_t off;  /* first unread byte */
	size_t len;  /* end of the written bytes */
	size_t cap;
};

/* Unread bytes. */
static inline size_t buf_avail(const struct buf *b) { return b->len - b->off; }
static inline const uint8_t *buf_head(const struct buf *b) { return b->data + b->off; }

/* Appends n bytes. Returns 0 or -ENOMEM. */
int buf_put(struct buf *b, const void *p, size_t n);
/* Makes room for n more bytes and returns where to write them (commit with buf_commit). */
uint8_t *buf_reserve(struct buf *b, size_t n);
void buf_commit(struct buf *b, size_t n);
/* Marks n unread bytes as read; compacts when everything has been read. */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

#endif

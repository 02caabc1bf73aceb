/*
 * lib/frame.h - encode and decode frames of the agent protocol (proto/agent.h).
 *
 * Shared by spaced and space-agent. Nothing here allocates or logs: the
 * caller owns every buffer. Decoding never reads past the bytes it is given.
 */
#ifndef SPACE_LIB_FRAME_H
#define SPACE_LIB_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "../proto/agent.h"

struct frame {
	uint32_t len;
	uint8_t type;
	uint8_t flags;
	uint32_t chan;
	const uint8_t *payload; /* points into the caller's buffer, len bytes */
};

/* Writes the 12-byte header for a frame into out. */
void frame_put_header(uint8_t out[SP_HDR_SIZE], uint8_t type, uint32_t chan, uint32_t len);

/*
 * Looks for one whole frame at the start of buf (n bytes).
 * Returns the number of bytes the frame occupies (header + payload) and fills
 * *f, 0 if more bytes are needed, or -EPROTO if the header is invalid
 * (payload over SP_MAX_PAYLOAD or reserved bits set).
 */
long frame_parse(const uint8_t *buf, size_t n, struct frame *f);

/*
 * Checks that the payload holds at least `fixed` bytes; returns 0 or -EPROTO.
 */
int frame_need(const struct frame *f, size_t fixed);

/*
 * Reads the NUL-terminated string that starts at *off in the payload and
 * advances *off past its NUL. Returns NULL (and leaves *off) when no NUL
 * lies before the end of the payload.
 */
const char *frame_str(const struct frame *f, size_t *off);

/* Little-endian accessors for fields of packed payload structs. */
uint16_t frame_get_u16(const void *p);
void frame_put_u16(void *p, uint16_t v);
uint32_t frame_get_u32(const void *p);
uint64_t frame_get_u64(const void *p);
void frame_put_u32(void *p, uint32_t v);
void frame_put_u64(void *p, uint64_t v);

#endif

/*
 * lib/frame.c - the agent protocol's framing: header layout and bounds checks.
 * Every parser of agent frames goes through frame_parse, frame_need and
 * frame_str, so the size checks live in one place.
 */
#include "frame.h"

#include <errno.h>
#include <string.h>

uint16_t frame_get_u16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | b[1] << 8);
}

void frame_put_u16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

uint32_t frame_get_u32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

uint64_t frame_get_u64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)frame_get_u32(b) | (uint64_t)frame_get_u32(b + 4) << 32;
}

void frame_put_u32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

void frame_put_u64(void *p, uint64_t v)
{
	uint8_t *b = p;
	frame_put_u32(b, (uint32_t)v);
	frame_put_u32(b + 4, (uint32_t)(v >> 32));
}

void frame_put_header(uint8_t out[SP_HDR_SIZE], uint8_t type, uint32_t chan, uint32_t len)
{
	frame_put_u32(out, len);
	out[4] = type;
	out[5] = 0;
	out[6] = 0;
	out[7] = 0;
	frame_put_u32(out + 8, chan);
}

long frame_parse(const uint8_t *buf, size_t n, struct frame *f)
{
	if (n < SP_HDR_SIZE)
		return 0;
	uint32_t len = frame_get_u32(buf);
	if (len > SP_MAX_PAYLOAD || buf[6] != 0 || buf[7] != 0)
		return -EPROTO;
	if (n - SP_HDR_SIZE < len)
		return 0;
	f->len = len;
	f->type = buf[4];
	f->flags = buf[5];
	f->chan = frame_get_u32(buf + 8);
	f->payload = buf + SP_HDR_SIZE;
	return (long)(SP_HDR_SIZE + len);
}

int frame_need(const struct frame *f, size_t fixed)
{
	return f->len >= fixed ? 0 : -EPROTO;
}

const char *frame_str(const struct frame *f, size_t *off)
{
	if (*off >= f->len)
		return NULL;
	const char *s = (const char *)f->payload + *off;
	const void *nul = memchr(s, '\0', f->len - *off);
	if (!nul)
		return NULL;
	*off += (size_t)((const char *)nul - s) + 1;
	return s;
}

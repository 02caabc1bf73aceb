/*
 * tests/fuzz/fuzz_frame.c - lib/frame.c over arbitrary bytes.
 *
 * The input is a byte stream as either peer of the agent protocol receives
 * it. It is cut into frames with frame_parse, exactly as both readers do
 * (agent/conn.c, daemon/agent.c), and every frame is taken apart with
 * frame_need and frame_str at every fixed size a message uses. Checked:
 * nothing is read outside the input (ASan), frame_parse only accepts what
 * proto/agent.h allows, every string frame_str returns is NUL-terminated
 * inside the payload, and a header written by frame_put_header parses back
 * to the same fields.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/frame.h"

/* The fixed parts of every message, in both directions. */
static const size_t fixed_sizes[] = {
	0, 1, 2, sizeof(struct sp_exec), sizeof(struct sp_signal), sizeof(struct sp_credit),
	sizeof(struct sp_hello), sizeof(struct sp_started), sizeof(struct sp_exit), sizeof(struct sp_error),
	sizeof(struct sp_proc), sizeof(struct sp_fwrite), sizeof(struct sp_mode), sizeof(struct sp_stat),
	sizeof(struct sp_fwrite) + 1, sizeof(struct sp_mode) + 1,
};

static void walk_strings(const struct frame *f, size_t start)
{
	size_t off = start;
	for (;;) {
		size_t before = off;
		const char *s = frame_str(f, &off);
		if (!s) {
			assert(off == before);
			break;
		}
		/* the string lies inside the payload and ends at its NUL */
		assert((const uint8_t *)s >= f->payload && (const uint8_t *)s < f->payload + f->len);
		size_t n = strlen(s);
		assert((const uint8_t *)s + n < f->payload + f->len);
		assert(off == before + n + 1);
		assert(off <= f->len);
	}
}

static void check_frame(const struct frame *f, const uint8_t *at, long used)
{
	assert(used == (long)(SP_HDR_SIZE + f->len));
	assert(f->len <= SP_MAX_PAYLOAD);
	assert(f->payload == at + SP_HDR_SIZE);
	assert(at[6] == 0 && at[7] == 0);
	assert(f->len == frame_get_u32(at) && f->type == at[4] && f->flags == at[5] &&
	       f->chan == frame_get_u32(at + 8));
	for (size_t i = 0; i < sizeof(fixed_sizes) / sizeof(fixed_sizes[0]); i++) {
		size_t fixed = fixed_sizes[i];
		if (frame_need(f, fixed) < 0) {
			assert(f->len < fixed);
			continue;
		}
		assert(f->len >= fixed);
		walk_strings(f, fixed);
	}
	/* the header round trip */
	uint8_t hdr[SP_HDR_SIZE];
	frame_put_header(hdr, f->type, f->chan, f->len);
	assert(frame_get_u32(hdr) == f->len && hdr[4] == f->type && hdr[5] == 0 && frame_get_u32(hdr + 8) == f->chan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy, so that ASan sees the exact end of the bytes */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	size_t pos = 0;
	while (pos < size) {
		struct frame f;
		long used = frame_parse(buf + pos, size - pos, &f);
		if (used == 0) {
			/* more bytes needed: either a partial header or a partial payload */
			assert(size - pos < SP_HDR_SIZE || size - pos < SP_HDR_SIZE + frame_get_u32(buf + pos));
			break;
		}
		if (used < 0) {
			/* refused: only for an oversized payload or reserved bits */
			assert(frame_get_u32(buf + pos) > SP_MAX_PAYLOAD || buf[pos + 6] || buf[pos + 7]);
			break;
		}
		check_frame(&f, buf + pos, used);
		pos += (size_t)used;
	}
	free(buf);
	return 0;
}

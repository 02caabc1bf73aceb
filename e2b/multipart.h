/*
 * e2b/multipart.h - the files of a multipart/form-data body, part by part as it arrives
 * (multipart.c), on libmicrohttpd's post processor: what E2B's files.write sends.
 *
 * Only parts named "file" are files; each begins with its filename (browser-style FormData
 * escapes '"', CR and LF in it as %22, %0D and %0A, and only those are undone), then its
 * bytes in order, then its end. An empty part is a file too.
 */
#ifndef SPACE_E2B_MULTIPART_H
#define SPACE_E2B_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#define MULTIPART_NAME_MAX 4200 /* a part's filename, unescaped, with its NUL */

struct mp_sink {
	void (*begin)(void *arg, const char *filename); /* a new file part */
	void (*data)(void *arg, const char *p, size_t n);
	void (*end)(void *arg);                          /* the part under way ended */
};

struct multipart;

/* Starts reading conn's body (its Content-Type names the boundary) into sink; NULL when the
 * request is not multipart/form-data with a boundary, or without memory. */
struct multipart *multipart_new(struct MHD_Connection *conn, const struct mp_sink *sink, void *arg);
/* Feeds n more bytes of the body. 0, or -EINVAL when the body is malformed (what was read
 * stands; feed nothing more). */
int multipart_feed(struct multipart *m, const char *data, size_t n);
/* The body is whole: ends the last part and frees m. */
void multipart_finish(struct multipart *m);
/* A part's filename as FormData wrote it, unescaped into out[0..n). */
void multipart_filename(const char *in, char *out, size_t n);

#endif

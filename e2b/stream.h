/*
 * e2b/stream.h - a streamed answer written by a worker thread (stream.c).
 */
#ifndef SPACE_E2B_STREAM_H
#define SPACE_E2B_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "e2b/gateway.h"

struct gw_stream;
/* The worker's work: it writes the body with gw_stream_write; the body ends when it returns. */
typedef void (*gw_stream_fn)(struct gw_stream *s, void *arg);

/* Answers r 200 with content_type and starts fn(s, arg) on a thread of its own; free_arg(arg)
 * runs after it (also when nothing could be started). */
enum MHD_Result gw_stream_start(struct req *r, const char *content_type, gw_stream_fn fn, void *arg,
				void (*free_arg)(void *arg));
/* Like gw_stream_start, for a worker that learns the answer's status and content type as it
 * goes (a request carried elsewhere): it calls gw_stream_head once, before its first write, and
 * the answer is queued then (the connection's thread waits for it). A worker that returns without
 * one answers an empty 500. */
enum MHD_Result gw_stream_start_head(struct req *r, gw_stream_fn fn, void *arg, void (*free_arg)(void *arg));
/* The answer's status and content type (copied); later calls change nothing. */
void gw_stream_head(struct gw_stream *s, unsigned status, const char *content_type);
/* Writes n bytes of the body, waiting while the client is slow. 0, or -EPIPE when it left. */
int gw_stream_write(struct gw_stream *s, const void *p, size_t n);
/* The body broke off: once the worker returns, the answer ends without the end of a whole body
 * (the client's read fails) rather than as one that is complete. */
void gw_stream_fail(struct gw_stream *s);
/* The descriptor the body may be written to directly (a pipe), for a writer that takes one. */
int gw_stream_fd(struct gw_stream *s);
/* Whether the client has gone (its end of the body is closed). */
bool gw_stream_gone(struct gw_stream *s);

#endif

/*
 * e2b/stream.c - a response whose body a worker thread writes as it goes (gateway.h): the
 * worker writes into a pipe, the connection's thread reads the pipe into the response. The
 * pipe's capacity is the only buffer: a client that reads slowly makes the worker wait, and
 * so spaced's stream, and so the process. A client that leaves closes the pipe's reading end
 * (its connection is watched while the body waits for the worker: a silent stream, a folder
 * watch, is let go at once); the worker's next write, or its next look (gw_stream_gone), finds
 * that.
 */
#include "e2b/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gw_stream {
	int rd, wr;
	/* the answer's status and content type, when the worker gives them (gw_stream_head) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool headed;
	unsigned status;
	char content_type[128];
	int client;      /* the client's connection (libmicrohttpd's), watched for its end; or -1 */
	atomic_int refs; /* the worker's and the response's */
	atomic_bool failed; /* the body broke off: the answer ends without its end (gw_stream_fail) */
	gw_stream_fn fn;
	void *arg;
	void (*free_arg)(void *arg);
};

static void put(struct gw_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		free(s);
	}
}

void gw_stream_head(struct gw_stream *s, unsigned status, const char *content_type)
{
	pthread_mutex_lock(&s->mu);
	if (!s->headed) {
		s->headed = true;
		s->status = status;
		snprintf(s->content_type, sizeof(s->content_type), "%s", content_type);
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

static void *worker(void *p)
{
	struct gw_stream *s = p;
	s->fn(s, s->arg);
	if (s->free_arg)
		s->free_arg(s->arg);
	gw_stream_head(s, 500, "application/octet-stream"); /* a worker that gave none: an empty 500 */
	close(s->wr); /* the end of the body */
	put(s);
	return NULL;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct gw_stream *s = cls;
	for (;;) {
		/* the worker's next bytes, or the client's end (its FIN, seen without reading) */
		struct pollfd p[2] = { { .fd = s->rd, .events = POLLIN }, { .fd = s->client, .events = POLLRDHUP } };
		if (poll(p, s->client >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!p[0].revents && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!p[0].revents)
			continue;
		ssize_t n = read(s->rd, buf, max);
		if (n > 0)
			return n;
		if (n == 0)
			return atomic_load(&s->failed) ? MHD_CONTENT_READER_END_WITH_ERROR
						       : MHD_CONTENT_READER_END_OF_STREAM;
		if (errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
}

static void done(void *cls)
{
	struct gw_stream *s = cls;
	close(s->rd);
	put(s);
}

/* A stream for r whose worker runs fn(arg) on a thread of its own, or NULL (free_arg(arg) ran). */
static struct gw_stream *begin(struct req *r, gw_stream_fn fn, void *arg, void (*free_arg)(void *arg))
{
	struct gw_stream *s = calloc(1, sizeof(*s));
	int fds[2];
	if (!s || pipe2(fds, O_CLOEXEC) < 0) {
		free(s);
		if (free_arg)
			free_arg(arg);
		return NULL;
	}
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	*s = (struct gw_stream){ .rd = fds[0], .wr = fds[1], .client = ci ? ci->connect_fd : -1, .refs = 2, .fn = fn,
				 .arg = arg, .free_arg = free_arg };
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, GW_THREAD_STACK);
	int rc = pthread_create(&t, &attr, worker, s);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		close(s->rd);
		close(s->wr);
		if (free_arg)
			free_arg(arg);
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		free(s);
		return NULL;
	}
	return s;
}

/* Answers r with status and content_type, the body read from s's pipe; the response holds s's
 * second reference (done() drops it). */
static enum MHD_Result respond(struct req *r, struct gw_stream *s, unsigned status, const char *content_type)
{
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, reader, s, done);
	if (!resp) {
		done(s); /* the worker finds the pipe closed */
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result gw_stream_start(struct req *r, const char *content_type, gw_stream_fn fn, void *arg,
				void (*free_arg)(void *arg))
{
	struct gw_stream *s = begin(r, fn, arg, free_arg);
	return s ? respond(r, s, MHD_HTTP_OK, content_type) : MHD_NO;
}

enum MHD_Result gw_stream_start_head(struct req *r, gw_stream_fn fn, void *arg, void (*free_arg)(void *arg))
{
	struct gw_stream *s = begin(r, fn, arg, free_arg);
	if (!s)
		return MHD_NO;
	pthread_mutex_lock(&s->mu);
	while (!s->headed)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return respond(r, s, s->status, s->content_type);
}

int gw_stream_write(struct gw_stream *s, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(s->wr, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

void gw_stream_fail(struct gw_stream *s)
{
	atomic_store(&s->failed, true);
}

int gw_stream_fd(struct gw_stream *s)
{
	return s->wr;
}

bool gw_stream_gone(struct gw_stream *s)
{
	struct pollfd p = { .fd = s->wr, .events = POLLOUT };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gw_stream {
	int rd, wr;
	int client;      /* the client's connection (libmicrohttpd's), watched for its end; or -1 */
	atomic_int refs; /* the worker's and the response's */
	atomic_bool failed; /* the body broke off: the answer ends without its end (gw_stream_fail) */
	gw_stream_fn fn;
	void *arg;
	void (*free_arg)(void *arg);
};

static void put(struct gw_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1)
		free(s);
}

static void *worker(void *p)
{
	struct gw_stream *s = p;
	s->fn(s, s->arg);
	if (s->free_arg)
		s->free_arg(s->arg);
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

enum MHD_Result gw_stream_start(struct req *r, const char *content_type, gw_stream_fn fn, void *arg,
				void (*free_arg)(void *arg))
{
	struct gw_stream *s = calloc(1, sizeof(*s));
	int fds[2];
	if (!s || pipe2(fds, O_CLOEXEC) < 0) {
		free(s);
		if (free_arg)
			free_arg(arg);
		return MHD_NO;
	}
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	*s = (struct gw_stream){ .rd = fds[0], .wr = fds[1], .client = ci ? ci->connect_fd : -1, .refs = 2, .fn = fn,
				 .arg = arg, .free_arg = free_arg };
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, reader, s, done);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, GW_THREAD_STACK);
	if (!resp || pthread_create(&t, &attr, worker, s) != 0) {
		pthread_attr_destroy(&attr);
		if (resp)
			MHD_destroy_response(resp); /* done() closes rd and drops one reference */
		else
			close(s->rd);
		close(s->wr);
		if (free_arg)
			free_arg(arg);
		free(s);
		return MHD_NO;
	}
	pthread_attr_destroy(&attr);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	enum MHD_Result rc = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return rc;
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

/*
 * tests/fuzz/fuzz_multipart.c - e2b/multipart.c over arbitrary multipart/form-data bodies, as
 * a real libmicrohttpd server (on loopback, started once, with a small connection memory so a
 * body comes in pieces) hands them over: the body is the input.
 *
 * Checked for every input: the sink is told begin, data..., end in that order (never data or
 * an end outside a part, never a begin inside one), every part begun is ended once the body is
 * whole, the bytes given are no more than the body holds, and every filename is a string
 * shorter than MULTIPART_NAME_MAX.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2b/multipart.h"

static int open_part, begins, ends;
static size_t given;

static void on_begin(void *arg, const char *name)
{
	assert(!open_part);
	assert(strlen(name) < MULTIPART_NAME_MAX);
	open_part = 1;
	begins++;
}

static void on_data(void *arg, const char *p, size_t n)
{
	assert(open_part);
	given += n;
}

static void on_end(void *arg)
{
	assert(open_part);
	open_part = 0;
	ends++;
}

static const struct mp_sink sink = { on_begin, on_data, on_end };
static int sentinel;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *data, size_t *size, void **ctx)
{
	if (!*ctx) {
		struct multipart *m = multipart_new(c, &sink, NULL);
		*ctx = m ? (void *)m : (void *)&sentinel;
		return MHD_YES;
	}
	if (*size) {
		if (*ctx != (void *)&sentinel && multipart_feed(*ctx, data, *size) < 0) {
			multipart_finish(*ctx); /* malformed: nothing more is fed */
			*ctx = &sentinel;
		}
		*size = 0;
		return MHD_YES;
	}
	if (*ctx != (void *)&sentinel)
		multipart_finish(*ctx);
	*ctx = &sentinel;
	struct MHD_Response *r = MHD_create_response_from_buffer(2, "ok", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return rc;
}

static uint16_t port;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static struct MHD_Daemon *server;
	if (!server) {
		server = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
					  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)4096, MHD_OPTION_END);
		assert(server);
		port = MHD_get_daemon_info(server, MHD_DAEMON_INFO_BIND_PORT)->port;
	}
	open_part = begins = ends = 0;
	given = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	char head[256];
	int h = snprintf(head, sizeof(head),
			 "POST /files HTTP/1.1\r\nHost: f\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n", n);
	assert(write(fd, head, (size_t)h) == h);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, data + off, n - off);
		if (w <= 0)
			break; /* the server closed early: what it took is checked below */
		off += (size_t)w;
	}
	char answer[256];
	while (read(fd, answer, sizeof(answer)) > 0)
		;
	close(fd);
	assert(!open_part && begins == ends);
	assert(given <= n);
	return 0;
}

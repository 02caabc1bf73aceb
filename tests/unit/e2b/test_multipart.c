/*
 * tests/unit/e2b/test_multipart.c - multipart/form-data files (e2b/multipart.c) as a real
 * libmicrohttpd server hands a body over: a server on loopback with a small connection memory,
 * so bodies arrive in pieces of a few KiB and part boundaries fall across them, records what
 * the sink is told for each request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "e2b/multipart.h"
#include "lib/buf.h"

#define MAX_PARTS 16

/* What the sink was told in the last request. */
static struct {
	int parts, ends, chunks;
	char name[MAX_PARTS][MULTIPART_NAME_MAX];
	struct buf data[MAX_PARTS];
	int open;       /* 1 between a begin and its end */
	int misordered; /* a begin while open, data or an end while closed */
	int refused;    /* multipart_new said no */
	int malformed;  /* multipart_feed said so */
} seen;

static void reset(void)
{
	for (int i = 0; i < MAX_PARTS; i++)
		buf_free(&seen.data[i]);
	memset(&seen, 0, sizeof(seen));
}

static void on_begin(void *arg, const char *name)
{
	seen.misordered += seen.open;
	seen.open = 1;
	if (seen.parts < MAX_PARTS)
		snprintf(seen.name[seen.parts], MULTIPART_NAME_MAX, "%s", name);
	seen.parts++;
}

static void on_data(void *arg, const char *p, size_t n)
{
	seen.misordered += !seen.open;
	seen.chunks++;
	if (seen.parts && seen.parts <= MAX_PARTS)
		buf_put(&seen.data[seen.parts - 1], p, n);
}

static void on_end(void *arg)
{
	seen.misordered += !seen.open;
	seen.open = 0;
	seen.ends++;
}

static const struct mp_sink sink = { on_begin, on_data, on_end };

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *data, size_t *size, void **ctx)
{
	if (!*ctx) {
		struct multipart *m = multipart_new(c, &sink, NULL);
		seen.refused = !m;
		*ctx = m ? (void *)m : (void *)&seen;
		return MHD_YES;
	}
	if (*size) {
		if (*ctx != (void *)&seen && multipart_feed(*ctx, data, *size) < 0)
			seen.malformed = 1;
		*size = 0;
		return MHD_YES;
	}
	if (*ctx != (void *)&seen)
		multipart_finish(*ctx);
	*ctx = (void *)&seen;
	struct MHD_Response *r = MHD_create_response_from_buffer(2, "ok", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return rc;
}

static struct MHD_Daemon *server;
static uint16_t port;

static int setup(void **state)
{
	server = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)4096, MHD_OPTION_END);
	if (!server)
		return -1;
	port = MHD_get_daemon_info(server, MHD_DAEMON_INFO_BIND_PORT)->port;
	return 0;
}

static int teardown(void **state)
{
	MHD_stop_daemon(server);
	reset();
	return 0;
}

/* Sends a POST of body with content_type to the server and waits for its answer. */
static void post(const char *content_type, const void *body, size_t n)
{
	reset();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	char head[512];
	int h = snprintf(head, sizeof(head),
			 "POST /files HTTP/1.1\r\nHost: t\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", content_type, n);
	assert_int_equal(write(fd, head, (size_t)h), h);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, (const char *)body + off, n - off);
		assert_true(w > 0);
		off += (size_t)w;
	}
	char answer[512];
	while (read(fd, answer, sizeof(answer)) > 0) /* to its end: the handler is done */
		;
	close(fd);
}

#define FORM "multipart/form-data; boundary=----formdata-undici-012345"
#define DASH "------formdata-undici-012345"

/* Appends a part to b. */
static void part(struct buf *b, const char *name, const char *filename, const void *data, size_t n)
{
	char h[600];
	int k = filename ? snprintf(h, sizeof(h),
				    DASH "\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
					 "Content-Type: application/octet-stream\r\n\r\n", name, filename)
			 : snprintf(h, sizeof(h), DASH "\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n", name);
	buf_put(b, h, (size_t)k);
	buf_put(b, data, n);
	buf_put(b, "\r\n", 2);
}

static void finish(struct buf *b)
{
	buf_put(b, DASH "--\r\n", strlen(DASH) + 4);
}

static void test_one_file(void **state)
{
	struct buf b = { 0 };
	part(&b, "file", "/tmp/a.txt", "hello", 5);
	finish(&b);
	post(FORM, buf_head(&b), buf_avail(&b));
	assert_int_equal(seen.parts, 1);
	assert_int_equal(seen.ends, 1);
	assert_int_equal(seen.misordered, 0);
	assert_string_equal(seen.name[0], "/tmp/a.txt");
	assert_int_equal(buf_avail(&seen.data[0]), 5);
	assert_memory_equal(buf_head(&seen.data[0]), "hello", 5);
	buf_free(&b);
}

/* Several files, one empty, one of 100 KiB that holds CRLFs and dashes, a field that is not a
 * file between them: each arrives whole, in order, across many pieces. */
static void test_several_files_in_pieces(void **state)
{
	size_t big_n = 100 * 1024;
	char *big = malloc(big_n);
	for (size_t i = 0; i < big_n; i++)
		big[i] = "\r\n--ab\0"[i % 7];
	struct buf b = { 0 };
	part(&b, "file", "one", "1", 1);
	part(&b, "file", "empty", "", 0);
	part(&b, "note", NULL, "not a file", 10);
	part(&b, "file", "big", big, big_n);
	part(&b, "file", "last", "z", 1);
	finish(&b);
	post(FORM, buf_head(&b), buf_avail(&b));
	assert_int_equal(seen.misordered, 0);
	assert_int_equal(seen.malformed, 0);
	assert_int_equal(seen.parts, 4);
	assert_int_equal(seen.ends, 4);
	assert_true(seen.chunks > 10); /* it came in pieces */
	const char *names[] = { "one", "empty", "big", "last" };
	size_t sizes[] = { 1, 0, big_n, 1 };
	for (int i = 0; i < 4; i++) {
		assert_string_equal(seen.name[i], names[i]);
		assert_int_equal(buf_avail(&seen.data[i]), sizes[i]);
	}
	assert_memory_equal(buf_head(&seen.data[2]), big, big_n);
	buf_free(&b);
	free(big);
}

static void test_filenames_as_formdata_escapes_them(void **state)
{
	struct buf b = { 0 };
	part(&b, "file", "/tmp/q%22d%0D%0Ax%0a%41 100%", "x", 1);
	finish(&b);
	post(FORM, buf_head(&b), buf_avail(&b));
	assert_int_equal(seen.parts, 1);
	/* only %22, %0D and %0A are escapes; the rest stays as sent */
	assert_string_equal(seen.name[0], "/tmp/q\"d\r\nx\n%41 100%");
	buf_free(&b);
}

static void test_not_multipart(void **state)
{
	post("application/octet-stream", "raw", 3);
	assert_int_equal(seen.refused, 1);
	assert_int_equal(seen.parts, 0);
	post("application/x-www-form-urlencoded", "file=x", 6);
	assert_int_equal(seen.refused, 1);
}

/* A body cut short: whatever part was under way still ends. */
static void test_a_body_cut_short(void **state)
{
	struct buf b = { 0 };
	part(&b, "file", "cut", "0123456789", 10);
	post(FORM, buf_head(&b), buf_avail(&b) - 6);
	assert_int_equal(seen.misordered, 0);
	assert_int_equal(seen.parts, seen.ends);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_file),
		cmocka_unit_test(test_several_files_in_pieces),
		cmocka_unit_test(test_filenames_as_formdata_escapes_them),
		cmocka_unit_test(test_not_multipart),
		cmocka_unit_test(test_a_body_cut_short),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * cli/stream.c - a sandbox process's output stream, shown live: events are
 * decoded and written to fds 1 and 2 as they arrive (never buffered whole),
 * and Ctrl-C and friends are forwarded to the process from the stream's tick,
 * outside any signal handler (see sigfwd.c). Used by exec, run and attach.
 */
#include "stream.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lib/codec.h"
#include "sigfwd.h"

#define STREAM_DETACH_AFTER_INTS 3

struct stream {
	struct client *c;
	const char *id;
	long pid;          /* -1 until known */
	int ints;          /* SIGINTs handled so far */
	int stdout_closed; /* our stdout is gone: discard the process's */
	int exited;
	int exit_code;
	struct client_err *err;
};

int stream_signal(struct client *c, const char *id, long pid, int sig, struct client_err *err)
{
	char suffix[64];
	snprintf(suffix, sizeof(suffix), "/processes/%ld/signal", pid);
	char *path = cli_sandbox_path(id, suffix);
	json_t *body = json_pack("{s:i}", "signal", sig);
	int r = -ENOMEM;

	if (path && body)
		r = client_request(c, "POST", path, body, NULL, err);
	json_decref(body);
	free(path);
	return r;
}

/* Best effort: the process may have exited in the meantime. */
static void forward(struct stream *s, int sig)
{
	struct client_err ignored;
	stream_signal(s->c, s->id, s->pid, sig, &ignored);
}

/* Forwards the signals caught so far; -ECANCELED when the user gave up. */
static int forward_pending(struct stream *s)
{
	for (;;) {
		if (s->pid < 0)
			return s->ints + sigfwd_pending(SIGINT) >= STREAM_DETACH_AFTER_INTS ? -ECANCELED : 0;
		int sig = sigfwd_take();
		if (!sig)
			return 0;
		if (sig == SIGINT) {
			s->ints++;
			if (s->ints >= STREAM_DETACH_AFTER_INTS)
				return -ECANCELED;
			if (s->ints == 2)
				sig = SIGKILL;
		}
		forward(s, sig);
	}
}

static int on_tick(void *arg)
{
	sigfwd_drain();
	return forward_pending(arg);
}

/* Writes all of p to fd; a closed stdout sends SIGPIPE to the process once. */
static void out_write(struct stream *s, int fd, const unsigned char *p, size_t n)
{
	if (fd == STDOUT_FILENO && s->stdout_closed)
		return;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			poll(&pfd, 1, 1000);
			continue;
		}
		if (w < 0) {
			if (fd == STDOUT_FILENO) {
				s->stdout_closed = 1;
				if (s->pid >= 0)
					forward(s, SIGPIPE);
			}
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static int on_output(struct stream *s, json_t *ev, int fd)
{
	const char *data = json_string_value(json_object_get(ev, "data"));
	if (data) {
		out_write(s, fd, (const unsigned char *)data, json_string_length(json_object_get(ev, "data")));
		return 0;
	}
	json_t *b64 = json_object_get(ev, "data_b64");
	if (!json_is_string(b64))
		return 0;
	size_t len = json_string_length(b64);
	unsigned char *buf = malloc(len / 4 * 3 + 3);
	if (!buf) {
		snprintf(s->err->message, sizeof(s->err->message), "out of memory");
		s->err->kind = CLIENT_ERR_LOCAL;
		return -ENOMEM;
	}
	long n = codec_b64_decode(buf, json_string_value(b64), len);
	if (n < 0) {
		free(buf);
		s->err->kind = CLIENT_ERR_TRANSPORT;
		s->err->code[0] = '\0';
		snprintf(s->err->message, sizeof(s->err->message), "malformed data_b64 from spaced");
		return -EPROTO;
	}
	out_write(s, fd, buf, (size_t)n);
	free(buf);
	return 0;
}

static int on_event(json_t *ev, void *arg)
{
	struct stream *s = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));

	if (!type)
		return 0;
	if (!strcmp(type, "start")) {
		json_t *pid = json_object_get(ev, "pid");
		if (json_is_integer(pid))
			s->pid = (long)json_integer_value(pid);
		return forward_pending(s);
	}
	if (!strcmp(type, "stdout"))
		return on_output(s, ev, STDOUT_FILENO);
	if (!strcmp(type, "stderr"))
		return on_output(s, ev, STDERR_FILENO);
	if (!strcmp(type, "exit")) {
		json_t *code = json_object_get(ev, "exit_code");
		json_t *sig = json_object_get(ev, "signal");
		if (json_is_integer(code))
			s->exit_code = (int)json_integer_value(code);
		else if (json_is_integer(sig))
			s->exit_code = 128 + (int)json_integer_value(sig);
		else
			s->exit_code = CLI_EXIT_DAEMON;
		if (json_is_true(json_object_get(ev, "timed_out")))
			fprintf(stderr, "space: the command timed out and was killed\n");
		s->exited = 1;
		return 1;
	}
	if (!strcmp(type, "dropped")) { /* a process started with --output drop */
		fprintf(stderr, "space: %lld bytes of output were dropped, unread\n",
			(long long)json_integer_value(json_object_get(ev, "bytes")));
		return 0;
	}
	if (!strcmp(type, "oom")) {
		const char *cmd = json_string_value(json_object_get(ev, "cmd"));
		json_t *limit = json_object_get(ev, "memory_limit_bytes");
		fprintf(stderr, "space: pid %lld (%.80s) was killed: the sandbox's memory reached its limit (%lld MiB)\n",
			(long long)json_integer_value(json_object_get(ev, "pid")), cmd ? cmd : "?",
			(long long)(json_integer_value(limit) >> 20));
		return 0;
	}
	if (!strcmp(type, "error")) {
		json_t *e = json_object_get(ev, "error");
		const char *code = json_string_value(json_object_get(e, "code"));
		const char *msg = json_string_value(json_object_get(e, "message"));
		s->err->kind = CLIENT_ERR_API;
		s->err->status = 0;
		snprintf(s->err->code, sizeof(s->err->code), "%s", code ? code : "");
		snprintf(s->err->message, sizeof(s->err->message), "%s", msg ? msg : "error from spaced");
		return -EREMOTEIO;
	}
	return 0; /* an event type newer than us */
}

static int run_stream(struct stream *s, const char *method, const char *path, json_t *body,
		      int *exit_code)
{
	struct client_stream_ops ops = {
		.event = on_event,
		.tick = on_tick,
		.wake_fd = sigfwd_fd(),
		.arg = s,
	};
	int r = client_stream(s->c, method, path, body, &ops, s->err);

	if (r < 0)
		return r;
	if (!s->exited) {
		s->err->kind = CLIENT_ERR_TRANSPORT;
		s->err->code[0] = '\0';
		snprintf(s->err->message, sizeof(s->err->message),
			 "the output stream from spaced at %s ended before the process exited", s->c->host);
		return -EPROTO;
	}
	*exit_code = s->exit_code;
	return 0;
}

int stream_exec(struct client *c, const char *id, json_t *body, int *exit_code,
		struct client_err *err)
{
	struct stream s = { .c = c, .id = id, .pid = -1, .err = err };
	char *path = cli_sandbox_path(id, "/exec");
	int r;

	if (!path || json_object_set_new(body, "stream", json_true())) {
		free(path);
		snprintf(err->message, sizeof(err->message), "out of memory");
		err->kind = CLIENT_ERR_LOCAL;
		return -ENOMEM;
	}
	r = run_stream(&s, "POST", path, body, exit_code);
	free(path);
	return r;
}

int stream_output(struct client *c, const char *id, long pid, int *exit_code,
		  struct client_err *err)
{
	struct stream s = { .c = c, .id = id, .pid = pid, .err = err };
	char suffix[64];
	snprintf(suffix, sizeof(suffix), "/processes/%ld/output", pid);
	char *path = cli_sandbox_path(id, suffix);
	int r;

	if (!path) {
		snprintf(err->message, sizeof(err->message), "out of memory");
		err->kind = CLIENT_ERR_LOCAL;
		return -ENOMEM;
	}
	r = forward_pending(&s);
	if (!r)
		r = run_stream(&s, "GET", path, NULL, exit_code);
	free(path);
	return r;
}

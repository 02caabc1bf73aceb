/*
 * cli/stdinfwd.c - the stdin-forwarding thread of `space exec -i`: poll fd 0
 * and a stop pipe, POST what fd 0 gives, DELETE at end of file; with a
 * terminal, POST each size change too. Signals are
 * blocked in this thread so that they reach the main thread's stream loop.
 */
#include "stdinfwd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tty.h"

/* Tells the process's terminal our terminal's size. */
static void send_size(struct stdinfwd *f)
{
	struct client_err err;
	int cols, rows;
	char buf[32];

	while (read(f->winch, buf, sizeof(buf)) > 0)
		;
	tty_size(&cols, &rows);
	json_t *body = json_pack("{s:i, s:i}", "cols", cols, "rows", rows);
	if (body)
		client_request(f->c, "POST", f->resize_path, body, NULL, &err);
	json_decref(body);
}

static void *stdinfwd_main(void *arg)
{
	struct stdinfwd *f = arg;
	struct client_err err;
	sigset_t set;
	char *buf = malloc(STDINFWD_CHUNK);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!buf)
		return NULL;
	for (;;) {
		/* a negative fd is left out by poll: our input once it ended, a size never asked */
		struct pollfd pfd[3] = {
			{ .fd = f->stop[0], .events = POLLIN },
			{ .fd = f->winch, .events = POLLIN },
			{ .fd = f->what & STDINFWD_INPUT ? STDIN_FILENO : -1, .events = POLLIN },
		};
		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			send_size(f);
		if (!pfd[2].revents)
			continue;
		ssize_t n = read(STDIN_FILENO, buf, STDINFWD_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			client_request(f->c, "DELETE", f->stdin_path, NULL, NULL, &err);
			f->what &= ~STDINFWD_INPUT;
		} else if (client_request_raw(f->c, "POST", f->stdin_path, buf, (size_t)n, NULL, &err) < 0) {
			f->what &= ~STDINFWD_INPUT; /* the process exited or closed its stdin */
		}
		if (!(f->what & STDINFWD_RESIZE) && !(f->what & STDINFWD_INPUT))
			break;
	}
	free(buf);
	return NULL;
}

int stdinfwd_start(struct stdinfwd *f, struct client *c, const char *id, long pid, unsigned what)
{
	char suffix[64];
	int r;

	memset(f, 0, sizeof(*f));
	f->stop[0] = f->stop[1] = f->winch = -1;
	f->c = c;
	f->what = what;
	snprintf(suffix, sizeof(suffix), "/processes/%ld/stdin", pid);
	f->stdin_path = cli_sandbox_path(id, suffix);
	snprintf(suffix, sizeof(suffix), "/processes/%ld/resize", pid);
	f->resize_path = cli_sandbox_path(id, suffix);
	if (!f->stdin_path || !f->resize_path) {
		r = -ENOMEM;
		goto fail;
	}
	if ((what & STDINFWD_RESIZE) && (f->winch = tty_winch_fd()) < 0) {
		r = f->winch;
		f->winch = -1;
		goto fail;
	}
	if (pipe2(f->stop, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	r = -pthread_create(&f->thread, NULL, stdinfwd_main, f);
	if (r)
		goto fail;
	f->running = 1;
	return 0;
fail:
	stdinfwd_stop(f);
	return r;
}

void stdinfwd_stop(struct stdinfwd *f)
{
	if (!f->c)
		return;
	if (f->running && write(f->stop[1], "", 1) == 1)
		pthread_join(f->thread, NULL);
	for (int i = 0; i < 2; i++)
		if (f->stop[i] >= 0)
			close(f->stop[i]);
	free(f->stdin_path);
	free(f->resize_path);
	memset(f, 0, sizeof(*f));
}

/*
 * cli/stdinfwd.c - the stdin-forwarding thread of `space exec -i`: poll fd 0
 * and a stop pipe, POST what fd 0 gives, DELETE at end of file. Signals are
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
		struct pollfd pfd[2] = {
			{ .fd = STDIN_FILENO, .events = POLLIN },
			{ .fd = f->stop[0], .events = POLLIN },
		};
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		ssize_t n = read(STDIN_FILENO, buf, STDINFWD_CHUNK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			client_request(f->c, "DELETE", f->stdin_path, NULL, NULL, &err);
			break;
		}
		if (client_request_raw(f->c, "POST", f->stdin_path, buf, (size_t)n, NULL, &err) < 0)
			break; /* the process exited or closed its stdin */
	}
	free(buf);
	return NULL;
}

int stdinfwd_start(struct stdinfwd *f, struct client *c, const char *id, long pid)
{
	char suffix[64];
	int r;

	memset(f, 0, sizeof(*f));
	f->stop[0] = f->stop[1] = -1;
	f->c = c;
	snprintf(suffix, sizeof(suffix), "/processes/%ld/stdin", pid);
	f->stdin_path = cli_sandbox_path(id, suffix);
	if (!f->stdin_path)
		return -ENOMEM;
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
	if (!f->stdin_path)
		return;
	if (f->running && write(f->stop[1], "", 1) == 1)
		pthread_join(f->thread, NULL);
	for (int i = 0; i < 2; i++)
		if (f->stop[i] >= 0)
			close(f->stop[i]);
	free(f->stdin_path);
	memset(f, 0, sizeof(*f));
}

/*
 * cli/sigfwd.c - signals as data: the handler counts SIGINT/SIGTERM/SIGHUP
 * and wakes the stream loop through a self-pipe; everything else (deciding
 * what to send to the sandbox, sending it) happens outside the handler.
 *
 * This is the one place of the CLI with process-wide state, because a signal
 * handler can reach nothing else.
 */
#include "sigfwd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };
#define NSIGS (sizeof(forwarded) / sizeof(forwarded[0]))

static volatile sig_atomic_t caught[NSIGS];
static int taken[NSIGS];
static int pipefd[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;

	for (size_t i = 0; i < NSIGS; i++)
		if (forwarded[i] == sig)
			caught[i]++;
	if (pipefd[1] >= 0 && write(pipefd[1], "", 1) < 0) {
		/* the pipe is full: the loop is already awake */
	}
	errno = saved;
}

int sigfwd_install(void)
{
	struct sigaction sa;

	if (pipefd[0] >= 0)
		return 0;
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NSIGS; i++)
		sigaddset(&sa.sa_mask, forwarded[i]);
	sa.sa_flags = 0; /* no SA_RESTART: a blocking poll returns and the loop looks */
	for (size_t i = 0; i < NSIGS; i++)
		if (sigaction(forwarded[i], &sa, NULL) < 0)
			return -errno;
	return 0;
}

int sigfwd_fd(void)
{
	return pipefd[0];
}

void sigfwd_drain(void)
{
	char buf[64];

	if (pipefd[0] < 0)
		return;
	while (read(pipefd[0], buf, sizeof(buf)) > 0)
		;
}

int sigfwd_pending(int sig)
{
	for (size_t i = 0; i < NSIGS; i++)
		if (forwarded[i] == sig)
			return (int)caught[i] - taken[i];
	return 0;
}

int sigfwd_any(void)
{
	return sigfwd_pending(SIGINT) || sigfwd_pending(SIGTERM) || sigfwd_pending(SIGHUP);
}

int sigfwd_take(void)
{
	for (size_t i = 0; i < NSIGS; i++) {
		if ((int)caught[i] > taken[i]) {
			taken[i]++;
			return forwarded[i];
		}
	}
	return 0;
}

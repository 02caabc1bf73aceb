/*
 * cli/tty.c - raw mode, size and SIGWINCH of our terminal (see tty.h). Like
 * sigfwd.c, it holds process-wide state because a signal handler and an
 * atexit handler can reach nothing else.
 */
#include "tty.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static bool is_raw;
static int winch[2] = { -1, -1 };

void tty_restore(void)
{
	if (!is_raw)
		return;
	/* TCSADRAIN: what we wrote is shown in raw mode first */
	tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	is_raw = false;
}

int tty_raw(void)
{
	static bool registered;
	struct termios t;

	if (is_raw)
		return 0;
	if (!isatty(STDIN_FILENO))
		return -ENOTTY;
	if (tcgetattr(STDIN_FILENO, &saved) < 0)
		return -errno;
	if (!registered && atexit(tty_restore) != 0)
		return -ENOMEM;
	registered = true;
	t = saved;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
		return -errno;
	is_raw = true;
	return 0;
}

void tty_size(int *cols, int *rows)
{
	struct winsize ws;

	if ((ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) &&
	    ws.ws_col && ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	} else {
		*cols = TTY_DEFAULT_COLS;
		*rows = TTY_DEFAULT_ROWS;
	}
}

static void on_winch(int sig)
{
	int saved_errno = errno;

	(void)sig;
	if (write(winch[1], "", 1) < 0) {
		/* the pipe is full: a change is noted already */
	}
	errno = saved_errno;
}

int tty_winch_fd(void)
{
	struct sigaction sa;

	if (winch[0] >= 0)
		return winch[0];
	if (pipe2(winch, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_winch;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGWINCH, &sa, NULL) < 0)
		return -errno;
	return winch[0];
}

/*
 * cli/stdinfwd.h - feed our standard input to a process in a sandbox
 * (`space exec -i`), from a second thread while the main thread streams the
 * process's output.
 *
 * The thread reads fd 0 in chunks of at most STDINFWD_CHUNK bytes and POSTs
 * each to /processes/{pid}/stdin (which answers once the bytes are handed to
 * the process, so a slow process slows the reading); at end of file it
 * DELETEs /stdin to close the process's stdin. It stops quietly when the
 * process no longer takes input. Call stdinfwd_start after the process was
 * started with "stdin_open": true, and stdinfwd_stop (always) when its output
 * stream ended; stop does not wait for more input.
 *
 * For a process with a terminal (`space exec -t`), the same thread also
 * carries our terminal's size changes (SIGWINCH, tty.c) to
 * /processes/{pid}/resize, with or without our input.
 */
#ifndef SPACE_CLI_STDINFWD_H
#define SPACE_CLI_STDINFWD_H

#include <pthread.h>

#include "lib/client/client.h"

#define STDINFWD_CHUNK (64u << 10)

#define STDINFWD_INPUT 0x1u  /* our stdin to the process's */
#define STDINFWD_RESIZE 0x2u /* our terminal's size to the process's terminal */

struct stdinfwd {
	struct client *c;
	unsigned what;    /* STDINFWD_* */
	int winch;        /* tty_winch_fd() with STDINFWD_RESIZE, else -1 */
	char *stdin_path; /* /v1/sandboxes/{id}/processes/{pid}/stdin */
	char *resize_path; /* ... /resize */
	int stop[2];      /* stop[1] written by stdinfwd_stop */
	pthread_t thread;
	int running;
};

/* Returns 0 or -errno; on error nothing is left to stop. */
int stdinfwd_start(struct stdinfwd *f, struct client *c, const char *id, long pid, unsigned what);
/* Stops and joins the thread, frees everything. Safe on a zeroed or stopped struct. */
void stdinfwd_stop(struct stdinfwd *f);

#endif

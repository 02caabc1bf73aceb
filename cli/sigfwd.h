/*
 * cli/sigfwd.h - catch SIGINT, SIGTERM and SIGHUP so that they can be
 * forwarded to a process inside a sandbox instead of killing `space`.
 *
 * The handler only counts the signal and writes a byte to a self-pipe; the
 * stream loop polls sigfwd_fd(), calls sigfwd_drain(), then takes the pending
 * signals one by one with sigfwd_take() and forwards them with ordinary
 * requests. Once installed, the handlers stay for the life of the process.
 */
#ifndef SPACE_CLI_SIGFWD_H
#define SPACE_CLI_SIGFWD_H

/* Installs the handlers (idempotent). Returns 0 or -errno. */
int sigfwd_install(void);
/* The read end of the self-pipe (O_CLOEXEC, non-blocking), or -1 before install. */
int sigfwd_fd(void);
/* Empties the self-pipe; the counts are kept. */
void sigfwd_drain(void);
/* Number of caught, not yet taken, signals of number sig (SIGINT, SIGTERM or SIGHUP). */
int sigfwd_pending(int sig);
/* Whether any of them is pending: a client's cancel callback for a command they stop. */
int sigfwd_any(void);
/* Takes one pending signal: returns its number (SIGINT first), or 0 if none. */
int sigfwd_take(void);

#endif

/*
 * daemon/base/err.h - the error a request carries up to the API edge.
 *
 * Functions below the HTTP layer return 0 or a negative errno and, when they
 * fail for a reason a user should read, fill a caller-owned struct err. The
 * HTTP layer turns it into a status and {"error": {"code", "message"}} in
 * one place (http_error).
 */
#ifndef SPACE_DAEMON_ERR_H
#define SPACE_DAEMON_ERR_H

struct err {
	int status;        /* HTTP status, 0 while unset */
	char code[24];     /* machine-readable: not_found, conflict, ... */
	char msg[384];     /* for a person */
	char state[16];    /* with 409, or a request ended by what became of its sandbox (suspended,
	                      deleting, failed): the sandbox's state */
};

/* Fills e (if it is still unset) and returns -errno_val, for `return err_set(...)`. */
int err_set(struct err *e, int status, const char *code, int errno_val, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Maps an errno from inside a sandbox to a status and code (ENOENT -> 404 ...), with the
 * message given. */
int err_from_errno(struct err *e, int errno_val, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

/*
 * lib/host/err.h - the error a request carries up to the API edge.
 *
 * Functions below the API layer return 0 or a negative errno and, when they
 * fail for a reason a user should read, fill a caller-owned struct err with a
 * kind (not found, conflict, no space, ...) and a message. The kind names the
 * failure, not a protocol: its code string (err_code) is what every front
 * shows, and only the HTTP layer turns a kind into a status (http_status).
 */
#ifndef SPACE_LIB_HOST_ERR_H
#define SPACE_LIB_HOST_ERR_H

enum err_kind {
	ERR_NONE,                /* unset: no error */
	ERR_INVALID,             /* invalid_argument: the request itself is wrong */
	ERR_UNAUTHORIZED,        /* unauthorized: no or an unknown credential */
	ERR_FORBIDDEN,           /* forbidden: the credential may not do this */
	ERR_PERMISSION,          /* permission_denied: the sandbox's own permissions refused it */
	ERR_NOT_FOUND,           /* not_found */
	ERR_METHOD,              /* method_not_allowed */
	ERR_CONFLICT,            /* conflict: the state does not allow it (now) */
	ERR_CANCELLED,           /* cancelled: a caller ended the work */
	ERR_TOO_LARGE,           /* too_large: a body or an answer over its limit */
	ERR_NOT_READY,           /* not_ready: a readiness check that can never pass */
	ERR_EXEC_FAILED,         /* exec_failed: the program could not be started */
	ERR_TOO_MANY,            /* too_many: a count or a rate limit */
	ERR_INTERNAL,            /* internal: space failed */
	ERR_SANDBOX_FAILED,      /* sandbox_failed: the sandbox is gone or broken */
	ERR_BUILD_FAILED,        /* build_failed: a template could not be built */
	ERR_NOT_IMPLEMENTED,     /* not_implemented: the sandbox cannot do this */
	ERR_UNAVAILABLE,         /* unavailable: try again later */
	ERR_NO_KERNEL,           /* no_kernel: the microVM kernel and image are not made yet */
	ERR_ISOLATION_REFUSED,   /* isolation_unavailable: asked for a kind this host lacks */
	ERR_ISOLATION_BROKEN,    /* isolation_unavailable: a kind that was there failed */
	ERR_ISOLATION_UNAVAILABLE, /* isolation_unavailable: a kind is not usable for now */
	ERR_TIMEOUT,             /* timeout: a deadline passed */
	ERR_NO_SPACE,            /* no_space: a disk is full */
	ERR_KINDS
};

struct err {
	enum err_kind kind; /* ERR_NONE while unset */
	char msg[384];      /* for a person */
	char state[16];     /* with a conflict, or a request ended by what became of its sandbox
	                       (suspended, deleting, failed): the sandbox's state */
};

/* Fills e (if it is still unset) and returns -errno_val, for `return err_set(...)`. */
int err_set(struct err *e, enum err_kind kind, int errno_val, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Maps an errno from inside a sandbox to a kind (ENOENT -> not found ...), with the message
 * given. */
int err_from_errno(struct err *e, int errno_val, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The machine-readable code of a kind, as the API's errors carry it ("not_found", ...). */
const char *err_code(enum err_kind kind);

#endif

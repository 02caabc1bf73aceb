/*
 * lib/host/err.c - filling struct err, the kinds' codes, and the mapping
 * from errno values reported by the agent to kinds.
 */
#include "lib/host/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const codes[ERR_KINDS] = {
	[ERR_NONE] = "",
	[ERR_INVALID] = "invalid_argument",
	[ERR_UNAUTHORIZED] = "unauthorized",
	[ERR_FORBIDDEN] = "forbidden",
	[ERR_PERMISSION] = "permission_denied",
	[ERR_NOT_FOUND] = "not_found",
	[ERR_METHOD] = "method_not_allowed",
	[ERR_CONFLICT] = "conflict",
	[ERR_CANCELLED] = "cancelled",
	[ERR_TOO_LARGE] = "too_large",
	[ERR_NOT_READY] = "not_ready",
	[ERR_EXEC_FAILED] = "exec_failed",
	[ERR_TOO_MANY] = "too_many",
	[ERR_INTERNAL] = "internal",
	[ERR_SANDBOX_FAILED] = "sandbox_failed",
	[ERR_BUILD_FAILED] = "build_failed",
	[ERR_NOT_IMPLEMENTED] = "not_implemented",
	[ERR_UNAVAILABLE] = "unavailable",
	[ERR_NO_KERNEL] = "no_kernel",
	[ERR_ISOLATION_REFUSED] = "isolation_unavailable",
	[ERR_ISOLATION_BROKEN] = "isolation_unavailable",
	[ERR_ISOLATION_UNAVAILABLE] = "isolation_unavailable",
	[ERR_TIMEOUT] = "timeout",
	[ERR_NO_SPACE] = "no_space",
};

const char *err_code(enum err_kind kind)
{
	return (unsigned)kind < ERR_KINDS ? codes[kind] : codes[ERR_INTERNAL];
}

int err_set(struct err *e, enum err_kind kind, int errno_val, const char *fmt, ...)
{
	if (e && e->kind == ERR_NONE) {
		va_list ap;
		e->kind = kind;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -(errno_val > 0 ? errno_val : EIO);
}

static enum err_kind kind_of_errno(int errno_val)
{
	switch (errno_val) {
	case ENOENT:
	case ESRCH:
		return ERR_NOT_FOUND;
	case EACCES:
	case EPERM:
		return ERR_PERMISSION;
	case EEXIST:
	case ENOTEMPTY:
	case EBUSY:
		return ERR_CONFLICT;
	case EAGAIN:
		return ERR_TOO_MANY;
	case ENOSPC:
	case EDQUOT:
		return ERR_NO_SPACE;
	case EIO:
	case ENOMEM:
		return ERR_INTERNAL;
	case ENOSYS:
		return ERR_NOT_IMPLEMENTED;
	default:
		return ERR_INVALID;
	}
}

int err_from_errno(struct err *e, int errno_val, const char *fmt, ...)
{
	char msg[sizeof(e->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(e, kind_of_errno(errno_val), errno_val, "%s", msg);
}

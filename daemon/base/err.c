/*
 * daemon/base/err.c - filling struct err, and the mapping from errno values
 * reported by the agent to HTTP statuses.
 */
#include "daemon/base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, int status, const char *code, int errno_val, const char *fmt, ...)
{
	if (e && e->status == 0) {
		va_list ap;
		e->status = status;
		snprintf(e->code, sizeof(e->code), "%s", code);
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -(errno_val > 0 ? errno_val : EIO);
}

int err_from_errno(struct err *e, int errno_val, const char *fmt, ...)
{
	int status = 400;
	const char *code = "invalid_argument";

	switch (errno_val) {
	case ENOENT:
	case ESRCH:
		status = 404;
		code = "not_found";
		break;
	case EACCES:
	case EPERM:
		status = 403;
		code = "permission_denied";
		break;
	case EEXIST:
	case ENOTEMPTY:
	case EBUSY:
		status = 409;
		code = "conflict";
		break;
	case EAGAIN:
		status = 429;
		code = "too_many";
		break;
	case ENOSPC:
	case EDQUOT:
		status = 507;
		code = "no_space";
		break;
	case EIO:
	case ENOMEM:
		status = 500;
		code = "internal";
		break;
	case ENOSYS:
		status = 501;
		code = "not_implemented";
		break;
	default:
		break;
	}
	char msg[sizeof(e->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(e, status, code, errno_val, "%s", msg);
}

/*
 * daemon/api/http_status.c - the HTTP status of each kind of error: the one
 * place where the core's failures become HTTP (docs/api.md lists them).
 */
#include "daemon/api/http.h"

static const unsigned statuses[ERR_KINDS] = {
	[ERR_NONE] = 200,
	[ERR_INVALID] = 400,
	[ERR_UNAUTHORIZED] = 401,
	[ERR_FORBIDDEN] = 403,
	[ERR_PERMISSION] = 403,
	[ERR_NOT_FOUND] = 404,
	[ERR_METHOD] = 405,
	[ERR_CONFLICT] = 409,
	[ERR_CANCELLED] = 409,
	[ERR_TOO_LARGE] = 413,
	[ERR_NOT_READY] = 422,
	[ERR_EXEC_FAILED] = 422,
	[ERR_TOO_MANY] = 429,
	[ERR_INTERNAL] = 500,
	[ERR_SANDBOX_FAILED] = 500,
	[ERR_BUILD_FAILED] = 500,
	[ERR_NOT_IMPLEMENTED] = 501,
	[ERR_UNAVAILABLE] = 503,
	[ERR_NO_KERNEL] = 503,
	[ERR_ISOLATION_REFUSED] = 400,
	[ERR_ISOLATION_BROKEN] = 500,
	[ERR_ISOLATION_UNAVAILABLE] = 503,
	[ERR_TIMEOUT] = 504,
	[ERR_NO_SPACE] = 507,
};

unsigned http_status(enum err_kind kind)
{
	return (unsigned)kind < ERR_KINDS ? statuses[kind] : 500;
}

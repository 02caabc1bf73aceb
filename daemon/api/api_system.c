/*
 * daemon/api/api_system.c - the machine's cache through the API: GET /v1/system/df and
 * POST /v1/system/prune (core/system.h). The cache is the machine's, not a tenant's: both
 * are the operator's, on the Unix socket.
 */
#include "daemon/api/api.h"

#include <errno.h>

#include <jansson.h>

#include "daemon/core/op.h"
#include "daemon/core/system.h"

static bool operator_only(struct op *op)
{
	if (!op->tcp)
		return true;
	err_set(&op->err, ERR_FORBIDDEN, EPERM, "the machine's cache is the operator's: a tenant's token cannot see or prune it");
	return false;
}

int api_system_df(struct op *op)
{
	if (!operator_only(op))
		return API_DONE;
	op->kind = OP_JOB;
	return system_df(op->d, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

int api_system_prune(struct op *op)
{
	if (!operator_only(op))
		return API_DONE;
	long long keep = 0;
	if (buf_avail(&op->body)) {
		json_t *body = json_loadb((const char *)buf_head(&op->body), buf_avail(&op->body), 0, NULL);
		json_t *k = json_object_get(body, "keep_bytes");
		if (!json_is_object(body) || (k && (!json_is_integer(k) || json_integer_value(k) < 0))) {
			err_set(&op->err, ERR_INVALID, EINVAL,
				"the body is a JSON object whose keep_bytes, if there, is a whole number of bytes from 0 up");
			json_decref(body);
			return API_DONE;
		}
		keep = k ? json_integer_value(k) : 0;
		json_decref(body);
	}
	op->kind = OP_JOB;
	return system_prune(op->d, keep, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

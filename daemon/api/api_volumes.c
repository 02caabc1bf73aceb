/*
 * daemon/api/api_volumes.c - routes of volumes (core/volume.h): create, list, get, remove.
 * A tenant's token sees and touches only its tenant's; the Unix socket's administrator, all.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/core/op.h"
#include "daemon/core/volume.h"

/* The tenant a request acts for: its token's, or NULL for the administrator (every volume). */
static const char *viewer(const struct op *op)
{
	return op->tcp ? op->tenant : NULL;
}

int api_volume_create(struct op *op)
{
	static const struct field fields[] = {
		{ "name", F_STRING }, { "size_mb", F_INT }, { "labels", F_STRMAP }, { NULL, 0 },
	};
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	const char *name = json_string_value(json_object_get(b, "name"));
	json_t *size = json_object_get(b, "size_mb");
	json_t *labels = json_object_get(b, "labels");
	json_int_t mb = size ? json_integer_value(size) : VOLUME_DEFAULT_MB;
	int rc;
	if (!name)
		rc = err_set(&op->err, ERR_INVALID, EINVAL, "a volume needs a name");
	else if (mb < VOLUME_MIN_MB || mb > VOLUME_MAX_MB)
		rc = err_set(&op->err, ERR_INVALID, EINVAL, "size_mb must be %d..%d", VOLUME_MIN_MB, VOLUME_MAX_MB);
	else if (labels)
		rc = volume_create(op->d, op->tcp ? op->tenant : "", name, (int)mb, labels, op, &op->err);
	else {
		json_t *none = json_object();
		rc = volume_create(op->d, op->tcp ? op->tenant : "", name, (int)mb, none, op, &op->err);
		json_decref(none);
	}
	json_decref(b);
	op->kind = OP_JOB;
	return rc == 0 ? API_PENDING : API_DONE;
}

int api_volume_list(struct op *op)
{
	op->json = json_pack("{s:o}", "volumes", volume_list(op->d, viewer(op)));
	return API_DONE;
}

int api_volume_get(struct op *op)
{
	op->json = volume_get(op->d, viewer(op), op->vol, &op->err);
	return API_DONE;
}

int api_volume_delete(struct op *op)
{
	op->kind = OP_JOB;
	return volume_remove(op->d, viewer(op), op->vol, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

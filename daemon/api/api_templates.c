/*
 * daemon/api/api_templates.c - routes of templates: list, get, remove, and builds (POST
 * /v1/templates, a Dockerfile's build context as the body, answered with the build's events
 * as they come; core/build.c) and their record (PUT, the builder's own, on the Unix socket).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/core/build.h"
#include "daemon/core/system.h"
#include "daemon/core/template_rm.h"
#include "daemon/store/store.h"

int api_templates(struct op *op)
{
	op->json = json_pack("{s:o}", "templates", store_list_templates(op->d->store));
	return API_DONE;
}

int api_template_get(struct op *op)
{
	json_t *t = store_get_template(op->d->store, op->tpl);
	if (!t) {
		err_set(&op->err, ERR_NOT_FOUND, ENOENT, "no template %s", op->tpl);
		return API_DONE;
	}
	/* what starts from it: a tenant sees its own sandboxes only */
	int mine = 0;
	for (struct sandbox *sb = op->d->sandboxes; sb; sb = sb->next)
		mine += strcmp(sb->conf.template, op->tpl) == 0 && (!op->tcp || strcmp(sb->conf.tenant, op->tenant) == 0);
	json_object_set_new(t, "sandboxes", json_integer(mine));
	op->json = t;
	return API_DONE;
}

int api_template_delete(struct op *op)
{
	if (op->tcp) {
		err_set(&op->err, ERR_FORBIDDEN, EPERM, "templates are the operator's: a tenant's token cannot remove one");
		return API_DONE;
	}
	op->kind = OP_JOB;
	return template_remove(op->d, op->tpl, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

int api_template_build_cancel(struct op *op)
{
	if (op->tcp) {
		err_set(&op->err, ERR_FORBIDDEN, EPERM, "templates are the operator's: a tenant's token cannot cancel a build");
		return API_DONE;
	}
	if (build_cancel(op->d, op->tpl, &op->err) == 0)
		op->answer = ANSWER_EMPTY;
	return API_DONE;
}

int api_template_build(struct op *op)
{
	if (op->tcp) {
		err_set(&op->err, ERR_FORBIDDEN, EPERM, "templates are the operator's: a tenant's token cannot build one");
		return API_DONE;
	}
	const char *name = json_string_value(json_object_get(op->query, "name"));
	const char *file = json_string_value(json_object_get(op->query, "dockerfile"));
	const char *source = json_string_value(json_object_get(op->query, "source"));
	if (source) { /* an image to import, not a Dockerfile to build */
		build_import(op->d, op, name, source, &op->err);
		return API_DONE;
	}
	json_t *args = json_object_get(op->query, "build_arg[]");
	size_t i;
	json_t *a;
	json_array_foreach(args, i, a) {
		const char *s = json_string_value(a);
		if (!s || !strchr(s, '=') || s[0] == '=') {
			err_set(&op->err, ERR_INVALID, EINVAL, "build_arg must be NAME=VALUE, not \"%s\"", s ? s : "");
			return API_DONE;
		}
	}
	build_begin(op->d, op, name, file ? file : "Dockerfile", args,
		    json_string_value(json_object_get(op->query, "packages")), &op->err);
	return API_DONE;
}

int api_template_build_upload(struct op *op, const char *data, size_t *size)
{
	if (data) {
		size_t n = *size;
		*size = 0;
		return build_upload(op, data, n) == 0 ? API_DONE : API_DONE;
	}
	return build_start(op) == 0 ? API_PENDING : API_DONE;
}

int api_template_put(struct op *op)
{
	if (op->tcp) {
		err_set(&op->err, ERR_FORBIDDEN, EPERM, "templates are recorded by builds: POST /v1/templates");
		return API_DONE;
	}
	json_t *body = json_loadb((const char *)buf_head(&op->body), buf_avail(&op->body), 0, NULL);
	if (!json_is_object(body)) {
		err_set(&op->err, ERR_INVALID, EINVAL, "the body must be a JSON object");
		json_decref(body);
		return API_DONE;
	}
	op->kind = OP_JOB;
	int rc = build_record(op->d, op, op->tpl, body, &op->err);
	json_decref(body);
	if (rc == 0)
		system_trim(op->d); /* a build adds step roots: the cache is kept under its bound */
	return rc == 0 ? API_PENDING : API_DONE;
}

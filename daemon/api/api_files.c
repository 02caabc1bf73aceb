/*
 * daemon/api/api_files.c - routes that move files in and out of a sandbox.
 *
 * Reads and writes stream through the agent against credit, so a file of any
 * size passes through spaced in pieces of at most one window.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/core/sandbox.h"

/* The "path" query argument, checked; NULL with op->err set. */
static const char *query_path(struct op *op)
{
	json_t *v = json_object_get(op->query, "path");
	if (api_check_path(op, json_string_value(v), json_string_length(v), "path") < 0)
		return NULL;
	return json_string_value(v);
}

static struct sandbox *target(struct op *op, const char **path)
{
	struct sandbox *sb = api_sandbox(op, true);
	if (!sb)
		return NULL;
	*path = query_path(op);
	return *path ? sb : NULL;
}

int api_file_read(struct op *op)
{
	const char *path;
	struct sandbox *sb = target(op, &path);
	return sb ? api_request(op, sb, OP_READ, SP_H_FREAD, NULL, 0, path, NULL) : API_DONE;
}

int api_file_write(struct op *op)
{
	const char *path;
	struct sandbox *sb = target(op, &path);
	if (!sb)
		return API_DONE;
	struct sp_fwrite w = { .mode = 0644 };
	const char *mode = json_string_value(json_object_get(op->query, "mode"));
	if (mode) {
		char *end;
		unsigned long m = strtoul(mode, &end, 8);
		if (!*mode || *end || m > 07777) {
			err_set(&op->err, 400, "invalid_argument", EINVAL, "mode must be octal permission bits, like 0644");
			return API_DONE;
		}
		w.mode = (uint32_t)m;
	}
	op->credit = SP_WINDOW;
	if (api_request(op, sb, OP_WRITE, SP_H_FWRITE, &w, sizeof(w), path, NULL) != API_PENDING)
		return API_DONE;
	op->json = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)0);
	return API_DONE; /* the body follows through api_file_write_upload */
}

int api_file_write_upload(struct op *op, const char *data, size_t *size)
{
	if (!op->sb)
		return API_DONE; /* failed meanwhile: op->err or done is set */
	while (*size > 0 && op->credit > 0) {
		size_t n = *size < SP_MAX_PAYLOAD ? *size : SP_MAX_PAYLOAD;
		if (n > op->credit)
			n = op->credit;
		if (!chan_data_room(&op->sb->chan, n))
			return API_PENDING; /* the agent's queue is full: woken when it drains */
		chan_send(&op->sb->chan, SP_H_DATA, op->tag, data, n, NULL, 0);
		op->credit -= (uint32_t)n;
		op->upload_size += n;
		data += n;
		*size -= n;
	}
	if (*size > 0)
		return API_PENDING;
	if (data == NULL && !op->eof) {
		op->eof = true;
		json_object_set_new(op->json, "size", json_integer((json_int_t)op->upload_size));
		chan_send(&op->sb->chan, SP_H_END, op->tag, NULL, 0, NULL, 0);
	}
	return data == NULL ? API_PENDING : API_DONE;
}

int api_file_stat(struct op *op)
{
	const char *path;
	struct sandbox *sb = target(op, &path);
	return sb ? api_request(op, sb, OP_CALL, SP_H_STAT, NULL, 0, path, NULL) : API_DONE;
}

int api_file_list(struct op *op)
{
	const char *path;
	struct sandbox *sb = target(op, &path);
	if (!sb)
		return API_DONE;
	/* a page after an earlier one: the entries up to its cursor are skipped as they stream */
	json_t *after = json_object_get(op->query, "after");
	if (after) {
		if (json_string_length(after) == 0 || json_string_length(after) > 255 ||
		    strlen(json_string_value(after)) != json_string_length(after)) {
			err_set(&op->err, 400, "invalid_argument", EINVAL, "after must be an entry name from \"next\"");
			return API_DONE;
		}
		free(op->after);
		op->after = strdup(json_string_value(after));
	}
	op->json = json_array();
	return api_request(op, sb, OP_CALL, SP_H_LIST, NULL, 0, path, NULL);
}

int api_file_remove(struct op *op)
{
	const char *path;
	struct sandbox *sb = target(op, &path);
	if (!sb)
		return API_DONE;
	op->status = 204;
	return api_request(op, sb, OP_CALL, SP_H_REMOVE, NULL, 0, path, NULL);
}

/* Reads a path member of a JSON body, checked. */
static const char *body_path(struct op *op, json_t *body, const char *name)
{
	json_t *v = json_object_get(body, name);
	if (api_check_path(op, json_string_value(v), json_string_length(v), name) < 0)
		return NULL;
	return json_string_value(v);
}

int api_file_mkdir(struct op *op)
{
	static const struct field fields[] = { { "path", F_STRING }, { NULL, 0 } };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	int rc = API_DONE;
	const char *path = body_path(op, body, "path");
	struct sandbox *sb = path ? api_sandbox(op, true) : NULL;
	if (sb) {
		struct sp_mode m = { .mode = 0755 };
		op->status = 201;
		rc = api_request(op, sb, OP_CALL, SP_H_MKDIR, &m, sizeof(m), path, NULL);
	}
	json_decref(body);
	return rc;
}

int api_file_rename(struct op *op)
{
	static const struct field fields[] = { { "from", F_STRING }, { "to", F_STRING }, { NULL, 0 } };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	int rc = API_DONE;
	const char *from = body_path(op, body, "from");
	const char *to = from ? body_path(op, body, "to") : NULL;
	struct sandbox *sb = to ? api_sandbox(op, true) : NULL;
	if (sb) {
		op->status = 204;
		rc = api_request(op, sb, OP_CALL, SP_H_RENAME, NULL, 0, from, to);
	}
	json_decref(body);
	return rc;
}

/* An NDJSON stream of a folder's changes (docs/api.md), until the client closes it. */
int api_file_watch(struct op *op)
{
	const char *path;
	struct sandbox *sb = target(op, &path);
	if (!sb)
		return API_DONE;
	const char *rec = json_string_value(json_object_get(op->query, "recursive"));
	struct sp_watch w = { 0 };
	if (rec && (!strcmp(rec, "1") || !strcmp(rec, "true")))
		w.flags = SP_WATCH_RECURSIVE;
	if (rec && !w.flags && strcmp(rec, "0") != 0 && strcmp(rec, "false") != 0)
		err_set(&op->err, 400, "invalid_argument", EINVAL, "recursive must be 1, true, 0 or false");
	else if (sb->peer.version < 3) /* an older agent drops the connection on a message it lacks */
		err_set(&op->err, 409, "conflict", ENOTSUP,
			"sandbox %s runs an agent of protocol %u, from before watching folders: watch in a new sandbox",
			sb->id, sb->peer.version);
	if (op->err.status)
		return API_DONE;
	op->stream = true;
	return api_request(op, sb, OP_WATCH, SP_H_WATCH, &w, sizeof(w), path, NULL);
}

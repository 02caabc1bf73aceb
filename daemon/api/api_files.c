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

#define FILE_USER_MAX 255 /* bytes of a `user` (Linux's LOGIN_NAME_MAX less its NUL) */

/* A file request's target: the sandbox, the paths as the agent gets them, and whom it acts as. */
struct file_req {
	struct sandbox *sb;
	const char *user;        /* NULL: the agent itself (root) */
	char path[2][API_MAX_PATH + 1];
};

/*
 * Checks a path argument and puts it into out: an absolute path as it is; a relative one, with
 * a user, as it is (the agent takes it from the user's home); without, joined to the sandbox's
 * working folder (its template's, else /work). Returns 0, or -EINVAL with op->err set.
 */
static int file_path(struct op *op, const struct file_req *r, json_t *v, const char *what, char *out)
{
	const char *p = json_string_value(v);
	if (!p)
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s is required", what);
	if (strlen(p) != json_string_length(v))
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s contains a NUL byte", what);
	if (!*p)
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s is empty", what);
	const char *base = p[0] == '/' || r->user ? "" : r->sb->conf.workdir[0] ? r->sb->conf.workdir : "/work";
	int n = snprintf(out, API_MAX_PATH + 1, "%s%s%s", base, *base && base[strlen(base) - 1] != '/' ? "/" : "", p);
	if (n < 0 || n > API_MAX_PATH)
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s is longer than %d bytes", what,
			       API_MAX_PATH);
	return 0;
}

/* The `user` a file request names (NULL for none): checked, and known to the sandbox's agent. */
static int file_user(struct op *op, struct file_req *r, json_t *v)
{
	r->user = NULL;
	if (!v)
		return 0;
	const char *u = json_string_value(v);
	if (!u || !*u || strlen(u) != json_string_length(v) || strlen(u) > FILE_USER_MAX)
		return err_set(&op->err, ERR_INVALID, EINVAL,
			       "user must be a user name, a uid or UID:GID of at most %d bytes", FILE_USER_MAX);
	if (!(r->sb->peer.features & SP_FEATURE_FILE_USER))
		return err_set(&op->err, ERR_CONFLICT, ENOTSUP,
			       "sandbox %s runs an agent from before file requests as a user: start one in a new sandbox",
			       r->sb->id);
	r->user = u;
	return 0;
}

/* Fills r for a request on sandbox op->sbid: its user (from args' "user") and npaths paths (from
 * args' members named in names); 0, or -1 with op->err set. */
static int file_req(struct op *op, json_t *args, const char *const *names, int npaths, struct file_req *r)
{
	if (!(r->sb = api_sandbox(op, true)) || file_user(op, r, json_object_get(args, "user")) < 0)
		return -1;
	for (int i = 0; i < npaths; i++)
		if (file_path(op, r, json_object_get(args, names[i]), names[i], r->path[i]) < 0)
			return -1;
	return 0;
}

static const char *const path_arg[] = { "path" };

/* Sends a file request: the fixed part, the paths, then the user when there is one. */
static int file_send(struct op *op, const struct file_req *r, enum op_kind kind, uint8_t type, const void *fixed,
		     size_t nfixed, int npaths)
{
	if (!r->user)
		return api_request(op, r->sb, kind, type, fixed, nfixed, r->path[0], npaths > 1 ? r->path[1] : NULL);
	/* the paths go into the fixed part, so that the user can follow them as the last string */
	struct buf b = { 0 };
	buf_put(&b, fixed, nfixed);
	for (int i = 0; i < npaths; i++)
		buf_put(&b, r->path[i], strlen(r->path[i]) + 1);
	if (!op->what)
		op->what = strdup(r->path[0]);
	int rc = api_request(op, r->sb, kind, type, buf_head(&b), buf_avail(&b), r->user, NULL);
	buf_free(&b);
	return rc;
}

int api_file_read(struct op *op)
{
	struct file_req r;
	if (file_req(op, op->query, path_arg, 1, &r) < 0)
		return API_DONE;
	return file_send(op, &r, OP_READ, SP_H_FREAD, NULL, 0, 1);
}

int api_file_write(struct op *op)
{
	struct file_req r;
	if (file_req(op, op->query, path_arg, 1, &r) < 0)
		return API_DONE;
	struct sp_fwrite w = { .mode = 0644 };
	const char *mode = json_string_value(json_object_get(op->query, "mode"));
	if (mode) {
		char *end;
		unsigned long m = strtoul(mode, &end, 8);
		if (!*mode || *end || m > 07777) {
			err_set(&op->err, ERR_INVALID, EINVAL, "mode must be octal permission bits, like 0644");
			return API_DONE;
		}
		w.mode = (uint32_t)m;
	}
	op->upload.credit = SP_WINDOW;
	if (file_send(op, &r, OP_WRITE, SP_H_FWRITE, &w, sizeof(w), 1) != API_PENDING)
		return API_DONE;
	/* the path as given until the agent's A_OK names it absolute */
	op->json = json_pack("{s:s, s:I}", "path", r.path[0], "size", (json_int_t)0);
	return API_DONE; /* the body follows through api_file_write_upload */
}

int api_file_write_upload(struct op *op, const char *data, size_t *size)
{
	if (!op->sb)
		return API_DONE; /* failed meanwhile: op->err or done is set */
	while (*size > 0 && op->upload.credit > 0) {
		size_t n = *size < SP_MAX_PAYLOAD ? *size : SP_MAX_PAYLOAD;
		if (n > op->upload.credit)
			n = op->upload.credit;
		if (!chan_data_room(&op->sb->chan, n))
			return API_PENDING; /* the agent's queue is full: woken when it drains */
		chan_send(&op->sb->chan, SP_H_DATA, op->tag, data, n, NULL, 0);
		op->upload.credit -= (uint32_t)n;
		op->upload.size += n;
		data += n;
		*size -= n;
	}
	if (*size > 0)
		return API_PENDING;
	if (data == NULL && !op->eof) {
		op->eof = true;
		json_object_set_new(op->json, "size", json_integer((json_int_t)op->upload.size));
		chan_send(&op->sb->chan, SP_H_END, op->tag, NULL, 0, NULL, 0);
	}
	return data == NULL ? API_PENDING : API_DONE;
}

int api_file_stat(struct op *op)
{
	struct file_req r;
	if (file_req(op, op->query, path_arg, 1, &r) < 0)
		return API_DONE;
	json_object_set_new(op->query, "path", json_string(r.path[0])); /* what the answer shows */
	return file_send(op, &r, OP_CALL, SP_H_STAT, NULL, 0, 1);
}

int api_file_list(struct op *op)
{
	struct file_req r;
	if (file_req(op, op->query, path_arg, 1, &r) < 0)
		return API_DONE;
	json_object_set_new(op->query, "path", json_string(r.path[0])); /* the folder of each entry */
	/* a page after an earlier one: the entries up to its cursor are skipped as they stream */
	json_t *after = json_object_get(op->query, "after");
	if (after) {
		if (json_string_length(after) == 0 || json_string_length(after) > 255 ||
		    strlen(json_string_value(after)) != json_string_length(after)) {
			err_set(&op->err, ERR_INVALID, EINVAL, "after must be an entry name from \"next\"");
			return API_DONE;
		}
		free(op->list.after);
		op->list.after = strdup(json_string_value(after));
	}
	op->json = json_array();
	return file_send(op, &r, OP_CALL, SP_H_LIST, NULL, 0, 1);
}

int api_file_remove(struct op *op)
{
	struct file_req r;
	if (file_req(op, op->query, path_arg, 1, &r) < 0)
		return API_DONE;
	op->answer = ANSWER_EMPTY;
	return file_send(op, &r, OP_CALL, SP_H_REMOVE, NULL, 0, 1);
}

int api_file_mkdir(struct op *op)
{
	static const struct field fields[] = { { "path", F_STRING }, { "user", F_STRING }, { NULL, 0 } };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	int rc = API_DONE;
	struct file_req r;
	if (file_req(op, body, path_arg, 1, &r) == 0) {
		struct sp_mode m = { .mode = 0755 };
		op->answer = ANSWER_CREATED;
		rc = file_send(op, &r, OP_CALL, SP_H_MKDIR, &m, sizeof(m), 1);
		if (rc == API_PENDING) /* the path as given until the agent's A_OK names it absolute */
			op->json = json_pack("{s:s}", "path", r.path[0]);
	}
	json_decref(body);
	return rc;
}

int api_file_rename(struct op *op)
{
	static const struct field fields[] = { { "from", F_STRING }, { "to", F_STRING }, { "user", F_STRING },
					       { NULL, 0 } };
	static const char *const names[] = { "from", "to" };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	int rc = API_DONE;
	struct file_req r;
	if (file_req(op, body, names, 2, &r) == 0) {
		op->answer = ANSWER_EMPTY;
		rc = file_send(op, &r, OP_CALL, SP_H_RENAME, NULL, 0, 2);
	}
	json_decref(body);
	return rc;
}

/* An NDJSON stream of a folder's changes (docs/api.md), until the client closes it. */
int api_file_watch(struct op *op)
{
	struct file_req r;
	if (file_req(op, op->query, path_arg, 1, &r) < 0)
		return API_DONE;
	struct sandbox *sb = r.sb;
	const char *rec = json_string_value(json_object_get(op->query, "recursive"));
	struct sp_watch w = { 0 };
	if (rec && (!strcmp(rec, "1") || !strcmp(rec, "true")))
		w.flags = SP_WATCH_RECURSIVE;
	if (rec && !w.flags && strcmp(rec, "0") != 0 && strcmp(rec, "false") != 0)
		err_set(&op->err, ERR_INVALID, EINVAL, "recursive must be 1, true, 0 or false");
	else if (r.user)
		err_set(&op->err, ERR_INVALID, EINVAL, "a watch takes no user: it sees every change in its folder");
	else if (sb->peer.version < 3) /* an older agent drops the connection on a message it lacks */
		err_set(&op->err, ERR_CONFLICT, ENOTSUP,
			"sandbox %s runs an agent of protocol %u, from before watching folders: watch in a new sandbox",
			sb->id, sb->peer.version);
	if (op->err.kind)
		return API_DONE;
	op->stream = true;
	return api_request(op, sb, OP_WATCH, SP_H_WATCH, &w, sizeof(w), r.path[0], NULL);
}

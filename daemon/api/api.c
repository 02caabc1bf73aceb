/*
 * daemon/api/api.c - what every route's handler shares: strict validation of
 * bodies and paths (unknown fields and wrong types are errors that name the
 * field), and finding the sandbox a request names, resuming it when needed.
 */
#include "daemon/api/api.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/lifecycle.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/snapshot.h"
#include "daemon/core/peer.h"
#include "daemon/io/chan.h"
#include "lib/buf.h"

static bool type_ok(json_t *v, enum field_type t)
{
	switch (t) {
	case F_STRING:
		return json_is_string(v);
	case F_INT:
		return json_is_integer(v);
	case F_NUMBER:
		return json_is_number(v);
	case F_BOOL:
		return json_is_boolean(v);
	case F_STRMAP: {
		const char *k;
		json_t *x;
		if (!json_is_object(v))
			return false;
		json_object_foreach(v, k, x) if (!json_is_string(x)) return false;
		return true;
	}
	case F_INT_OR_STRING:
		return json_is_integer(v) || json_is_string(v);
	case F_OBJECT_OR_FALSE:
		return json_is_object(v) || json_is_false(v);
	case F_STRLIST: {
		size_t i;
		json_t *x;
		if (!json_is_array(v))
			return false;
		json_array_foreach(v, i, x) if (!json_is_string(x)) return false;
		return true;
	}
	case F_ARRAY:
		return json_is_array(v);
	case F_ARGV_OR_STRING: {
		size_t i;
		json_t *x;
		if (json_is_string(v))
			return true;
		if (!json_is_array(v) || json_array_size(v) == 0)
			return false;
		json_array_foreach(v, i, x) if (!json_is_string(x)) return false;
		return true;
	}
	}
	return false;
}

static const char *type_name(enum field_type t)
{
	static const char *names[] = { "a string", "an integer", "a number", "a boolean",
				       "an object of strings", "a non-empty array of strings or a string",
				       "an integer or a string", "an object or false",
				       "an array of strings", "an array" };
	return names[t];
}

int api_body(struct op *op, const struct field *fields, json_t **out)
{
	json_error_t jerr;
	json_t *body;
	if (buf_avail(&op->body) == 0) {
		body = json_object();
	} else {
		body = json_loadb((const char *)buf_head(&op->body), buf_avail(&op->body), JSON_REJECT_DUPLICATES, &jerr);
		if (!body)
			return err_set(&op->err, ERR_INVALID, EINVAL, "malformed JSON: %s (line %d, column %d)",
				       jerr.text, jerr.line, jerr.column);
	}
	if (!json_is_object(body)) {
		json_decref(body);
		return err_set(&op->err, ERR_INVALID, EINVAL, "the body must be a JSON object");
	}
	const char *k;
	json_t *v;
	json_object_foreach(body, k, v) {
		const struct field *f = fields;
		while (f->name && strcmp(f->name, k) != 0)
			f++;
		if (!f->name) {
			err_set(&op->err, ERR_INVALID, EINVAL, "unknown field \"%s\"", k);
			json_decref(body);
			return -EINVAL;
		}
		if (!type_ok(v, f->type)) {
			err_set(&op->err, ERR_INVALID, EINVAL, "field \"%s\" must be %s", k, type_name(f->type));
			json_decref(body);
			return -EINVAL;
		}
	}
	*out = body;
	return 0;
}

int api_check_path(struct op *op, const char *path, size_t len, const char *what)
{
	if (!path)
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s is required", what);
	if (strlen(path) != len)
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s contains a NUL byte", what);
	if (len == 0 || path[0] != '/')
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s must be an absolute path", what);
	if (len > API_MAX_PATH)
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s is longer than %d bytes", what,
			       API_MAX_PATH);
	return 0;
}

struct sandbox *api_sandbox(struct op *op, bool need_agent)
{
	struct sandbox *sb = sandbox_find(op->d, op->sbid);
	/* another tenant's sandbox does not exist, as far as this request can tell */
	if (sb && op->tcp && strcmp(sb->conf.tenant, op->tenant) != 0)
		sb = NULL;
	if (sb && sb->pooled != SB_POOL_NONE) /* the warm pool's: no one's yet (core/pool.h) */
		sb = NULL;
	if (!sb) {
		err_set(&op->err, ERR_NOT_FOUND, ENOENT, "no sandbox %s", op->sbid);
		return NULL;
	}
	if (!need_agent)
		return sb;
	sandbox_touch(sb);
	/* suspending: a suspend or a snapshot under way; the request waits for the sandbox to run */
	bool resumes = sb->auto_resume;
	bool waking = (sb->state == SB_RESUMING || sb->state == SB_SUSPENDING) && resumes;
	if (resumes && (sb->state == SB_PAUSED || sb->state == SB_SUSPENDED)) {
		struct err e = { 0 };
		waking = lifecycle_start(op->d, sb, ACT_RESUME, NULL, &e) >= 0;
	}
	/* running, but its agent has not (re)connected yet, as right after a restart of spaced:
	 * wait for its hello rather than fail (spaced listens for a gVisor agent and dials a
	 * microVM's port) */
	bool connecting = sb->state == SB_RUNNING && !peer_ready(sb) && (sb->chan.listen_fd >= 0 || sb->chan.dial[0]);
	if (connecting)
		op_set_deadline(op, mono_ms() + AGENT_HELLO_TIMEOUT_MS);
	if (waking || connecting) {
		/* Transparent resume: the request waits and runs again once the sandbox runs. */
		op->deferred = true;
		op->resumed = waking;
		op->sb = sb;
		op->next = sb->deferred;
		sb->deferred = op;
		return NULL;
	}
	if (!sandbox_usable(sb, &op->err))
		return NULL;
	return sb;
}

int api_request(struct op *op, struct sandbox *sb, enum op_kind kind, uint8_t type, const void *fixed, size_t nfixed,
		const char *s1, const char *s2)
{
	struct buf b = { 0 };
	buf_put(&b, fixed, nfixed);
	if (s1)
		buf_put(&b, s1, strlen(s1) + 1);
	if (s2)
		buf_put(&b, s2, strlen(s2) + 1);
	op->kind = kind;
	if (!op->what)
		op->what = strdup(s1 ? s1 : "request");
	op_link(op, sb);
	int rc = chan_send(&sb->chan, type, op->tag, buf_head(&b), buf_avail(&b), NULL, 0);
	buf_free(&b);
	if (rc < 0) {
		op_unlink(op);
		err_set(&op->err, ERR_UNAVAILABLE, -rc, "sandbox %s: cannot reach its agent", sb->id);
		return API_DONE;
	}
	return API_PENDING;
}

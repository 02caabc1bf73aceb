/*
 * tests/fuzz/fuzz_api_body.c - request bodies through the real route
 * handlers: api_body with the real field tables of create, exec, process
 * start, signal, mkdir, rename, resume, snapshot and fork, and what the
 * handlers build from a body that passed.
 *
 * Input: byte 0 picks the handler, byte 1 the situation (sandbox known or
 * not, a running process 7 or not), the rest is the body. The sandbox is
 * running and its agent connected (harness_daemon.c); whatever spaced writes
 * to the agent is read back and checked:
 *  - a refused request has a 4xx/5xx status and a code, and sent nothing;
 *  - every frame written is whole and within SP_MAX_PAYLOAD;
 *  - an H_EXEC carries argc >= 1, argc + envc <= SP_MAX_ARGS and exactly
 *    user, cwd, argv and env as NUL-terminated strings that fill the
 *    payload, its argv equals the body's cmd (or /bin/sh -c cmd), its cwd
 *    is "" or absolute, and its env entries are KEY=VALUE with a key.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/api/http.h"
#include "daemon/core/proc.h"
#include "daemon/core/sandbox.h"
#include "harness_daemon.h"
#include "lib/frame.h"

static struct fz z;

static int (*const handlers[])(struct op *) = {
	api_sandbox_create, api_exec, api_proc_start, api_proc_signal, api_file_mkdir,
	api_file_rename, api_sandbox_resume, api_sandbox_snapshot, api_sandbox_fork,
};
#define NHANDLERS (sizeof(handlers) / sizeof(handlers[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_daemon_init(&z);
	return 0;
}

static void check_exec(const struct frame *f, json_t *body)
{
	assert(frame_need(f, sizeof(struct sp_exec)) == 0);
	uint32_t argc = frame_get_u32(f->payload + offsetof(struct sp_exec, argc));
	uint32_t envc = frame_get_u32(f->payload + offsetof(struct sp_exec, envc));
	uint32_t tmo = frame_get_u32(f->payload + offsetof(struct sp_exec, timeout_ms));
	assert(argc >= 1 && argc <= SP_MAX_ARGS && envc <= SP_MAX_ARGS - argc);
	size_t off = sizeof(struct sp_exec);
	const char *user = frame_str(f, &off);
	const char *cwd = frame_str(f, &off);
	assert(user && cwd);
	assert(cwd[0] == '\0' || cwd[0] == '/');
	json_t *cmd = json_object_get(body, "cmd");
	for (uint32_t i = 0; i < argc; i++) {
		const char *a = frame_str(f, &off);
		assert(a);
		if (json_is_array(cmd)) {
			assert(argc == json_array_size(cmd));
			assert(strcmp(a, json_string_value(json_array_get(cmd, i))) == 0);
		} else {
			static const char *sh[] = { "/bin/sh", "-c" };
			assert(argc == 3);
			assert(strcmp(a, i < 2 ? sh[i] : json_string_value(cmd)) == 0);
		}
	}
	for (uint32_t i = 0; i < envc; i++) {
		const char *e = frame_str(f, &off);
		assert(e && e[0] != '=' && strchr(e, '='));
	}
	assert(off == f->len); /* nothing after the last string */
	json_t *t = json_object_get(body, "timeout");
	if (t && json_number_value(t) > 0)
		assert(tmo >= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	unsigned which = data[0] % NHANDLERS;
	uint8_t flags = data[1];
	struct op *op = fz_op(&z, data + 2, size - 2);
	if (flags & 1)
		memcpy(op->sbid, "ffffffffffff", SANDBOX_ID_LEN);
	if (flags & 2)
		proc_get(z.sb, 7);
	op->pid = 7;

	daemon_lock(&z.d);
	int rc = handlers[which](op);
	bool refused = op->err.kind != ERR_NONE;
	if (refused) {
		assert(http_status(op->err.kind) >= 400 && http_status(op->err.kind) < 600);
		assert(err_code(op->err.kind)[0] != '\0');
	} else {
		assert(rc == API_DONE || rc == API_PENDING);
	}
	fz_op_free(op);
	daemon_unlock(&z.d);

	uint8_t *out;
	size_t n;
	fz_drain(&z, &out, &n);
	if (refused && which != 6 /* resume answers from the lifecycle stub */)
		assert(n == 0);
	json_t *body = n ? json_loadb((const char *)data + 2, size - 2, JSON_REJECT_DUPLICATES, NULL) : NULL;
	size_t pos = 0;
	while (pos < n) {
		struct frame f;
		long used = frame_parse(out + pos, n - pos, &f);
		assert(used > 0);
		if (f.type == SP_H_EXEC)
			check_exec(&f, body);
		pos += (size_t)used;
	}
	json_decref(body);
	free(out);

	daemon_lock(&z.d);
	fz_reset(&z);
	daemon_unlock(&z.d);
	return 0;
}

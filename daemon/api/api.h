/*
 * daemon/api/api.h - the HTTP API's routes and the request validation they share.
 *
 * A route's handler runs on the HTTP thread with d->lock held once the
 * request body is complete. It either answers at once (fills op->answer and
 * op->json, or op->err) and returns API_DONE, or links op to a sandbox or
 * process, and returns API_PENDING; the op is answered when op_finish runs.
 * Upload routes also get each chunk of the body as it arrives.
 */
#ifndef SPACE_DAEMON_API_H
#define SPACE_DAEMON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "daemon/core/op.h"

enum { API_DONE = 0, API_PENDING = 1 };

#define API_MAX_PATH 4096

struct route {
	const char *method;
	const char *pattern;   /* segments; ":id" a sandbox id, ":pid" a process id */
	int (*handler)(struct op *op);
	/* Upload routes: called for each body chunk (consume what fits in *size and leave
	 * the rest), then once with *size == 0 at the end. Returns API_DONE to go on or
	 * API_PENDING to wait for credit. */
	int (*upload)(struct op *op, const char *data, size_t *size);
};

/* Whether requests of route r wait on a process for as long as it runs (an exec, a process's
 * output, a wait) or on a folder (a watch): they count as streams (TENANT_MAX_STREAMS), apart
 * from other requests. */
bool api_route_waits(const struct route *r);

/*
 * Finds the route for method and url, setting op->sbid / op->pid from the
 * path. Returns the route, or NULL with op->err set (404 or 405).
 */
const struct route *api_match(struct op *op, const char *method, const char *url);

/* Field types for api_check. */
enum field_type { F_STRING, F_INT, F_NUMBER, F_BOOL, F_STRMAP, F_ARGV_OR_STRING, F_INT_OR_STRING, F_OBJECT_OR_FALSE,
		  F_STRLIST, F_ARRAY };

struct field {
	const char *name;
	enum field_type type;
};

/*
 * Parses op's body as a JSON object (an empty body is {}) into *out and checks
 * that every member is one of `fields` with the right type. Returns 0 or -EINVAL
 * with op->err set (400).
 */
int api_body(struct op *op, const struct field *fields, json_t **out);

/* Checks a sandbox path: absolute, at most API_MAX_PATH bytes, no NUL. Sets op->err. */
int api_check_path(struct op *op, const char *path, size_t len, const char *what);

/*
 * The sandbox op->sbid names; NULL with op->err set. With need_agent, the sandbox
 * must be able to take agent requests: a paused or suspended one is resumed first
 * (when auto-resume is on), and then NULL is returned with op->deferred set: the
 * handler returns and runs again once the sandbox runs. [L]
 */
struct sandbox *api_sandbox(struct op *op, bool need_agent);

/*
 * Links op (of kind) to sb and sends the agent one request frame of type on op's tag: fixed
 * (nfixed bytes), then s1 and s2, each NUL-ended, either NULL for none; op->what, unless set
 * already, is s1 (errors name it). API_PENDING, or API_DONE
 * with op->err set (503) when the agent cannot be reached. [L]
 */
int api_request(struct op *op, struct sandbox *sb, enum op_kind kind, uint8_t type, const void *fixed, size_t nfixed,
		const char *s1, const char *s2);

/*
 * Starts, as a background process of sb with its stdin open, the agent's own program with
 * argv (a JSON array of strings, argv[0] its name; SP_EXEC_AGENT), answering as a process
 * start does (201 {"pid": N}). API_PENDING, or API_DONE with op->err set. [L]
 */
int api_agent_process(struct op *op, struct sandbox *sb, json_t *argv);

int api_health(struct op *op);
int api_version(struct op *op);
int api_system_df(struct op *op);
int api_system_prune(struct op *op);
int api_templates(struct op *op);
int api_template_get(struct op *op);
/* api_volumes.c */
int api_volume_create(struct op *op);
int api_volume_list(struct op *op);
int api_volume_get(struct op *op);
int api_volume_delete(struct op *op);
int api_template_build(struct op *op);
int api_template_build_upload(struct op *op, const char *data, size_t *size);
int api_template_put(struct op *op);
int api_template_delete(struct op *op);
int api_template_build_cancel(struct op *op);
int api_sandbox_create(struct op *op);
int api_sandbox_list(struct op *op);
int api_sandbox_get(struct op *op);
int api_sandbox_metrics(struct op *op);
int api_sandbox_delete(struct op *op);
int api_sandbox_pause(struct op *op);
int api_sandbox_resume(struct op *op);
int api_sandbox_suspend(struct op *op);
int api_sandbox_sync(struct op *op);
int api_sandbox_timeout(struct op *op);
int api_sandbox_network(struct op *op);
int api_sandbox_snapshot(struct op *op);
int api_sandbox_fork(struct op *op);
int api_snapshot_list(struct op *op);
int api_snapshot_get(struct op *op);
int api_snapshot_delete(struct op *op);
int api_exec(struct op *op);
int api_proc_start(struct op *op);
int api_proc_list(struct op *op);
int api_proc_get(struct op *op);
int api_proc_output(struct op *op);
int api_proc_stdin(struct op *op);
int api_proc_stdin_upload(struct op *op, const char *data, size_t *size);
int api_proc_stdin_close(struct op *op);
int api_proc_signal(struct op *op);
int api_proc_resize(struct op *op);
int api_proc_wait(struct op *op);
int api_file_read(struct op *op);
int api_file_write(struct op *op);
int api_file_write_upload(struct op *op, const char *data, size_t *size);
int api_file_stat(struct op *op);
int api_file_list(struct op *op);
int api_file_mkdir(struct op *op);
int api_file_remove(struct op *op);
int api_file_rename(struct op *op);
int api_file_watch(struct op *op);
int api_port_list(struct op *op);
int api_port_connect(struct op *op);

/* GET /metrics and the figures kept of every request (api_metrics.c, core/stats.h). */
int api_metrics(struct op *op);
/* Monotonic nanoseconds: a request's arrived_ns. */
int64_t api_metrics_now_ns(void);
/* A request ends (answered or left): counts what it was, how long it took and the bytes it moved. */
void api_metrics_done(struct op *op);
/* The answer of a request with a content_type: its out bytes, of that type. */
struct MHD_Response;
struct MHD_Response *api_text_response(struct op *op);

#endif

/*
 * cli/stream.h - show a sandbox process's output as it happens.
 *
 * Reads an NDJSON output stream (docs/api.md: start, stdout, stderr, exit,
 * error), writes stdout/stderr bytes to our fds 1 and 2 in arrival order
 * (decoding data_b64 chunks), and forwards signals caught by sigfwd (when the
 * caller installed it) to the process: the first SIGINT as SIGINT, the second
 * as SIGKILL, a third gives up waiting; SIGTERM and SIGHUP as themselves.
 * If our stdout is a closed pipe, the process gets SIGPIPE and the rest of
 * its stdout is discarded, as in a local pipeline.
 *
 * Both functions return 0 and set *exit_code (the API's exit_code: 128 + n
 * for a signal) once the exit event arrived; -ECANCELED when the user gave
 * up; -EREMOTEIO for an API error answer or an error event (err->status is 0
 * for an event); -EPROTO if the stream ended without an exit event; or the
 * other errors of client_stream(). err is filled for all but -ECANCELED.
 */
#ifndef SPACE_CLI_STREAM_H
#define SPACE_CLI_STREAM_H

#include <jansson.h>

#include "lib/client/client.h"

/* POST /v1/sandboxes/{id}/exec with body plus "stream": true. */
int stream_exec(struct client *c, const char *id, json_t *body, int *exit_code,
		struct client_err *err);

/* GET /v1/sandboxes/{id}/processes/{pid}/output. */
int stream_output(struct client *c, const char *id, long pid, int *exit_code,
		  struct client_err *err);

/* Sends signal sig to process pid of sandbox id. Returns as client_request. */
int stream_signal(struct client *c, const char *id, long pid, int sig, struct client_err *err);

#endif

/*
 * tests/fuzz/harness_daemon.h - a daemon with one running sandbox whose
 * agent is the other end of a socketpair, for the daemon-side fuzz targets.
 *
 * fz_daemon_init() builds it once; the sandbox is `FZ_SANDBOX_ID`, running,
 * its agent connected and past hello. fz_drain() reads what spaced wrote to
 * the agent (frames the targets then check); fz_reset() puts the sandbox
 * back as it was between inputs: no processes, no requests, empty queues.
 */
#ifndef SPACE_TESTS_FUZZ_HARNESS_DAEMON_H
#define SPACE_TESTS_FUZZ_HARNESS_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "daemon/core/op.h"

#define FZ_SANDBOX_ID "0123456789ab"

struct fz {
	struct daemon d;
	struct sandbox *sb;
	int agent_fd;        /* the agent's end of the socketpair */
};

void fz_daemon_init(struct fz *z);

/* Reads everything spaced has written to the agent so far into *out (malloc'd, *n bytes). */
void fz_drain(struct fz *z, uint8_t **out, size_t *n);

/* Frees every process record, request and queued byte of the sandbox; keeps it connected. */
void fz_reset(struct fz *z);

/* A fresh request for the sandbox, with `body` as its body. */
struct op *fz_op(struct fz *z, const uint8_t *body, size_t n);

/* Unlinks and frees op. */
void fz_op_free(struct op *op);

#endif

/*
 * daemon/core/op_private.h - what the files of the op module share and no one else uses:
 * writing lines to a request's client stream and the captured-output budget it counts
 * against. The module's contract is op.h.
 */
#ifndef SPACE_DAEMON_OP_PRIVATE_H
#define SPACE_DAEMON_OP_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct op;

/* Appends one line to the client stream; `raw` output bytes ride on it for credit. [L] */
void op_emit(struct op *op, const char *line, size_t n, uint32_t raw);
/* Appends ev (taken) as one NDJSON line to the client stream. [L] */
void op_emit_json(struct op *op, json_t *ev);
/* The captured-output budget of op's tenant: the administrator's own, or its tenant's while it
 * has requests in flight (this one among them); NULL if the tenant is unknown. [L] */
uint64_t *capture_budget(struct op *op);

#endif

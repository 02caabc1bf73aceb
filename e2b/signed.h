/*
 * e2b/signed.h - E2B's signed file URLs (signed.c, docs/e2b.md "Signed URLs"): a GET or POST
 * /files with a `signature` and no E2b-Sandbox-Id, whose sandbox is the one whose access token
 * made the signature.
 */
#ifndef SPACE_E2B_SIGNED_H
#define SPACE_E2B_SIGNED_H

#include <stdbool.h>

#include "e2b/gateway.h"

#define SIGNED_MAX 64 /* bytes of a signature: "v1_", 43 of base64, its NUL */

/* Whether r is a signed /files request. */
bool signed_is(struct req *r);
/* The checks of a signed request's head, before any of its body is read: true with
 * r->signed_sbid its sandbox (whose plane then admits it as envd_admit does); false with the
 * refusal queued in *rc (401 for a signature no sandbox made or one expired). */
bool signed_admit(struct req *r, enum MHD_Result *rc);

#endif

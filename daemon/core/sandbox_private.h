/*
 * daemon/core/sandbox_private.h - what the sandbox module's files share among themselves and
 * no one else uses: the registry's list and its ids, the reason a kind cannot run here, failing a
 * sandbox's requests, tokens and a template's defaults. The module's contract is sandbox.h.
 */
#ifndef SPACE_DAEMON_SANDBOX_PRIVATE_H
#define SPACE_DAEMON_SANDBOX_PRIVATE_H

#include <stddef.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

/* sandbox.c */

/* Why this host cannot run sb's kind (sandbox_driver is NULL). */
const char *sandbox_unrunnable_why(struct daemon *d, const struct sandbox *sb);
/* Fills *e for sb, whose kind this host cannot run. Returns -ENOTSUP. */
int sandbox_unrunnable(struct daemon *d, const struct sandbox *sb, struct err *e);
/* n/2 random bytes as n hex characters and a NUL (n at most SANDBOX_TOKEN_LEN). 0 or -EIO. */
int sandbox_random_hex(char *out, size_t n);
/* Writes into out a random id that no sandbox of d's registry has. 0 or -EIO (no randomness). [L] */
int sandbox_registry_pick_id(struct daemon *d, char out[SANDBOX_ID_LEN + 1]);
/* Adds sb to the end of d's list of sandboxes. [L] */
void sandbox_registry_add(struct daemon *d, struct sandbox *sb);
/* Takes sb out of d's list of sandboxes, if it is there. [L] */
void sandbox_registry_remove(struct daemon *d, struct sandbox *sb);
/* Fails every request linked to sb or its processes. [L] */
void sandbox_fail_all(struct sandbox *sb, const struct err *e);

/* sandbox_create.c */

/* The defaults a process of sb gets from its template's config (store_put_template): the
 * image's working folder (an absolute path) and its user ("UID:GID", numbers). */
void sandbox_take_defaults(struct sandbox *sb, const json_t *tpl);

#endif

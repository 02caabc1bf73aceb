/*
 * daemon/core/isolation.h - the isolation kinds a sandbox can have, and the
 * driver that runs each kind on this host.
 *
 * A kind is named after the driver that runs it ("gvisor", "microvm"), and a
 * sandbox (and a snapshot, whose image only its own kind can restore) keeps
 * its kind for life. isolation_init sets up every kind once at start, before
 * any thread runs: a kind whose driver this spaced lacks, or whose init
 * failed, is unavailable, with the reason kept for errors and /v1/version.
 * The table is only read after, so none of these takes d->lock.
 */
#ifndef SPACE_DAEMON_ISOLATION_H
#define SPACE_DAEMON_ISOLATION_H

#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define ISOLATION_DEFAULT "gvisor"

/* The slot of the kind called name, or NULL if no kind is called so. */
const struct driver_slot *isolation_find(struct daemon *d, const char *name);

/* The driver called name, or NULL: driver_find (driver/driver.h). */
typedef const struct driver_ops *(*isolation_finder)(const char *name);

/*
 * Initialises the driver of every kind (find(kind)) and makes deflt the default of creates.
 * Each kind that cannot run here is logged once with the reason and stays unavailable,
 * unless it is the default: then this fails. Returns 0 or -errno with *e filled (an
 * unknown deflt: -EINVAL).
 */
int isolation_init(struct daemon *d, const char *deflt, isolation_finder find, struct err *e);

/*
 * The slot a create may use for the kind called name (NULL: the default). Unknown: 400
 * invalid_argument naming the kinds; known but unavailable here: 400 isolation_unavailable
 * with the reason. Returns the slot, or NULL with *e filled.
 */
const struct driver_slot *isolation_pick(struct daemon *d, const char *name, struct err *e);

/* {"default": KIND, "available": {KIND: runtime or null...}, "unavailable": {KIND: why...}} */
json_t *isolation_json(struct daemon *d);

#endif

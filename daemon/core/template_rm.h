/*
 * daemon/core/template_rm.h - removing a template (DELETE /v1/templates/:name).
 *
 * A template is removed only while nothing starts from it: no sandbox of this spaced, in any
 * state, and no snapshot (409 says how many of each), and never the default one. Its record
 * goes at once, with the lock held, so no create that follows can find it; its files go in a
 * job after (template_release: once no state dir on the machine uses them).
 */
#ifndef SPACE_DAEMON_TEMPLATE_RM_H
#define SPACE_DAEMON_TEMPLATE_RM_H

#include "daemon/daemon.h"
#include "lib/host/err.h"

struct op;

/* How many sandboxes of d start from template name. [L] */
int template_sandboxes(struct daemon *d, const char *name);

/* Removes template name, answering op (204) when its files are gone. 0, or -errno with e
 * filled (404, 409, 500). [L] */
int template_remove(struct daemon *d, const char *name, struct op *op, struct err *e);

#endif

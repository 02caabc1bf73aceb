/*
 * e2b/shape.h - E2B's shapes of spaced's things, shared by the control plane's handlers
 * (control.c, snapshots.c, templates.c, builds.c, metrics.c) and the sandbox plane (envd.c):
 * names of templates and states both ways, the Sandbox object, and a request's JSON body and
 * its "timeout". Nothing here asks spaced or answers a request.
 */
#ifndef SPACE_E2B_SHAPE_H
#define SPACE_E2B_SHAPE_H

#include "e2b/gateway.h"

#define SHAPE_TIMEOUT_MAX_S 86400 /* a "timeout" spaced takes, at most */

/* spaced's name for E2B's template name ("base" is "default"; NULL is "default"). */
const char *shape_template(const char *e2b);
/* E2B's name for spaced's template ("default" is "base"; NULL is ""). */
const char *shape_e2b_template(const char *space);
/* E2B's state ("running", "paused") of a spaced state, or NULL for one E2B does not show. */
const char *shape_state(const char *space_state);
/* The sandboxes' domain: spaced's port proxy's, or JSON null without one (gateway.h). */
json_t *shape_domain(const struct req *r);
/* The Sandbox object E2B's create, connect and fork answer for spaced's sandbox sb. */
json_t *shape_sandbox(const struct req *r, const json_t *sb);
/* The request's JSON body: an object (an empty body is {}), or NULL when it is not one. */
json_t *shape_body(struct req *r);
/* The seconds of b's "timeout": def when absent or null; -1 when it is not a whole number
 * 1..SHAPE_TIMEOUT_MAX_S. */
long shape_timeout(const json_t *b, long def);

#endif

/*
 * agent/dispatch.h - routes each incoming frame to its handler by type.
 */
#ifndef SPACE_AGENT_DISPATCH_H
#define SPACE_AGENT_DISPATCH_H

#include "../lib/frame.h"

struct agent;

/*
 * Checks the frame's size against its message and runs the handler.
 * Returns 0, or -EPROTO when the connection must be closed.
 */
int dispatch_frame(struct agent *a, const struct frame *f);

/* The connection's hooks (conn.h) into the agent's handlers: frames to dispatch_frame, the
 * hello's highest pid and a new connection to the process table, an ended connection's
 * transfers and watches abandoned. */
extern const struct conn_hooks dispatch_hooks;

#endif

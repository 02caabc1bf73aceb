/*
 * agent/ports.h - the TCP ports listening inside the sandbox (H_PORTS).
 *
 * The agent reads the sandbox kernel's socket tables, /proc/net/tcp and
 * /proc/net/tcp6 (gVisor's and a microVM's Linux kernel write the same
 * format), and answers with one A_PORT for every socket in the LISTEN state,
 * at most SP_PORTS_MAX, no two alike, then A_END. The parser takes one line
 * at a time and is pure, so the unit tests and the fuzz target reach it
 * without a kernel.
 */
#ifndef SPACE_AGENT_PORTS_H
#define SPACE_AGENT_PORTS_H

#include <stddef.h>

#include "lib/frame.h"
#include "proto/agent.h"

struct agent;

#define PORTS_LINE_MAX 512u /* longer lines of a socket table are not socket entries */

/*
 * One line of /proc/net/tcp (family SP_FAMILY_IPV4) or /proc/net/tcp6 (SP_FAMILY_IPV6), len
 * bytes, not necessarily NUL-terminated. Returns 1 and fills *out for a listening socket, 0 for
 * any other socket or the header line, -EINVAL for a line that is neither.
 */
int ports_parse_line(const char *line, size_t len, unsigned family, struct sp_port *out);

/* H_PORTS: the listening sockets as A_PORT frames, then A_END (A_ERROR when neither table can
 * be read). Returns 0, or -ENOMEM when the answer could not be queued. */
int ports_list(struct agent *a, const struct frame *f);

#endif

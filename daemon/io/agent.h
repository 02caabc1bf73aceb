/*
 * daemon/io/agent.h - spaced's side of the agent channel (proto/agent.h).
 *
 * One I/O thread owns every agent socket in one epoll set: it accepts the
 * agent's connection on the sandbox's listening socket, reads frames and
 * dispatches them to the ops and processes they belong to, and writes the
 * queued frames out. Other threads queue frames with agent_send (with
 * d->lock held); the I/O thread does the rest.
 */
#ifndef SPACE_DAEMON_AGENT_H
#define SPACE_DAEMON_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

/* Starts the I/O thread. Returns 0 or -errno. */
int agent_start(struct daemon *d);
/* Stops the I/O thread (at shutdown). */
void agent_stop(struct daemon *d);

/*
 * Creates the sandbox's listening socket <dir>/sock/agent.sock (replacing a
 * stale one) and adds it to the I/O thread. Returns 0 or -errno.
 */
int agent_listen(struct daemon *d, struct sandbox *sb);

/*
 * Queues one frame: header, then `a` (na bytes), then `b` (nb bytes) as its
 * payload. Returns 0, -ENOTCONN when the agent is not connected, -E2BIG past
 * SP_MAX_PAYLOAD. [L]
 */
int agent_send(struct daemon *d, struct sandbox *sb, uint8_t type, uint32_t chan,
	       const void *a, size_t na, const void *b, size_t nb);

/* Stops listening for sb's agent and removes the socket: nothing can connect. [L] */
void agent_unlisten(struct daemon *d, struct sandbox *sb);

/*
 * Stops listening and asks the agent to close its connection (H_DETACH); the
 * connection's end broadcasts d->cond. Returns 0 or -ENOTCONN. [L]
 */
int agent_detach(struct daemon *d, struct sandbox *sb);

/* Returns credit for `bytes` of output to the agent. [L] */
void agent_credit(struct daemon *d, struct sandbox *sb, uint32_t chan, uint32_t bytes);

/* Looks a process up by pid, creating its record when create is set. [L] */
struct proc *agent_proc(struct sandbox *sb, uint32_t pid, bool create);

/* Sets up sb's channel as unconnected (no sockets yet). */
void agent_chan_init(struct sandbox *sb);

/*
 * Hands sb to the I/O thread for closing and freeing: sb must already be out
 * of the registry with every op unlinked. [L]
 */
void agent_bury(struct daemon *d, struct sandbox *sb);

#endif

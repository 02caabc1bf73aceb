/*
 * daemon/core/peer.h - spaced's side of the agent protocol: the table of
 * messages an agent may send (checked by the transport, io/chan.h, before a
 * handler runs) and what each does to the sandbox, its processes and the
 * requests waiting on it.
 *
 * The peer is untrusted: any process inside the sandbox can take the agent's
 * place on its socket. So a connection says hello once; process records come
 * only with a listing spaced asked for, and count against
 * SANDBOX_MAX_PROCS_TRACKED; output, downloads and listings travel against the
 * credit spaced granted (per pid or request tag), and credit the agent grants
 * back is capped at one window; listing entries must be single names. A
 * breach drops the connection, and the real agent, which retries every
 * SP_AGENT_RETRY_MS, takes it back. Everything here runs with d->lock held.
 */
#ifndef SPACE_DAEMON_CORE_PEER_H
#define SPACE_DAEMON_CORE_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define PEER_TAG_HELLO_PS (SP_CHAN_REQ | AGENT_TAG_HELLO_PS)
#define PEER_TAG_PING (SP_CHAN_REQ | AGENT_TAG_PING)
#define PEER_TAG_CLOCK (SP_CHAN_REQ | AGENT_TAG_CLOCK)

/* The table the transport checks frames against (exposed for tests and fuzzing). */
extern const struct chan_proto peer_proto;

/*
 * What the peer layer tells the layers above, through this table (d->peer_events) rather than
 * by calling them: each runs with d->lock held and may be NULL.
 */
struct peer_events {
	void (*ready)(struct daemon *d, struct sandbox *sb);        /* listing in: requests may go */
	void (*lost)(struct daemon *d, struct sandbox *sb);         /* dropped unasked while running */
	void (*probe)(struct daemon *d, struct sandbox *sb);        /* look at PID 1 from the host */
	void (*unresponsive)(struct daemon *d, struct sandbox *sb); /* a ping went unanswered */
};

/* Sets sb's channel up, unconnected, speaking peer_proto. */
void peer_init(struct sandbox *sb);
/* Listens for sb's agent on <dir>/sock/agent.sock. Returns 0 or -errno. */
int peer_listen(struct daemon *d, struct sandbox *sb);
/* Stops listening and removes the socket: nothing can connect. */
void peer_unlisten(struct sandbox *sb);
/* Stops listening and asks the agent to close its connection (H_DETACH). 0 or -ENOTCONN; 1
 * for a channel that dials (a microVM's), which asks nothing and ends with the runtime. */
int peer_detach(struct sandbox *sb);
/* Sends a request (a + b as its payload) to sb's ready agent and waits for its A_OK or
 * A_ERROR, releasing d->lock meanwhile, up to timeout_ms; `what` names it in the error
 * ("sync inside"). Returns 0 or -errno with e. [L] */
int peer_request(struct daemon *d, struct sandbox *sb, const char *what, uint8_t type, const void *a, size_t na,
		 const void *b, size_t nb, int timeout_ms, struct err *e);
/* Whether sb's agent said hello and its process listing is in: requests may go to it. */
bool peer_ready(const struct sandbox *sb);
/* Whether a request or a client waits on sb: a request for its agent (a folder watch among
 * them), or a reader (exec stream, output stream, capture), waiter or stdin writer of one of
 * its running processes. */
bool peer_awaited(const struct sandbox *sb);

/*
 * Once a second: clients that left are let go, silent streams get a keepalive, and an agent
 * someone waits on is pinged when silent and looked at from the host every AGENT_PROBE_MS.
 */
void peer_tick(struct daemon *d, struct sandbox *sb, int64_t now);

/* Gives the agent of a microVM (one whose hello named SP_FEATURE_CLOCK) the host's wall clock,
 * as H_CLOCK on PEER_TAG_CLOCK: after every hello (a guest restored from an image wakes up at
 * the time the image was made) and after a pause ends (QEMU stopped its clock meanwhile). Does
 * nothing for other agents or without a connection; a refusal is logged. [L] */
void peer_send_clock(struct sandbox *sb);

#endif

/*
 * agent/connect.h - `space-agent --connect PORT`: one TCP connection made
 * inside the sandbox, relayed over standard input and output.
 *
 * spaced starts it as a process of the sandbox (H_EXEC with SP_EXEC_AGENT
 * and SP_EXEC_STDIN): what the host writes to its stdin goes to the port, what
 * the port sends comes out on its stdout, through the same credit and
 * back-pressure as any process's output. It connects to 127.0.0.1:PORT, and to
 * [::1]:PORT when nothing listens there, which reaches a server bound to
 * 0.0.0.0, ::, or loopback. At the end of its stdin it shuts its side of the
 * connection (the server sees the end of the request); when the server closes
 * the connection it exits 0. A port nothing listens on is exit status 1 with
 * the reason on stderr.
 */
#ifndef SPACE_AGENT_CONNECT_H
#define SPACE_AGENT_CONNECT_H

#define CONNECT_ARG "--connect"
#define CONNECT_CHUNK (64u * 1024u) /* bytes relayed per read */

/* The whole program: returns its exit status. */
int connect_main(const char *port);

#define RELAY_ARG "--relay"
#define RELAY_HELLO_TIMEOUT_S 10 /* for a relay connection's port to arrive */
#define RELAY_BACKLOG 64

/* The relay of SP_RELAY_PORT (proto/agent.h): the agent's loop holds its listening socket
 * (non-blocking), so a sandbox's start pays for no process; each connection gets one,
 * `space-agent --relay` with the connection as its stdin, which carries no state of the
 * agent's. relay_listen returns the socket, or -errno (no network address to listen on). */
int relay_listen(void);
int relay_main(void);

#endif

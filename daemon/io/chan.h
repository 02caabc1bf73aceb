/*
 * daemon/io/chan.h - the agent channel as a transport: one listening Unix
 * socket per sandbox, at most one connection on it, carrying the frames of
 * proto/agent.h in both directions without ever blocking.
 *
 * Whatever connects is inside the sandbox, so nothing read here is trusted.
 * Each frame is handed to the layer above through a table it gives
 * (struct chan_proto), the way agent/dispatch.c routes frames on the other
 * side; before a handler runs the transport has checked the header
 * (lib/frame.c), found the message in the table, checked that its payload
 * holds at least the message's fixed part, and that the connection is in a
 * phase the message is allowed in. A frame that fails any check, or a handler
 * that returns an error, drops the connection with the reason.
 *
 * What is written is bounded as well: bytes the peer has not taken are
 * capped at CHAN_MAX_QUEUE, past which the connection is dropped, so a peer
 * that stops reading cannot make spaced hold more. Credit returns (H_CREDIT)
 * for the same channel that are still queued merge into one frame.
 *
 * A microVM's channel runs the other way (chan_dial): QEMU holds the listening
 * socket of the guest's virtio-serial port, spaced connects to it, and since
 * the port has no connections of its own, spaced opens each one with H_OPEN
 * and drops every byte before the agent's A_OPEN carrying the same nonce
 * (docs/agent-protocol.md, "The virtio-serial port"). The exception is the
 * connection after a suspend of the whole VM (chan_keep_tail): the guest's
 * port may still hold frames the agent counted as sent when QEMU stopped, and
 * QEMU passes them on, after the restore, ahead of the A_OPEN. They are the
 * rest of the connection that ended, so they are read on from where it ended.
 *
 * Locking: the owner serialises every call (spaced holds d->lock); reading
 * happens on the I/O thread only. The transport never calls the layer above
 * except through the table, and never frees anything of it.
 */
#ifndef SPACE_DAEMON_IO_CHAN_H
#define SPACE_DAEMON_IO_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/io/loop.h"
#include "lib/buf.h"
#include "lib/frame.h"

#define CHAN_MAX_QUEUE (4u * 1024u * 1024u) /* bytes queued for one peer that it has not read */
#define CHAN_DATA_ROOM (1024u * 1024u)      /* bulk data (uploads, stdin) waits while more is queued */
#define CHAN_MAX_WHY 128

/* Where a connection is in its life: a message is allowed in a set of phases. */
enum chan_phase {
	CHAN_DOWN = 0,    /* no connection */
	CHAN_OPEN = 1,    /* connected, no hello yet */
	CHAN_GREETED = 2, /* the hello was taken; the upper layer moves it on (chan_advance) */
	CHAN_READY = 3,   /* in service */
	CHAN_TAIL = 4,    /* the rest of a connection a suspend ended, read before the next A_OPEN */
};
#define CHAN_IN(p) (1u << (p))

/* One row of the handler table: a message the peer may send. */
struct chan_msg {
	uint8_t type;
	uint32_t min_len; /* its fixed part; a shorter payload is a protocol error */
	unsigned phases;  /* CHAN_IN() of every phase it is allowed in */
	/* Handles one frame; returns 0, or a negative errno to drop the connection, after which
	 * *why (CHAN_MAX_WHY bytes) says why if the handler filled it. */
	int (*fn)(void *ctx, const struct frame *f, char *why);
};

struct chan_proto {
	const struct chan_msg *msgs;
	size_t nmsgs;
	/* The connection ended; why is NULL when the peer closed it, else the reason spaced
	 * dropped it. Called with the owner's lock held; c->phase is already CHAN_DOWN. */
	void (*dropped)(void *ctx, const char *why);
	/* The write queue, having passed CHAN_DATA_ROOM, fell below it: bulk data may go on. */
	void (*drained)(void *ctx);
};

struct chan {
	int listen_fd;
	int fd;                     /* -1 while nobody is connected */
	enum chan_phase phase;
	struct buf rbuf;            /* bytes read, not yet a whole frame */
	struct buf wq;              /* bytes waiting to be written */
	bool credit_tail;           /* the last queued frame is an H_CREDIT not yet begun to be sent */
	uint32_t credit_chan;       /* ... for this channel */
	bool broken;                /* the connection is being dropped (why says why) */
	bool high;                  /* the queue passed CHAN_DATA_ROOM: call drained below it */
	bool want_out;              /* EPOLLOUT armed */
	int64_t last_rx_ms;         /* monotonic time the peer last sent anything */
	char why[CHAN_MAX_WHY];     /* why the last connection was dropped ("" when the peer closed) */
	char dial[108];             /* chan_dial: the peer's socket, connected to again after a drop */
	bool opening;               /* H_OPEN sent; what comes before the peer's A_OPEN is dropped */
	int64_t open_ms;            /* ... since this monotonic time */
	uint64_t nonce;             /* ... the nonce that A_OPEN must carry */
	bool keep_tail;             /* the connection's end is a suspend: keep what it left unparsed */
	bool tail_live;             /* tail is the ended connection's, read on until the next A_OPEN */
	struct buf tail;            /* ... its unparsed bytes: at most one partial frame */
	const struct chan_proto *proto;
	void *ctx;
	struct loop *loop;
	struct loop_src lsrc, csrc; /* the listening socket and the connection in the loop */
};

/* Sets c up unconnected, with the table and context its frames go to. */
void chan_init(struct chan *c, const struct chan_proto *proto, void *ctx);

/* Listens on the Unix socket `path` (replacing a stale one) in loop l. Returns 0 or -errno. */
int chan_listen(struct chan *c, struct loop *l, const char *path);
/* Connects to the peer's listening socket at path and opens the connection with H_OPEN (see
 * above); after a drop, chan_redial connects again. Returns 0, or -errno when path is too
 * long; a peer not there yet is no error (the next chan_redial tries again). */
int chan_dial(struct chan *c, struct loop *l, const char *path);
/* For a channel that dials: connects again if it has no connection. Returns whether it has one. */
bool chan_redial(struct chan *c);
/* Says whether the current connection of a channel that dials ends with a suspend of the VM
 * behind it (chan_dial again undoes it for a connection that outlived a suspend refused): if so, the bytes it leaves unparsed and those before the next connection's A_OPEN
 * are read as its rest, and the messages allowed in CHAN_TAIL among them are handled (the
 * output the guest's port held when QEMU stopped). Undone by the next A_OPEN, or by false. */
void chan_keep_tail(struct chan *c, bool keep);
/* Whether c's H_OPEN has gone unanswered for ms or more at now. */
bool chan_open_overdue(const struct chan *c, int64_t now, int ms);
/* Stops listening and removes the socket file `path`: nothing can connect any more. A channel
 * that dials forgets its peer's socket instead (path is the peer's and stays). */
void chan_unlisten(struct chan *c, const char *path);

/*
 * Queues one frame whose payload is `a` (na bytes) then `b` (nb bytes). Returns 0, -ENOTCONN
 * when no connection is in the READY phase, -E2BIG past SP_MAX_PAYLOAD, or -ENOBUFS when the
 * queue would pass CHAN_MAX_QUEUE: then the connection is shut down, and the reader drops it
 * (proto->dropped runs from the I/O thread, never from inside chan_send).
 */
int chan_send(struct chan *c, uint8_t type, uint32_t chan, const void *a, size_t na, const void *b,
	      size_t nb);
/* chan_send in the GREETED phase as well (what a hello is answered with). */
int chan_send_early(struct chan *c, uint8_t type, uint32_t chan, const void *a, size_t na);
/* Returns `bytes` of credit for channel `chan` (a pid or a tag); merges with a queued return. */
int chan_credit(struct chan *c, uint32_t chan, uint32_t bytes);

/* Moves the connection to phase p (GREETED -> READY once the hello's work is done). */
void chan_advance(struct chan *c, enum chan_phase p);
/* Whether a connection is in service. */
static inline bool chan_ready(const struct chan *c) { return c->fd >= 0 && c->phase == CHAN_READY; }
/* Bytes queued that the peer has not taken. */
static inline size_t chan_queued(const struct chan *c) { return buf_avail(&c->wq); }
/* Whether bulk data of n bytes may be queued now; if not, proto->drained says when. */
bool chan_data_room(struct chan *c, size_t n);

/* Drops the connection (if any) with the reason, calling proto->dropped. */
void chan_drop(struct chan *c, const char *why);
/* Closes everything without calling the upper layer (the owner is being freed). */
void chan_close(struct chan *c);

/* The table row for a message type, or NULL. Exposed for tests. */
const struct chan_msg *chan_lookup(const struct chan_proto *p, uint8_t type);
/*
 * Checks and hands one parsed frame to its handler, as the reader does. Returns 0, or a negative
 * errno with why filled when the frame is refused (the caller drops the connection).
 */
int chan_dispatch(struct chan *c, const struct frame *f, char *why);

#endif

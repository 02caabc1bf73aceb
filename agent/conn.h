/*
 * agent/conn.h - the agent's connection to spaced and its outgoing queue.
 *
 * The connection runs over a transport (struct conn_transport): a host Unix
 * socket the agent connects to (conn_unix: SP_AGENT_SOCK or $SPACE_AGENT_SOCK,
 * the gVisor sandbox), or a microVM's virtio-serial port (vport_transport,
 * agent/vport.h). A connection starts with the agent's A_HELLO, or, on a
 * transport without connections of its own, when the host sends H_OPEN (then
 * A_OPEN and A_HELLO go first). H_OPEN on a running connection starts it over
 * in place, on any transport. The agent queues every outgoing frame in one
 * FIFO, so frames leave in the order they were made (a process's A_EXIT after
 * all its output). When the connection drops, the agent retries every
 * SP_AGENT_RETRY_MS, forever. Frames of processes survive a drop: a frame
 * written only in part is sent again from its start on the next connection.
 * Answers to requests (channels with SP_CHAN_REQ) and credit returns belong to
 * the connection that asked and are dropped with it.
 */
#ifndef SPACE_AGENT_CONN_H
#define SPACE_AGENT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct agent;
struct frame;
struct pollset;
struct proc;

/* Queued bytes of control frames (everything but output, download data and events)
 * above which the agent stops reading requests: a host that does not read
 * its answers is back-pressured instead of growing the queue. */
#define AGENT_CTRL_MAX (256u * 1024u)

/* How long H_DETACH may take to write out the queue before closing anyway. */
#define AGENT_DETACH_FLUSH_MS 10000u
/* How long the agent, ending a connection on the serial port itself, waits for the host to
 * read what it queued and the end's A_OPEN (say_ended in conn.c). */
#define AGENT_END_FLUSH_MS 1000u
/* After a detach the sandbox is about to be checkpointed, and the agent's next attempts happen
 * right after its restore: those retry quickly, so a resumed sandbox is reachable sooner. Time
 * frozen in the image does not use them up. */
#define AGENT_RETRY_FAST_MS 20u
#define AGENT_FAST_RETRIES 100u

struct conn;

/*
 * How the agent reaches the host. Every call is non-blocking.
 */
struct conn_transport {
	const char *kind; /* for the log: "unix socket", "virtio-serial port" */
	/* The transport cannot tell connections apart (the serial port): a connection starts
	 * when the host sends H_OPEN, and until then the agent writes nothing and takes no
	 * other frame. Otherwise it starts with the agent's A_HELLO when open succeeds. */
	bool host_opens;
	/* A descriptor of a new connection (O_CLOEXEC, O_NONBLOCK), or -errno when no host
	 * can be reached now (tried again SP_AGENT_RETRY_MS later). */
	int (*reach)(struct conn *c);
	/* Ends the connection on c->fd. host_gone: the host hung up (end of file). */
	void (*end)(struct conn *c, bool host_gone);
	/* As sendmsg/writev and recv/read on the connection's descriptor. */
	ssize_t (*send)(int fd, const struct iovec *iov, int n);
	ssize_t (*recv)(int fd, void *buf, size_t n);
};

/* The host Unix socket at conn.where: connect(2) per connection, close(2) to end it. */
extern const struct conn_transport conn_unix;

struct outframe {
	struct outframe *next;
	struct proc *owner; /* output counted in owner->queued, or NULL */
	uint32_t size;      /* header + payload */
	uint8_t bytes[];
};

/*
 * What the connection calls in the layers above it, given at conn_init (dispatch.h's
 * dispatch_hooks): the connection is their transport and never names them.
 */
struct conn_hooks {
	/* A whole frame from the host; -EPROTO closes the connection (dispatch_frame). */
	int (*frame)(struct agent *a, const struct frame *f);
	/* The highest pid the agent has run, said in every hello. */
	uint32_t (*max_pid)(const struct agent *a);
	/* A connection began: its hello is queued, credit starts afresh. */
	void (*begun)(struct agent *a);
	/* A connection ended: what belonged to it (transfers, watches) goes. */
	void (*ended)(struct agent *a);
};

struct conn {
	const struct conn_transport *t;
	const struct conn_hooks *up; /* the layers above (borrowed) */
	const char *where;         /* the transport's address: socket path, port name */
	int fd;                    /* -1 while disconnected */
	int dev_fd;                /* a transport's own descriptor kept across connections, or -1 */
	bool awaiting_open;        /* fd is up, but the host has not sent H_OPEN yet (host_opens) */
	uint64_t generation;       /* number of connections made so far */
	uint64_t retry_at;         /* monotonic ms of the next connect attempt */
	unsigned fast_retries;     /* attempts left at AGENT_RETRY_FAST_MS (after a detach) */
	struct outframe *head, *tail;
	size_t head_off;           /* bytes of head already written */
	size_t ctrl_bytes;         /* queued bytes of control frames */
	uint8_t *in;               /* SP_HDR_SIZE + SP_MAX_PAYLOAD bytes */
	size_t in_len;
};

/* Allocates buffers; t, where and up are borrowed. Connection attempts start at conn_tick. */
int conn_init(struct agent *a, const struct conn_transport *t, const char *where, const struct conn_hooks *up);

/* Connects when disconnected and the retry time has come. */
void conn_tick(struct agent *a, uint64_t now);

/* The transport signalled that a host may have come back (SIGIO from the serial port):
 * the next attempt is now instead of at the retry period's end. */
void conn_host_back(struct agent *a);

/* Monotonic ms when conn_tick wants to run next, or UINT64_MAX. */
uint64_t conn_deadline(const struct agent *a);

/* Adds the socket to the loop's poll set (if connected). */
void conn_watch(struct agent *a, struct pollset *ps);

/* Writes what the socket takes now without blocking; drops the connection on error. */
void conn_flush(struct agent *a);

bool conn_up(const struct agent *a);

/* True while control frames may still be queued without back-pressure. */
bool conn_has_room(const struct agent *a);

/*
 * Queues a frame whose payload is `fixed` (nfixed bytes) followed, if str
 * is not NULL, by str and its NUL (str is cut to fit SP_MAX_PAYLOAD).
 * Returns 0 or -ENOMEM.
 */
int conn_send(struct agent *a, uint8_t type, uint32_t chan, const void *fixed, size_t nfixed,
	      const char *str);

/*
 * Output frames (A_STDOUT, A_STDERR, A_DATA) are read straight into their
 * frame, so bytes taken from a pipe or file can never be lost to a failed
 * allocation: conn_frame_alloc makes room for `cap` payload bytes (NULL when
 * out of memory), conn_frame_payload is where to read them, and
 * conn_frame_queue queues the first `len` of them (shrinking the frame).
 * owner, if any, has len added to its `queued` until the frame is written.
 * A frame not queued is released with free().
 */
struct outframe *conn_frame_alloc(size_t cap);
uint8_t *conn_frame_payload(struct outframe *o);
void conn_frame_queue(struct agent *a, struct outframe *o, uint8_t type, uint32_t chan,
		      size_t len, struct proc *owner);

/* Queues A_ERROR(err, message) on chan; err is a positive errno. */
int conn_send_error(struct agent *a, uint32_t chan, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Forgets p as the owner of queued frames (p is going away). */
void conn_disown(struct agent *a, const struct proc *p);

/* H_OPEN: a connection starts here. Ends the one the agent took to be running, if any
 * (the host started over), and queues A_OPEN(nonce) and A_HELLO first. */
void conn_host_open(struct agent *a, uint64_t nonce);

/* H_DETACH: writes out the queue (waiting up to AGENT_DETACH_FLUSH_MS),
 * closes the connection and goes back to retrying. */
void conn_detach(struct agent *a);

#endif

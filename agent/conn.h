/*
 * agent/conn.h - the agent's connection to spaced and its outgoing queue.
 *
 * The agent connects to the host socket (SP_AGENT_SOCK, or $SPACE_AGENT_SOCK),
 * sends A_HELLO first, and queues every outgoing frame in one FIFO, so frames
 * leave in the order they were made (a process's A_EXIT after all its
 * output). When the connection drops, the agent retries every
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

struct agent;
struct pollset;
struct proc;

/* Queued bytes of control frames (everything but output and download data)
 * above which the agent stops reading requests: a host that does not read
 * its answers is back-pressured instead of growing the queue. */
#define AGENT_CTRL_MAX (256u * 1024u)

/* How long H_DETACH may take to write out the queue before closing anyway. */
#define AGENT_DETACH_FLUSH_MS 10000u
/* After a detach the sandbox is about to be checkpointed, and the agent's next attempts happen
 * right after its restore: those retry quickly, so a resumed sandbox is reachable sooner. Time
 * frozen in the image does not use them up. */
#define AGENT_RETRY_FAST_MS 20u
#define AGENT_FAST_RETRIES 100u

struct outframe {
	struct outframe *next;
	struct proc *owner; /* output counted in owner->queued, or NULL */
	uint32_t size;      /* header + payload */
	uint8_t bytes[];
};

struct conn {
	const char *path;          /* socket to connect to */
	int fd;                    /* -1 while disconnected */
	uint64_t generation;       /* number of connections made so far */
	uint64_t retry_at;         /* monotonic ms of the next connect attempt */
	unsigned fast_retries;     /* attempts left at AGENT_RETRY_FAST_MS (after a detach) */
	struct outframe *head, *tail;
	size_t head_off;           /* bytes of head already written */
	size_t ctrl_bytes;         /* queued bytes of control frames */
	uint8_t *in;               /* SP_HDR_SIZE + SP_MAX_PAYLOAD bytes */
	size_t in_len;
};

/* Allocates buffers; path is borrowed. Connection attempts start at conn_tick. */
int conn_init(struct agent *a, const char *path);

/* Connects when disconnected and the retry time has come. */
void conn_tick(struct agent *a, uint64_t now);

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

/* H_DETACH: writes out the queue (waiting up to AGENT_DETACH_FLUSH_MS),
 * closes the connection and goes back to retrying. */
void conn_detach(struct agent *a);

#endif

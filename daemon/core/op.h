/*
 * daemon/core/op.h - one API request in flight, and how agent replies reach it.
 *
 * Every request gets a struct op, made by the front it came through (the HTTP
 * API, daemon/api/http.c) or by a job. A request that needs the agent links
 * its op to the sandbox (by tag, while it waits for a reply) or to a process
 * (as its output reader or a waiter), has its front suspend its connection,
 * and returns. The I/O thread, on a frame for that tag or pid, updates the op
 * and wakes it; the front's thread then sends the answer. All op fields that
 * both threads touch are under d->lock. The core knows a connection only as
 * the front's opaque pointer and the calls of struct op_front.
 *
 * Waking: op_wake() only records the connection; daemon_unlock() has the front
 * resume the recorded connections after releasing d->lock, so a front's
 * library is never entered with our lock held.
 */
#ifndef SPACE_DAEMON_OP_H
#define SPACE_DAEMON_OP_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "lib/buf.h"
#include "lib/frame.h"
#include "daemon/daemon.h"
#include "lib/host/err.h"
#include "daemon/io/timer.h"

#define API_MAX_BODY (1024 * 1024)            /* JSON and stdin bodies */
#define EXEC_MAX_CAPTURE (16 * 1024 * 1024)   /* stdout or stderr kept by a non-stream exec */
#define OP_CREDIT_RING 64
#define LIST_MAX_ENTRIES 2000                 /* entries in one listing answer */
#define LIST_MAX_BYTES (1024 * 1024)          /* names and paths in one listing answer */
#define TENANT_MAX_CAPTURE (64ull * 1024 * 1024) /* captured output held for one tenant at once */

/* How a request that succeeded is answered (the HTTP layer's 200, 201 and 204). */
enum op_answer {
	ANSWER_OK,      /* with op->json, or a stream */
	ANSWER_CREATED, /* something was made: with op->json */
	ANSWER_EMPTY,   /* nothing to say */
};

enum op_kind {
	OP_NONE,
	OP_CALL,      /* one request, one reply: ping, stat, mkdir, remove, rename, sync, ps, list */
	OP_EXEC,      /* exec or background start; after A_STARTED a capture or stream reader */
	OP_ATTACH,    /* output stream of a running process */
	OP_WAIT,      /* waiting for a process to exit */
	OP_STDIN,     /* bytes for a process's stdin */
	OP_READ,      /* file download */
	OP_WRITE,     /* file upload */
	OP_WATCH,     /* a folder watched: its changes as an NDJSON stream */
	OP_JOB,       /* a job thread's work (create, delete) */
};

struct route;
struct op;

/* What the front that made a request does for the core: the connection is the front's. */
struct op_front {
	/* Stops serving conn until resume. [L] */
	void (*suspend)(void *conn);
	/* Serves conn again; called with d->lock released. */
	void (*resume)(void *conn);
	/* conn's socket, to see whether its client left, or -1. [L] */
	int (*fd)(void *conn);
	/* Runs the request again now that what it waited for happened (its sandbox resumed, its
	 * template was built): answers it, defers it again, or goes on with its body. [L] */
	void (*retry)(struct op *op);
};

struct op {
	struct op *next;            /* in sb->ops, or proc->waiters */
	struct daemon *d;
	const struct op_front *front; /* the front of a request from a client; NULL for a job's */
	void *conn;                 /* the front's connection */
	const struct route *route;  /* the front's: what the request asked for */
	enum op_kind kind;
	bool tcp;                   /* arrived on the TCP listener */
	char tenant[TENANT_NAME_MAX + 1]; /* the token's tenant: a TCP request sees only its own */
	bool counted;               /* counts against its tenant's TENANT_MAX_REQUESTS */

	/* request */
	char sbid[SANDBOX_ID_LEN + 1];
	char snapid[16];
	char tpl[64];               /* a template's name (:tpl) */
	char vol[VOLUME_NAME_MAX + 1]; /* a volume's name (:vol) */
	uint32_t pid;
	struct buf body;
	bool body_too_large;
	json_t *query;              /* object: query arguments */
	json_t *spec;               /* an exec's argv, env, cwd and tag, for its process record */
	bool started;               /* handler ran */
	bool deferred;              /* [L] waits in sb->deferred for a resume */
	bool resumed;               /* the request resumed its sandbox: said in a response header */
	char *what;                 /* the command or path, for messages */

	/* agent link [L] */
	struct sandbox *sb;         /* set while linked */
	struct proc *proc;          /* reader or waiter of this process */
	struct op *next_reader;     /* in proc->readers */
	uint32_t tag;
	bool suspended;
	bool done;                  /* answer ready (status/json) */

	/* answer */
	struct err err;
	enum op_answer answer;
	json_t *json;
	const char *content_type;   /* not NULL: the answer is out's bytes, of this type (not JSON) */
	int64_t arrived_ns;         /* when the request came (api_metrics_now_ns) */

	bool stream;                /* NDJSON events instead of one result */

	/* an exec, and a reader of a process's output (exec, attach) */
	struct {
		bool background;            /* answer with the pid as soon as it started */
		int64_t t0;
		struct buf cap[2];          /* stdout, stderr of a capture */
		bool trunc[2];
		uint8_t utf8_hold[2][4];    /* incomplete UTF-8 sequence carried to the next chunk */
		uint8_t hold_len[2];
		uint32_t raw_carry;         /* output bytes held back whose credit is still to go out */
		bool drop;                  /* the start asked for "output": "drop" */
		uint32_t untaken;           /* output bytes handed to this stream that its client has not taken */
		uint64_t dropped;           /* output discarded before this stream joined, still to report */
		uint64_t captured;          /* bytes of this capture counted in its tenant's budget */
	} exec;

	/* streams to the client [L] */
	struct buf out;             /* bytes for the HTTP client */
	bool eof;                   /* nothing more will be added to out */
	bool failed;                /* end the response with an error */
	uint64_t out_written, out_read;
	struct { uint64_t end; uint32_t raw; } ring[OP_CREDIT_RING];
	unsigned ring_n;
	bool responding;            /* a streaming response was queued */
	int64_t emitted_ms;         /* when the stream last got a line (mono_ms) */
	bool gone;                  /* [L] the client closed its connection while it was suspended */
	bool long_call;             /* the agent may rightly be silent while it serves this (sync(2)) */

	/* a stream that something other than an agent fills (a template build, core/build.c) [L] */
	void *owner;
	void (*on_take)(struct op *op);  /* the client took bytes of out */
	void (*on_close)(struct op *op); /* the request ends (answered or left); op is freed after */

	/* uploads and stdin [L] */
	struct {
		uint32_t credit;
		bool open;
		uint64_t size;
		uint32_t mode;
		bool stdin_pending;         /* body holds stdin bytes to send once started */
	} upload;

	/* downloads, listings and watches [L] */
	struct {
		uint32_t owed;              /* bytes taken from the agent on this tag, credit not yet returned */
		size_t bytes;               /* names and paths in the listing so far */
		char *after;                /* listing cursor: entries up to this name are skipped */
		char *last_name;            /* the last entry kept */
		bool truncated;             /* the listing stopped at a limit */
	} list;

	/* deadline [L] */
	struct timer timer;
};

/* Locks d->lock. */
void daemon_lock(struct daemon *d);
/* Unlocks d->lock, then resumes every connection op_wake recorded on this thread. */
void daemon_unlock(struct daemon *d);
/* Waits on d->cond with d->lock held until `until` (CLOCK_REALTIME, as pthread's
 * default); returns pthread_cond_timedwait's result. The wait is not counted as held. [L] */
int daemon_wait(struct daemon *d, const struct timespec *until);
/* Logs how long d->lock has been held: how often, in all, the longest, and how many holds
 * took 1 ms and 10 ms or more. */
void daemon_lock_report(struct daemon *d);

/* Sends a {"type":"keepalive"} event on an NDJSON stream that has been silent for
 * STREAM_KEEPALIVE_MS: the write is how a client that went away is noticed (a suspended
 * connection is not watched), and it keeps proxies from closing an idle stream. [L] */
void op_keepalive(struct op *op, int64_t now_ms);

/* Whether the client of a suspended op has closed its connection (a front does not watch
 * suspended connections): if so, marks op gone and wakes it, so the HTTP layer ends the
 * request and everything it held is let go. [L] */
bool op_check_gone(struct op *op);

/* Marks op's answer ready and wakes its connection if it is suspended. [L] */
void op_finish(struct op *op);
/* Wakes op's connection (new stream bytes, credit) if it is suspended. [L] */
void op_wake(struct op *op);
/* Suspends op's connection until op_wake/op_finish. Call from the front's thread. [L] */
void op_suspend(struct op *op);

/* Links op to sb under a fresh tag and returns the tag. [L] */
uint32_t op_link(struct op *op, struct sandbox *sb);
/* Removes op from whatever sandbox or process it is linked to. [L] */
void op_unlink(struct op *op);
/* Fails op with e: finishes it, or ends its stream with an error event ({"type": "error",
 * "error": {"code", "message"[, "state"]}}). [L] */
void op_fail(struct op *op, const struct err *e);
/* Unlinks and fails with e every request of a list linked through `next` (sb->ops, sb->deferred,
 * a process's waiters). [L] */
void op_fail_list(struct op **head, const struct err *e);
/* Unlinks and fails with e every request that waits on one of sb's processes: its output
 * readers (exec streams, output streams, captures), waiters and stdin writers. [L] */
void op_fail_process_requests(struct sandbox *sb, const struct err *e);

/* Makes op one of the output readers of p; the first after a gap also gets what p kept
 * meanwhile (and, under "drop", how much it discarded). The caller checks PROC_MAX_READERS.
 * Every reader gets all output from when it joined, and the exit. [L] */
void op_attach(struct op *op, struct proc *p);
/* Returns to the agent the credit of p's output that no reader still holds. While p has
 * readers, under either policy, that is what the slowest reader's client has taken: the
 * process goes at the pace of its slowest connected reader. With none, "block" holds what
 * waits for a reader in p->pending, "drop" holds nothing (proc_keep keeps only the tail). [L] */
void op_proc_credit(struct sandbox *sb, struct proc *p);

/* Hands one frame for op's tag to it. Returns 0, or -EPROTO with why (CHAN_MAX_WHY bytes)
 * filled when the frame breaks the protocol (the connection is to be dropped). [L] */
int op_on_frame(struct op *op, const struct frame *f, char *why);
/* Gives back what op's capture counted in its tenant's TENANT_MAX_CAPTURE. [L] */
void op_release_capture(struct op *op);
/* Returns `credit` bytes the client took of op's stream to the agent. [L] */
void op_return_credit(struct op *op, uint32_t credit);
/* Arms op's deadline: at mono time `when_ms` it is answered (op_deadline). [L] */
void op_set_deadline(struct op *op, int64_t when_ms);
/* Output of the process op reads: type SP_A_STDOUT/SP_A_STDERR. [L] */
void op_on_output(struct op *op, uint8_t type, const uint8_t *data, uint32_t n);
/* The process op reads exited (p holds the status). [L] */
void op_on_exit(struct op *op, const struct proc *p);

/*
 * Copies up to max stream bytes into dst and returns credit owed to the agent
 * for what the client has now taken (in *credit). [L]
 */
size_t op_take(struct op *op, uint8_t *dst, size_t max, uint32_t *credit);

void op_free(struct op *op);

#endif

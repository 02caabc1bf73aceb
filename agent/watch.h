/*
 * agent/watch.h - watching folders for changes (H_WATCH), with inotify.
 *
 * A watch lives under the host's request tag from its A_OK until H_ABORT, the connection
 * drops (then it is abandoned, as transfers are), or it ends by itself: A_END when the
 * watched folder is removed or moved away (after an event saying so), A_ERROR when a recursive
 * watch would follow more than AGENT_WATCH_FOLDERS folders. Each watch has an inotify
 * descriptor of its own (IN_CLOEXEC | IN_NONBLOCK); a recursive one adds every subfolder, and
 * each folder made or moved in later, whose entries found at that moment are reported as made.
 *
 * Events go as A_EVENT against the tag's credit (SP_WINDOW at first, H_CREDIT adds). While
 * there is none they wait, AGENT_WATCH_QUEUE at most; past that they are dropped, and once
 * there is room again an SP_EVENT_LOST takes their place in the order, then events go on.
 */
#ifndef SPACE_AGENT_WATCH_H
#define SPACE_AGENT_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/frame.h"

struct agent;
struct pollset;

#define AGENT_MAX_WATCHES 16u     /* watches at once (EAGAIN) */
#define AGENT_WATCH_FOLDERS 1024u /* folders one watch follows, the watched one included (E2BIG) */
#define AGENT_WATCH_QUEUE 1024u   /* events one watch holds while the host gives no credit */

struct watch_folder {
	int wd;     /* inotify's watch descriptor */
	char *rel;  /* its path under the watched folder, "" for that folder */
};

struct watch_event {
	uint32_t type; /* SP_EVENT_* */
	char *name;
};

struct watch {
	uint32_t tag;          /* 0: the slot is free */
	int fd;                /* inotify */
	bool recursive;
	bool lost;             /* events were dropped; an SP_EVENT_LOST goes in once there is room */
	bool ending;           /* ends once its queue is sent: A_ERROR when end_err, else A_END */
	int end_err;
	char *end_msg;
	char *root;            /* the watched folder, absolute */
	uint64_t credit;       /* event bytes the agent may still send */
	struct watch_folder *folders;
	size_t nfolders;
	struct watch_event queue[AGENT_WATCH_QUEUE]; /* a ring */
	size_t qhead, qlen;
};

struct watch_table {
	struct watch *slots[AGENT_MAX_WATCHES]; /* allocated while in use */
};

/* H_WATCH. Returns 0, or -EPROTO to close the connection. */
int watch_start(struct agent *a, const struct frame *f);

/* H_CREDIT and H_ABORT for a tag: whether a watch had it. */
bool watch_credit(struct agent *a, uint32_t tag, uint32_t bytes);
bool watch_abort(struct agent *a, uint32_t tag);

/* Adds every watch's inotify descriptor to the loop's poll set. */
void watch_poll(struct agent *a, struct pollset *ps);

/* Sends the events credit allows, and the end of watches that ended. */
void watch_pump(struct agent *a);

/* True when watch_pump could send something right away (poll must not sleep). */
bool watch_busy(const struct agent *a);

/* The connection dropped: ends every watch. */
void watch_abandon_all(struct agent *a);

#endif

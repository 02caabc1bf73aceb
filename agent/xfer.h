/*
 * agent/xfer.h - requests that span many frames: downloads (H_FREAD),
 * uploads (H_FWRITE, H_DATA, H_END) and directory listings (H_LIST).
 *
 * Each lives under the host's request tag until it completes, the host sends
 * H_ABORT, or the connection drops (then it is abandoned: an upload's
 * temporary file is removed). Downloads send A_DATA only against credit;
 * listings send their entries only while the outgoing queue has room.
 */
#ifndef SPACE_AGENT_XFER_H
#define SPACE_AGENT_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/frame.h"
#include "fsuser.h"

struct agent;

#define AGENT_MAX_XFERS 64u          /* transfers and listings in progress at once */
#define AGENT_LIST_MAX (1u << 20)    /* entries of one listed directory */
#define AGENT_LIST_BATCH 256u        /* entries sent per loop iteration */

enum xfer_kind { XFER_FREE = 0, XFER_READ, XFER_WRITE, XFER_LIST };

struct xfer {
	enum xfer_kind kind;
	uint32_t tag;
	int fd;                 /* file (read, write) or directory (list) */
	uint64_t credit;        /* read: bytes the agent may still send */
	char *target;           /* write: final path */
	char *tmp;              /* write: temporary path, NULL when appending */
	uint32_t mode;          /* write: permission bits applied at the end */
	bool chmod;             /* write: apply mode (new file) */
	char **names;           /* list: sorted entry names */
	size_t nnames, next;
	char *dir;              /* list: the directory's absolute path */
	struct fsuser user;     /* whom the request acts as (write: the rename, list: each lstat) */
};

struct xfer_table {
	struct xfer slots[AGENT_MAX_XFERS];
};

void xfer_init(struct agent *a);

/* Request handlers; return 0, or -EPROTO to close the connection. */
int xfer_fread(struct agent *a, const struct frame *f);
int xfer_fwrite(struct agent *a, const struct frame *f);
int xfer_data(struct agent *a, const struct frame *f);
int xfer_end(struct agent *a, const struct frame *f);
int xfer_list(struct agent *a, const struct frame *f);
int xfer_abort(struct agent *a, const struct frame *f);

/* H_CREDIT for a request tag. */
void xfer_credit(struct agent *a, uint32_t tag, uint32_t bytes);

/* Sends what downloads and listings may send now. */
void xfer_pump(struct agent *a);

/* True when xfer_pump could make progress right away (poll must not sleep). */
bool xfer_busy(const struct agent *a);

/* The connection dropped: abandons every transfer. */
void xfer_abandon_all(struct agent *a);

#endif

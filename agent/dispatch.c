/*
 * agent/dispatch.c - the table of host messages: for each type, the least
 * payload it must carry and the handler that serves it. Every frame's size
 * is checked here before any handler reads it; handlers check their strings
 * with frame_str. Unknown types get A_ERROR(ENOSYS) when they carry a
 * request tag and are ignored otherwise, so a newer host can probe.
 */
#include "dispatch.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "files.h"
#include "identity.h"
#include "ports.h"

static int on_ping(struct agent *a, const struct frame *f)
{
	return conn_send(a, SP_A_PONG, f->chan, NULL, 0, NULL) < 0 ? -ENOMEM : 0;
}

static int on_credit(struct agent *a, const struct frame *f)
{
	uint32_t bytes = frame_get_u32(f->payload);
	if ((f->chan & SP_CHAN_REQ) && !watch_credit(a, f->chan, bytes))
		xfer_credit(a, f->chan, bytes);
	else
		proc_credit(a, f->chan, bytes);
	return 0;
}

/* H_ABORT: the host gave up on a transfer or a watch. */
static int on_abort(struct agent *a, const struct frame *f)
{
	return watch_abort(a, f->chan) ? 0 : xfer_abort(a, f);
}

static int on_detach(struct agent *a, const struct frame *f)
{
	conn_detach(a);
	return 0;
}

static int on_open(struct agent *a, const struct frame *f)
{
	if (f->chan != 0)
		return -EPROTO;
	conn_host_open(a, frame_get_u64(f->payload));
	return 0;
}

/* H_IDENTITY: see identity.h. The name is the host's, checked all the same. */
static int on_identity(struct agent *a, const struct frame *f)
{
	size_t off = sizeof(struct sp_identity);
	const char *name = frame_str(f, &off);
	if (!name)
		return -EPROTO;
	const struct sp_identity *id = (const void *)f->payload;
	int rc = identity_name_ok(name) ? 0 : -EINVAL;
	/* a VM restored from another's image: this sandbox's settings (none: a guest without) */
	if (rc == 0 && a->vm_env && (rc = a->vm_env()) == -ENOENT)
		rc = 0;
	if (rc == 0)
		rc = identity_take(name);
	if (rc == 0)
		rc = identity_machine_id("/etc");
	if (rc == 0)
		rc = identity_reseed(id->seed, sizeof(id->seed));
	if (rc < 0)
		return conn_send_error(a, f->chan, -rc, "identity %s: %s", name, strerror(-rc)) < 0 ? -ENOMEM : 0;
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL) < 0 ? -ENOMEM : 0;
}

/* H_ENV: every entry is checked before any is set, so a bad one changes nothing. */
static int on_env(struct agent *a, const struct frame *f)
{
	size_t off = 0;
	const char *kv;
	while (off < f->len) {
		if (!(kv = frame_str(f, &off)))
			return -EPROTO;
		const char *eq = strchr(kv, '=');
		if (!eq || eq == kv)
			return conn_send_error(a, f->chan, EINVAL, "environment entry without a name: %.40s", kv) < 0
				       ? -ENOMEM
				       : 0;
	}
	off = 0;
	while (off < f->len) {
		kv = frame_str(f, &off);
		char *name = strndup(kv, (size_t)(strchr(kv, '=') - kv));
		int rc = name && setenv(name, strchr(kv, '=') + 1, 1) == 0 ? 0 : (errno ? errno : ENOMEM);
		free(name);
		if (rc)
			return conn_send_error(a, f->chan, rc, "setenv: %s", strerror(rc)) < 0 ? -ENOMEM : 0;
	}
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL) < 0 ? -ENOMEM : 0;
}

/* H_CLOCK (SP_FEATURE_CLOCK, which only a VM's agent names): the guest's wall clock becomes the
 * host's, which ran on while this machine's did not (restored from an image, or paused). */
static int on_clock(struct agent *a, const struct frame *f)
{
	struct timespec ts = { .tv_sec = (time_t)frame_get_u64(f->payload + offsetof(struct sp_clock, sec)),
			       .tv_nsec = frame_get_u32(f->payload + offsetof(struct sp_clock, nsec)) };
	int rc = 0;
	if (!a->vm_env)
		rc = -EOPNOTSUPP; /* a gVisor sandbox's clock is the host's already */
	else if (ts.tv_nsec >= 1000000000L || ts.tv_sec < 0)
		rc = -EINVAL;
	else if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		rc = -errno;
	if (rc < 0)
		return conn_send_error(a, f->chan, -rc, "clock: %s", strerror(-rc)) < 0 ? -ENOMEM : 0;
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL) < 0 ? -ENOMEM : 0;
}

struct handler {
	int (*fn)(struct agent *a, const struct frame *f);
	size_t fixed; /* least payload */
};

static const struct handler handlers[] = {
	[SP_H_PING] = { on_ping, 0 },
	[SP_H_EXEC] = { proc_exec, sizeof(struct sp_exec) },
	[SP_H_STDIN] = { proc_stdin, 0 },
	[SP_H_SIGNAL] = { proc_signal, sizeof(struct sp_signal) },
	[SP_H_CREDIT] = { on_credit, sizeof(struct sp_credit) },
	[SP_H_PS] = { proc_ps, 0 },
	[SP_H_FREAD] = { xfer_fread, 1 },
	[SP_H_FWRITE] = { xfer_fwrite, sizeof(struct sp_fwrite) + 1 },
	[SP_H_DATA] = { xfer_data, 0 },
	[SP_H_END] = { xfer_end, 0 },
	[SP_H_STAT] = { files_stat, 1 },
	[SP_H_LIST] = { xfer_list, 1 },
	[SP_H_MKDIR] = { files_mkdir, sizeof(struct sp_mode) + 1 },
	[SP_H_REMOVE] = { files_remove, 1 },
	[SP_H_RENAME] = { files_rename, 2 },
	[SP_H_SYNC] = { files_sync, 0 },
	[SP_H_DETACH] = { on_detach, 0 },
	[SP_H_ABORT] = { on_abort, 0 },
	[SP_H_OPEN] = { on_open, sizeof(struct sp_open) },
	[SP_H_IDENTITY] = { on_identity, sizeof(struct sp_identity) + 1 },
	[SP_H_PORTS] = { ports_list, 0 },
	[SP_H_ENV] = { on_env, 0 },
	[SP_H_RESIZE] = { proc_resize, sizeof(struct sp_winsize) },
	[SP_H_WATCH] = { watch_start, sizeof(struct sp_watch) + 1 },
	[SP_H_CLOCK] = { on_clock, sizeof(struct sp_clock) },
};

int dispatch_frame(struct agent *a, const struct frame *f)
{
	const struct handler *h = NULL;
	if (f->type < sizeof(handlers) / sizeof(handlers[0]) && handlers[f->type].fn)
		h = &handlers[f->type];
	if (!h) {
		if (f->chan & SP_CHAN_REQ)
			conn_send_error(a, f->chan, ENOSYS, "unknown message type %u", f->type);
		return 0;
	}
	if (frame_need(f, h->fixed) < 0)
		return -EPROTO;
	int err = h->fn(a, f);
	if (err < 0 && err != -EPROTO)
		agent_log("message type %u: %s", f->type, strerror(-err));
	return err;
}

/* A connection ended: its transfers and watches end with it. */
static void abandon_all(struct agent *a)
{
	xfer_abandon_all(a);
	watch_abandon_all(a);
}

const struct conn_hooks dispatch_hooks = {
	.frame = dispatch_frame,
	.max_pid = proc_max_pid,
	.begun = proc_on_connect,
	.ended = abandon_all,
};

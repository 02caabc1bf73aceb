/*
 * daemon/core/lifecycle.c - pause, resume, suspend to disk, and sync.
 *
 * Each transition is a job: the request moves the sandbox into its
 * transitional state (recorded in the store first), the job does the driver
 * work without d->lock, and the final state is recorded before the request
 * is answered. A crash in between leaves the transitional state in the store,
 * which adoption resolves (sandbox_adopt.c).
 *
 * Suspend follows an order that is part of the contract: runsc's checkpoint
 * panics with a connected host socket in the sandbox, and a failed checkpoint
 * leaves the sandbox stopped. So: check the host has room for the image (507
 * and nothing touched if not) and that the sandbox's disk syncs (500 and
 * nothing touched if not), stop listening, ask the agent to detach and
 * wait for its connection to close, only then checkpoint into
 * checkpoint.tmp/. Then the writable layer is synced (syncfs), every file of
 * the image and its completion mark fsynced, the folder renamed to
 * checkpoint/ and the parent fsynced; the runtime is released and only then
 * is the state committed as suspended. Reconciliation trusts only a marked
 * image under its final name. Each step is a named crash point (crash.h).
 */
#include "daemon/net/net.h"
#include "daemon/core/lifecycle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/driver/driver.h"
#include "daemon/core/job.h"
#include "daemon/base/crash.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"
#include "daemon/core/proc.h"
#include "daemon/core/quota.h"
#include "daemon/core/sandbox.h"
#include "lib/host/spawn.h"
#include "daemon/store/store.h"
#include "daemon/io/timer.h"

#define DETACH_TIMEOUT_MS 10000
#define SYNC_TIMEOUT_MS 600000

static bool disconnected(struct sandbox *sb)
{
	return sb->chan.fd < 0;
}

static bool said_hello(struct sandbox *sb)
{
	return peer_ready(sb);
}

/* Ends, with an error naming the state, every request that waits on a process of sb: its
 * processes no longer run on the host (they wait in an image, or are lost), so nothing more
 * would come to them until a resume, which may never come. A pause keeps them. [L] */
static void end_process_requests(struct sandbox *sb, enum sb_state st)
{
	struct err e = { 0 };
	if (st == SB_FAILED)
		err_set(&e, ERR_SANDBOX_FAILED, EIO, "sandbox %s failed: %s", sb->id, sb->reason);
	else
		err_set(&e, ERR_CONFLICT, EBUSY, "sandbox %s was suspended", sb->id);
	snprintf(e.state, sizeof(e.state), "%s", sb_state_name(st));
	op_fail_process_requests(sb, &e);
}

/* Records sb's new state and answers the job's request with the sandbox. Called without
 * d->lock; returns with it held. The record is written with the lock released, while sb
 * still shows the transition's own state (suspending, resuming...), so nothing else may
 * begin on it meanwhile; the new state is sb's once written, or once the write failed (it
 * is what happened, and spaced's next start finds it from the sandbox's files), and an
 * answer of success always waits for the write: a success the API gives is on disk. */
static void settle(struct job *j, enum sb_state st, const struct err *e)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	enum sb_state from = j->from;
	struct sb_record rec;
	daemon_lock(d);
	if (st == SB_FAILED && e)
		snprintf(sb->reason, sizeof(sb->reason), "%s", e->msg);
	if (st == SB_SUSPENDED && from != SB_SUSPENDED) {
		/* the idle timeout stops while suspended; what is left of it comes back on resume */
		int64_t left = sb->deadline_ms - now_ms();
		sb->remaining_ms = sb->timeout_s > 0 ? (left > 0 ? left : 0) : 0;
		sb->deadline_ms = 0;
	} else if (st == SB_RUNNING && from == SB_SUSPENDED) {
		if (sb->remaining_ms > 0)
			sb->deadline_ms = now_ms() + sb->remaining_ms;
		else
			sandbox_touch(sb);
		sb->remaining_ms = 0;
	}
	store_record(sb, &rec);
	rec.state = st;
	snprintf(rec.reason, sizeof(rec.reason), "%s", st == SB_FAILED ? sb->reason : "");
	daemon_unlock(d);
	int rc = store_save(d->store, &rec);
	daemon_lock(d);
	sb->state = st;
	if ((st == SB_SUSPENDED && from != SB_SUSPENDED) || st == SB_FAILED)
		end_process_requests(sb, st);
	if (!j->op)
		return;
	struct err unrecorded = { 0 };
	if (rc < 0 && !(e && e->kind)) {
		/* what happened stands (spaced's next start finds it from the sandbox's files);
		 * the API does not call it done */
		err_set(&unrecorded, ERR_INTERNAL, -rc, "sandbox %s is %s, but that could not be recorded: %s", sb->id,
			sb_state_name(st), strerror(-rc));
		e = &unrecorded;
	}
	if (e && e->kind) {
		op_fail(j->op, e);
	} else {
		j->op->answer = ANSWER_OK;
		j->op->json = sandbox_json(sb);
		op_finish(j->op);
	}
}

/* fsyncs every file of dir, then dir itself. */
static int sync_dir_tree(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int copy = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *dp = copy < 0 ? NULL : fdopendir(copy);
	int rc = 0;
	if (!dp) {
		rc = -errno;
		if (copy >= 0)
			close(copy);
		close(dfd);
		return rc;
	}
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		int fd = openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fsync(fd) < 0)
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	closedir(dp);
	if (fsync(dfd) < 0)
		rc = -errno;
	close(dfd);
	return rc;
}

static int fsync_path(const char *p)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

static int remove_tree(const char *p)
{
	struct stat st;
	if (lstat(p, &st) < 0 && errno == ENOENT)
		return 0; /* the usual case: nothing to remove, and no rm to start */
	char *rm[] = { "rm", "-rf", "--one-file-system", (char *)p, NULL };
	return spawn_run(rm, -1, -1) == 0 ? 0 : -EIO;
}


/* Writes an empty file `name` in dir and fsyncs it. */
static int write_mark(const char *dir, const char *name)
{
	char p[760];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/*
 * Checkpoints sb (which stops it) into final.tmp, then in this order: syncs the writable layer,
 * fsyncs every file of the image, writes and fsyncs the completion mark, renames final.tmp to
 * final and fsyncs the parent. An image that stands under its final name with its mark is
 * whole and its files are on disk as of the checkpoint. The agent must be detached.
 */
static int write_image(struct daemon *d, struct sandbox *sb, const char *final, struct err *e)
{
	char tmp[700], parent[700];
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	snprintf(parent, sizeof(parent), "%s", final);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	remove_tree(tmp);
	if (mkdir(tmp, 0700) < 0)
		return err_from_errno(e, errno, "cannot make the image folder %s: %s", tmp, strerror(errno));
	const struct driver_slot *dv = sandbox_driver(d, sb);
	int rc = driver_checkpoint(dv, sb, tmp, 0, e);
	if (rc == 0) {
		crash_point("suspend:checkpointed");
		if ((rc = sandbox_sync_layer(d, sb)) < 0)
			err_from_errno(e, -rc, "syncing the writable layer: %s", strerror(-rc));
	}
	if (rc == 0) {
		crash_point("suspend:layer-synced");
		if ((rc = sync_dir_tree(tmp)) < 0 || (rc = write_mark(tmp, LIFECYCLE_IMAGE_MARK)) < 0 ||
		    (rc = fsync_path(tmp)) < 0)
			err_from_errno(e, -rc, "syncing the image: %s", strerror(-rc));
	}
	if (rc == 0) {
		crash_point("suspend:image-synced");
		remove_tree(final);
		if (rename(tmp, final) < 0 || fsync_path(parent) < 0)
			rc = err_from_errno(e, errno, "publishing the image: %s", strerror(errno));
	}
	if (rc < 0)
		remove_tree(tmp);
	return rc;
}

/* Refuses (507) a suspend the state dir's filesystem cannot hold: an image is about the
 * memory the sandbox uses, and its layer's dirty pages go to its own, already sized, disk. */
static int check_room(struct daemon *d, struct sandbox *sb, struct err *e)
{
	uint64_t need = quota_image_bytes(d, sb) + LIFECYCLE_IMAGE_SLACK, have = 0;
	int rc = quota_free(sb->conf.dir, &have, e);
	if (rc < 0)
		return rc;
	if (have < need)
		return err_set(e, ERR_NO_SPACE, ENOSPC,
			       "sandbox %s: the host has %llu MiB free, a memory image needs about %llu MiB; it "
			       "keeps running",
			       sb->id, (unsigned long long)(have >> 20), (unsigned long long)(need >> 20));
	return 0;
}

/*
 * Lets sb's network connections end before a checkpoint that cannot keep them (the driver's
 * keeps_connections): new ones are held off at its edge, then its edge's connection tracking is
 * read every LIFECYCLE_NET_POLL_MS for up to LIFECYCLE_NET_DRAIN_MS (net_open_flows). One still
 * open then refuses the suspend (409) and the sandbox keeps running, connections and all; on
 * success the hold stays until the sandbox runs again (net_ensure lifts it).
 */
static bool never(struct sandbox *sb)
{
	(void)sb;
	return false;
}

static int drain_network(struct daemon *d, struct sandbox *sb, struct err *e)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);
	if (!sb->network || dv->ops->keeps_connections)
		return 0;
	int rc = net_hold(d, sb, true, e);
	if (rc < 0)
		return rc;
	int64_t until = now_ms() + LIFECYCLE_NET_DRAIN_MS;
	char first[200] = "";
	daemon_lock(d);
	while ((rc = net_open_flows(sb, first, sizeof(first))) > 0 && now_ms() < until)
		sandbox_wait(d, sb, never, LIFECYCLE_NET_POLL_MS); /* a pause, the lock let go */
	daemon_unlock(d);
	if (rc == 0)
		return 0;
	struct err ignored = { 0 };
	net_hold(d, sb, false, &ignored);
	if (rc > 0)
		return err_set(e, ERR_CONFLICT, EBUSY,
			       "sandbox %s cannot be suspended while %d TCP connection%s open over its network (%s): "
			       "gVisor cannot keep them in a memory image, and %d s did not see them close; it keeps "
			       "running",
			       sb->id, rc, rc == 1 ? " is" : "s are", first, LIFECYCLE_NET_DRAIN_MS / 1000);
	return err_set(e, ERR_INTERNAL, -rc, "sandbox %s: cannot read its connections: %s; it keeps running",
		       sb->id, strerror(-rc));
}

/* Detaches the agent and waits for its connection to end. [L] */
int lifecycle_detach(struct daemon *d, struct sandbox *sb, struct err *e)
{
	int rc = peer_detach(sb);
	if (rc == 1)
		return 0; /* the connection ends with the runtime's checkpoint */
	if (rc < 0 && sb->chan.fd >= 0)
		return err_set(e, ERR_UNAVAILABLE, ENOTCONN, "sandbox %s: cannot reach its agent", sb->id);
	if (!sandbox_wait(d, sb, disconnected, DETACH_TIMEOUT_MS))
		return err_set(e, ERR_INTERNAL, ETIMEDOUT, "sandbox %s: the agent did not detach within %d s", sb->id,
			       DETACH_TIMEOUT_MS / 1000);
	return 0;
}

/* Listens again and waits for the agent's hello. [L] */
int lifecycle_reattach(struct daemon *d, struct sandbox *sb, struct err *e)
{
	if (sb->chan.listen_fd < 0) {
		int rc = peer_listen(d, sb);
		if (rc < 0)
			return err_set(e, ERR_INTERNAL, -rc, "agent socket: %s", strerror(-rc));
	}
	return 0;
}

static int wait_agent(struct daemon *d, struct sandbox *sb, struct err *e)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);
	int ms = driver_hello_ms(dv ? dv->ops : NULL);
	if (!sandbox_wait(d, sb, said_hello, ms))
		return err_set(e, ERR_INTERNAL, ETIMEDOUT, "sandbox %s: the agent did not reconnect within %d s",
			       sb->id, ms / 1000);
	return 0;
}

static void pause_job(struct job *j)
{
	struct daemon *d = j->d;
	struct err e = { 0 };
	const struct driver_slot *dv = sandbox_driver(d, j->sb);
	int rc = job_record(j, &e);
	if (rc == 0)
		rc = driver_pause(dv, j->sb, &e);
	settle(j, rc == 0 ? SB_PAUSED : SB_RUNNING, rc == 0 ? NULL : &e);
	daemon_unlock(d);
}

/*
 * Restores sb from its image and waits for the agent. On failure the image is
 * kept, the runtime released, and the sandbox stays suspended. Returns the
 * state sb ends in. Takes and drops d->lock.
 */
enum sb_state lifecycle_do_resume(struct daemon *d, struct sandbox *sb, struct err *e)
{
	char image[700];
	snprintf(image, sizeof(image), "%s/checkpoint", sb->conf.dir);
	const struct driver_slot *dv = sandbox_driver(d, sb);
	int rc = driver_prepare(dv, sb, e);
	daemon_lock(d);
	if (rc == 0)
		rc = lifecycle_reattach(d, sb, e);
	daemon_unlock(d);
	bool booting = rc == 0;
	if (booting) /* its turn to boot: the hello deadline counts from here (core/starts.h) */
		starts_enter(&d->starts);
	if (rc == 0 && (rc = driver_restore(dv, sb, image, e)) == 0)
		crash_point("resume:restored");
	daemon_lock(d);
	if (rc == 0)
		rc = wait_agent(d, sb, e);
	if (booting)
		starts_leave(&d->starts);
	if (rc < 0)
		peer_unlisten(sb);
	daemon_unlock(d);
	if (rc < 0) {
		struct err ignored = { 0 };
		driver_stop(dv, sb, &ignored);
		return SB_SUSPENDED;
	}
	crash_point("resume:connected");
	/* The image is spent: the sandbox has run on from it. Left in place, a later
	 * interrupted suspend could be mistaken for a finished one. */
	remove_tree(image);
	return SB_RUNNING;
}

/*
 * Writes sb durably to disk and releases its runtime (see the top of this file).
 * `from` is the state it was in. Returns the state sb ends in: suspended, running
 * (the agent would not detach; nothing was lost) or failed. Takes and drops d->lock.
 */
enum sb_state lifecycle_do_suspend(struct daemon *d, struct sandbox *sb, enum sb_state from, struct err *e)
{
	char image[700];
	snprintf(image, sizeof(image), "%s/checkpoint", sb->conf.dir);
	const struct driver_slot *dv = sandbox_driver(d, sb);

	/* Nothing is touched before the host is known to have room: a refused suspend leaves the
	 * sandbox as it was (running or paused). */
	int rc = check_room(d, sb, e);
	/* Nor before its disk is known to take writes: the sync after the checkpoint would fail
	 * with the container stopped (a disk whose journal aborted when the host had no room for
	 * it is read-only from then on). */
	if (rc == 0 && (rc = sandbox_sync_layer(d, sb)) < 0)
		err_set(e, ERR_INTERNAL, -rc, "sandbox %s: its disk cannot be synced (%s); it keeps running", sb->id,
			strerror(-rc));
	if (rc < 0)
		return from;
	/* No image may stand while the sandbox is suspending unless this suspend wrote it:
	 * that is how a restarted spaced tells a finished suspend from an interrupted one. */
	remove_tree(image);
	/* A paused sandbox cannot detach its agent: let it run for the moment that takes. */
	if (from == SB_PAUSED && driver_resume(dv, sb, e) < 0)
		return SB_PAUSED;
	if ((rc = drain_network(d, sb, e)) < 0) {
		struct err ignored = { 0 };
		if (from == SB_PAUSED && driver_pause(dv, sb, &ignored) == 0)
			return SB_PAUSED;
		return SB_RUNNING;
	}
	daemon_lock(d);
	rc = lifecycle_detach(d, sb, e);
	if (rc < 0)
		lifecycle_reattach(d, sb, e);
	daemon_unlock(d);
	if (rc < 0)
		return SB_RUNNING;
	crash_point("suspend:detached");
	rc = write_image(d, sb, image, e);
	if (rc < 0 && driver_state(dv, sb) == DRV_RUNNING) {
		/* the checkpoint did not stop it (it failed before, or could not even start):
		 * nothing is lost, the agent comes back */
		struct err unheld = { 0 };
		if (sb->network)
			net_hold(d, sb, false, &unheld);
		daemon_lock(d);
		struct err ignored = { 0 };
		lifecycle_reattach(d, sb, &ignored);
		daemon_unlock(d);
		return SB_RUNNING;
	}
	if (rc == 0)
		crash_point("suspend:published");
	struct err stop_err = { 0 };
	/* After a checkpoint (or a failed one) the container no longer runs: release it. */
	if (driver_stop(dv, sb, &stop_err) < 0 && rc == 0)
		log_warn("sandbox %s: suspended, but releasing the runtime failed: %s", sb->id, stop_err.msg);
	if (rc == 0)
		crash_point("suspend:released");
	return rc == 0 ? SB_SUSPENDED : SB_FAILED;
}

static void resume_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	struct err e = { 0 };
	int rc = job_record(j, &e);
	if (j->from == SB_PAUSED) {
		if (rc == 0)
			rc = driver_resume(dv, sb, &e);
		if (rc == 0) /* a VM's clock stood still while it was paused */
			peer_send_clock(sb);
		settle(j, rc == 0 ? SB_RUNNING : SB_PAUSED, rc == 0 ? NULL : &e);
		lifecycle_resumed(d, sb, rc == 0 ? NULL : &e);
		daemon_unlock(d);
		return;
	}
	enum sb_state st = rc == 0 ? lifecycle_do_resume(d, sb, &e) : SB_SUSPENDED;
	settle(j, st, e.kind ? &e : NULL);
	lifecycle_resumed(d, sb, e.kind ? &e : NULL);
	daemon_unlock(d);
}

static void suspend_job(struct job *j)
{
	struct daemon *d = j->d;
	struct err e = { 0 };
	enum sb_state st = job_record(j, &e) == 0 ? lifecycle_do_suspend(d, j->sb, j->from, &e)
						  : j->from;
	settle(j, st, e.kind ? &e : NULL);
	if (j->sb->deferred) {
		/* requests arrived while it was being suspended: they want it running */
		struct err ignored = { 0 };
		if (st != SB_SUSPENDED || lifecycle_start(d, j->sb, ACT_RESUME, NULL, &ignored) < 0)
			lifecycle_resumed(d, j->sb, &e);
	}
	daemon_unlock(d);
}

static void sync_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	struct err e = { 0 };
	int rc = 0;

	daemon_lock(d);
	/* Inside first: the sandbox's own page cache reaches the writable layer. */
	if (sb->state == SB_RUNNING && peer_ready(sb))
		rc = peer_request(d, sb, "sync inside", SP_H_SYNC, NULL, 0, NULL, 0, SYNC_TIMEOUT_MS, &e);
	daemon_unlock(d);
	if (rc == 0 && (rc = sandbox_sync_layer(d, sb)) < 0)
		err_set(&e, ERR_INTERNAL, -rc, "syncing the writable layer: %s", strerror(-rc));
	daemon_lock(d);
	if (rc < 0) {
		op_fail(j->op, &e);
	} else {
		j->op->answer = ANSWER_OK;
		j->op->json = sandbox_json(sb);
		op_finish(j->op);
	}
	daemon_unlock(d);
}

int lifecycle_start(struct daemon *d, struct sandbox *sb, enum sb_action a, struct op *op, struct err *e)
{
	enum sb_state via;
	enum state_verdict v = state_begin(sb->state, a, &via);
	if (v == STATE_ALREADY) {
		op->answer = ANSWER_OK;
		op->json = sandbox_json(sb);
		return LIFECYCLE_ANSWERED;
	}
	if (v == STATE_ILLEGAL) {
		static const char *verbs[] = { "paused", "resumed", "suspended", "deleted" };
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s and cannot be %s now", sb->id,
			sb_state_name(sb->state), verbs[a]);
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	struct job j = { .sb = sb, .op = op, .via = via, .from = sb->state };
	j.fn = a == ACT_PAUSE ? pause_job : a == ACT_RESUME ? resume_job : suspend_job;
	enum sb_state old = sb->state;
	sb->state = via;
	store_record(sb, &j.first); /* written by the job, with the lock released */
	int rc = job_start(d, &j, e);
	if (rc < 0)
		sb->state = old;
	return rc;
}

int lifecycle_sync(struct daemon *d, struct sandbox *sb, struct op *op, struct err *e)
{
	if (sb->state != SB_RUNNING && sb->state != SB_SUSPENDED && sb->state != SB_PAUSED) {
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	struct job j = { .fn = sync_job, .sb = sb, .op = op };
	return job_start(d, &j, e);
}

static void peer_ready_event(struct daemon *d, struct sandbox *sb)
{
	if (sb->state == SB_RUNNING && sb->deferred)
		lifecycle_resumed(d, sb, NULL);
}

const struct peer_events lifecycle_peer_events = {
	.ready = peer_ready_event,
	.lost = sandbox_watch,
	.probe = sandbox_probe,
	.unresponsive = sandbox_unresponsive,
};

static void timeouts_job(struct job *j)
{
	struct daemon *d = j->d;
	daemon_lock(d);
	/* written with the lock held: two changes in a row leave the newer one recorded */
	if (store_put_timeouts(d->store, j->sb) < 0) {
		struct err e = { 0 };
		err_set(&e, ERR_INTERNAL, EIO, "sandbox %s: its new timeouts apply but could not be recorded "
			"(a restart of spaced would bring back the old ones)", j->sb->id);
		op_fail(j->op, &e);
	} else {
		j->op->answer = ANSWER_OK;
		j->op->json = sandbox_json(j->sb);
		op_finish(j->op);
	}
	daemon_unlock(d);
}

int lifecycle_set_timeouts(struct daemon *d, struct sandbox *sb, const struct sb_timeouts *t, struct op *op,
			   struct err *e)
{
	if (sb->state != SB_RUNNING && sb->state != SB_PAUSED && sb->state != SB_SUSPENDED) {
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	if (t->set_timeout) {
		sb->timeout_s = t->timeout_s;
		if (sb->state == SB_SUSPENDED) /* its clock stands still until it resumes */
			sb->remaining_ms = (int64_t)(t->timeout_s * 1000);
		else
			sandbox_touch(sb);
	}
	if (t->set_lifetime)
		sandbox_set_lifetime(sb, t->lifetime_s);
	if (t->set_action)
		sb->timeout_kill = t->kill;
	struct job j = { .fn = timeouts_job, .sb = sb, .op = op };
	return job_start(d, &j, e);
}

void lifecycle_expire(struct daemon *d)
{
	int64_t now = now_ms();
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		if (sb->state != SB_RUNNING && sb->state != SB_PAUSED)
			continue;
		/* an open request that waits on the sandbox (an exec, an output stream, a wait, a
		 * watch) is activity for as long as it is open: the idle timeout counts from when
		 * the last one ended */
		if (peer_awaited(sb))
			sandbox_touch(sb);
		bool lifetime = sb->expires_ms > 0 && now >= sb->expires_ms;
		bool idle = sb->deadline_ms > 0 && now >= sb->deadline_ms;
		if (idle && !lifetime && sb->keepalive && proc_any_running(sb)) {
			sandbox_touch(sb); /* busy counts as activity for this sandbox */
			continue;
		}
		if (!idle && !lifetime)
			continue;
		struct err e = { 0 };
		log_info("sandbox %s: %s passed; %s", sb->id, lifetime ? "its lifetime" : "its idle timeout",
			 sb->timeout_kill ? "deleting it" : "suspending it");
		sb->deadline_ms = 0;
		if (sb->timeout_kill)
			sandbox_delete(d, sb, NULL, &e);
		else
			lifecycle_start(d, sb, ACT_SUSPEND, NULL, &e);
	}
}

void lifecycle_tick(struct daemon *d)
{
	lifecycle_expire(d);
	int64_t now = mono_ms();
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		peer_tick(d, sb, now);
}

void lifecycle_resumed(struct daemon *d, struct sandbox *sb, const struct err *e)
{
	/* Each waiting request runs once: one that defers itself again (the agent went away in the
	 * meantime) waits in sb->deferred for the next hello, not in this loop. */
	struct op *list = sb->deferred;
	sb->deferred = NULL;
	while (list) {
		struct op *op = list;
		list = op->next;
		op->next = NULL;
		op->deferred = false;
		op->sb = NULL;
		loop_timer_del(&d->loop, &op->timer);
		if (e) {
			op_fail(op, e);
			continue;
		}
		/* Run the request again, now against a running sandbox; deferred again (the agent
		 * went away), it waits for the next resume or hello. */
		op->front->retry(op);
	}
}

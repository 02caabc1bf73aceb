/*
 * daemon/core/snapshot.c - named snapshots of a running sandbox, and fork.
 *
 * A snapshot is a suspend, a copy, and a resume: the sandbox is written to
 * disk exactly as for suspend (so a crash at any point leaves it running or
 * suspended, both lossless), its image is hard-linked (images are never
 * modified after they are written) and its writable layer copied into
 * snapshots/<id>.tmp, which is synced and renamed to snapshots/<id> before
 * the snapshot is recorded. Then the sandbox is restored from its own image
 * and runs on.
 *
 * Fork takes an unrecorded snapshot and starts each new sandbox from it:
 * each gets its own copy of the writable layer, so forks share no writable
 * file with each other or with the source. A restarted spaced removes any
 * snapshot directory that has no record.
 */
#include "daemon/core/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/driver/driver.h"
#include "daemon/core/job.h"
#include "daemon/core/lifecycle.h"
#include "daemon/base/crash.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/quota.h"
#include "daemon/core/sandbox.h"
#include "lib/host/spawn.h"
#include "daemon/store/store.h"

static int run(char *const argv[])
{
	return spawn_run(argv, -1, -1) == 0 ? 0 : -EIO;
}

static void snap_dir(struct daemon *d, const char *id, char *out, size_t n)
{
	snprintf(out, n, "%s/snapshots/%s", d->cfg.state_dir, id);
}

static int new_snapshot_id(char out[SNAPSHOT_ID_LEN + 1])
{
	uint8_t r[(SNAPSHOT_ID_LEN - 2) / 2];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	snprintf(out, 3, "s-");
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 + 2 * i, 3, "%02x", r[i]);
	return 0;
}

/* Copies sb's (suspended) image and writable layer into the snapshot directory `dir`. */
static int copy_out(struct daemon *d, struct sandbox *sb, const char *dir, struct err *e)
{
	char tmp[720], image[700], upper[700], dst_image[760], parent[600];
	snprintf(parent, sizeof(parent), "%s/snapshots", d->cfg.state_dir);
	mkdir(parent, 0700);
	snprintf(tmp, sizeof(tmp), "%s.tmp", dir);
	snprintf(image, sizeof(image), "%s/checkpoint", sb->conf.dir);
	const struct driver_slot *dv = sandbox_driver(d, sb);
	driver_layer(dv, sb, upper, sizeof(upper)); /* copied as <tmp>/upper */
	snprintf(dst_image, sizeof(dst_image), "%s/image", tmp);
	char *rm[] = { "rm", "-rf", "--one-file-system", tmp, NULL };
	char *link[] = { "cp", "-al", image, dst_image, NULL };
	char *copy[] = { "cp", "-a", "--reflink=auto", upper, tmp, NULL };
	run(rm);
	if (mkdir(tmp, 0700) < 0)
		return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", tmp, strerror(errno));
	int rc = run(link);
	if (rc == 0)
		rc = run(copy);
	if (rc == 0) {
		int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = fd >= 0 && syncfs(fd) == 0 ? 0 : -EIO;
		if (fd >= 0)
			close(fd);
	}
	if (rc == 0 && rename(tmp, dir) < 0)
		rc = -errno;
	if (rc == 0) {
		int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	if (rc < 0) {
		run(rm);
		return err_set(e, ERR_INTERNAL, -rc, "copying the snapshot: %s", strerror(-rc));
	}
	return 0;
}

/* Makes st sb's state and records it, the write with d->lock released. A write that fails
 * is logged: the state is what happened, and spaced's next start finds it from the files. */
static void set_state(struct daemon *d, struct sandbox *sb, enum sb_state st, const char *reason)
{
	struct sb_record rec;
	daemon_lock(d);
	sb->state = st;
	if (st == SB_FAILED)
		snprintf(sb->reason, sizeof(sb->reason), "%s", reason ? reason : "");
	store_record(sb, &rec);
	daemon_unlock(d);
	int rc = store_save(d->store, &rec);
	if (rc < 0)
		log_warn("sandbox %s: cannot record that it is %s: %s", sb->id, sb_state_name(st), strerror(-rc));
}

/* Suspends sb, copies it out into `dir`, resumes it. Returns 0 or -errno with *e. */
static int take(struct job *j, struct sandbox *sb, const char *dir, struct err *e)
{
	struct daemon *d = j->d;
	if (job_record(j, e) < 0) {
		set_state(d, sb, SB_RUNNING, NULL);
		return -EIO;
	}
	enum sb_state st = lifecycle_do_suspend(d, sb, SB_RUNNING, e);
	set_state(d, sb, st, e->msg);
	if (st != SB_SUSPENDED)
		return e->kind ? -EIO : err_set(e, ERR_INTERNAL, EIO, "sandbox %s could not be written to disk", sb->id);

	int rc = copy_out(d, sb, dir, e);
	if (rc == 0)
		crash_point("snapshot:copied");

	set_state(d, sb, SB_RESUMING, NULL);
	struct err re = { 0 };
	st = lifecycle_do_resume(d, sb, &re);
	set_state(d, sb, st, re.msg);
	daemon_lock(d);
	lifecycle_resumed(d, sb, st == SB_RUNNING ? NULL : &re);
	daemon_unlock(d);
	if (rc == 0 && st != SB_RUNNING)
		log_warn("sandbox %s: snapshot taken, but it stays suspended: %s", sb->id, re.msg);
	return rc;
}

static void snapshot_job(struct job *j)
{
	struct daemon *d = j->d;
	struct err e = { 0 };
	char id[SNAPSHOT_ID_LEN + 1], dir[700];
	snprintf(id, sizeof(id), "%s", j->snapshot.id);
	snap_dir(d, id, dir, sizeof(dir));
	int rc = take(j, j->sb, dir, &e);
	if (rc == 0)
		crash_point("snapshot:taken");
	uint64_t bytes = 0; /* what it takes on disk, counted in its tenant's quota */
	if (rc == 0)
		quota_dir_bytes(dir, &bytes);
	if (rc == 0 && (rc = store_put_snapshot(d->store, id, j->sb, j->snapshot.name[0] ? j->snapshot.name : NULL, bytes)) < 0)
		err_set(&e, ERR_INTERNAL, -rc, "cannot record the snapshot");
	if (rc == 0)
		crash_point("snapshot:recorded");
	daemon_lock(d);
	if (rc == 0) {
		j->op->answer = ANSWER_CREATED;
		j->op->json = store_get_snapshot(d->store, id);
		op_finish(j->op);
	} else {
		op_fail(j->op, &e);
	}
	daemon_unlock(d);
}

static void fork_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *src = j->sb;
	struct err e = { 0 };
	char id[SNAPSHOT_ID_LEN + 1], dir[700];
	json_t *made = json_array();
	new_snapshot_id(id);
	snap_dir(d, id, dir, sizeof(dir));
	int rc = take(j, src, dir, &e);
	for (int i = 0; rc == 0 && i < j->fork.count; i++) {
		char rootfs[600];
		daemon_lock(d);
		struct sb_config cfg = { .cpus = src->conf.cpus, .memory_mb = src->conf.memory_mb, .disk_mb = src->conf.disk_mb, .timeout_s = src->timeout_s,
					 .lifetime_s = src->lifetime_s, .timeout_kill = src->timeout_kill,
					 .keepalive = src->keepalive, .env = src->conf.env, .metadata = src->conf.metadata,
					 .tenant = src->conf.tenant, .isolation = src->conf.isolation, /* its image is of that kind */
					 .network = src->network, .no_network = !src->network, /* and its policy */
					 .public_ports = src->public_ports,
					 .auto_resume = src->auto_resume };
		snprintf(cfg.template, sizeof(cfg.template), "%s", src->conf.template);
		struct sandbox *sb = sandbox_new(d, &cfg, rootfs, sizeof(rootfs), &e);
		daemon_unlock(d);
		if (!sb) {
			rc = -EAGAIN;
			break;
		}
		rc = sandbox_build(d, sb, rootfs, dir, &e);
		if (rc == 0)
			crash_point(i == 0 ? "fork:built-one" : "fork:built");
		if (rc == 0) {
			daemon_lock(d);
			json_array_append_new(made, sandbox_json(sb));
			daemon_unlock(d);
		}
	}
	char *rm[] = { "rm", "-rf", "--one-file-system", dir, NULL };
	run(rm);
	daemon_lock(d);
	if (rc == 0) {
		j->op->answer = ANSWER_CREATED;
		j->op->json = json_pack("{s:o}", "sandboxes", made);
		op_finish(j->op);
	} else {
		/* Forks made before the failure stay: they are listed, and say how far it got. */
		if (json_array_size(made))
			snprintf(e.msg + strlen(e.msg), sizeof(e.msg) - strlen(e.msg), " (%zu of %d forks were made)",
				 json_array_size(made), j->fork.count);
		json_decref(made);
		op_fail(j->op, &e);
	}
	daemon_unlock(d);
}

/* Starts a snapshot or fork job on sb; it must be running. [L] */
static int start(struct daemon *d, struct sandbox *sb, struct job *j, struct err *e)
{
	if (sb->state != SB_RUNNING) {
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s; only a running sandbox can be snapshotted",
			sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	/* The snapshot goes through suspending: record it before anything happens. */
	sb->state = SB_SUSPENDING;
	store_record(sb, &j->first); /* written by the job, with the lock released */
	int rc = job_start(d, j, e);
	if (rc < 0)
		sb->state = SB_RUNNING;
	return rc;
}

int snapshot_take(struct daemon *d, struct sandbox *sb, const char *name, struct op *op, struct err *e)
{
	if (sb->conf.nvolumes)
		return err_set(e, ERR_CONFLICT, EBUSY,
			       "sandbox %s mounts volumes: a sandbox with volumes cannot be snapshotted yet", sb->id);
	struct job j = { .fn = snapshot_job, .sb = sb, .op = op };
	snprintf(j.snapshot.name, sizeof(j.snapshot.name), "%s", name ? name : "");
	if (new_snapshot_id(j.snapshot.id) < 0)
		return err_set(e, ERR_INTERNAL, EIO, "no randomness for an id");
	int rc = sb->state == SB_RUNNING ? quota_snapshot(d, sb, e) : 0;
	if (rc == 0 && sb->state == SB_RUNNING)
		rc = quota_space(d, sb, 0, e);
	return rc < 0 ? rc : start(d, sb, &j, e);
}

int snapshot_fork(struct daemon *d, struct sandbox *sb, int count, struct op *op, struct err *e)
{
	if (sb->conf.nvolumes)
		return err_set(e, ERR_CONFLICT, EBUSY,
			       "sandbox %s mounts volumes: a sandbox with volumes cannot be forked yet", sb->id);
	if (d->nsandboxes + count > SPACE_MAX_SANDBOXES)
		return err_set(e, ERR_TOO_MANY, EAGAIN, "at most %d sandboxes may exist at once", SPACE_MAX_SANDBOXES);
	struct job j = { .fn = fork_job, .sb = sb, .op = op, .fork.count = count };
	int rc = sb->state == SB_RUNNING ? quota_space(d, sb, count, e) : 0;
	return rc < 0 ? rc : start(d, sb, &j, e);
}

int snapshot_path(struct daemon *d, const char *id, char *out, size_t n)
{
	json_t *s = store_get_snapshot(d->store, id);
	if (!s)
		return -ENOENT;
	json_decref(s);
	snap_dir(d, id, out, n);
	return 0;
}

static void remove_job(struct job *j)
{
	/* The record goes first, with the lock released: a crash before the files are gone
	 * leaves an unrecorded directory, which the next start removes. */
	struct err e = { 0 };
	int rc = store_delete_snapshot(j->d->store, j->snapshot.id);
	if (rc < 0) {
		err_set(&e, ERR_INTERNAL, -rc, "cannot remove snapshot %s: %s", j->snapshot.id, strerror(-rc));
	} else {
		char *rm[] = { "rm", "-rf", "--one-file-system", j->snapshot.dir, NULL };
		run(rm);
	}
	daemon_lock(j->d);
	if (rc < 0) {
		op_fail(j->op, &e);
	} else {
		j->op->answer = ANSWER_EMPTY;
		op_finish(j->op);
	}
	daemon_unlock(j->d);
}

int snapshot_remove(struct daemon *d, const char *id, struct op *op, struct err *e)
{
	struct job j = { .fn = remove_job, .op = op };
	if (snapshot_path(d, id, j.snapshot.dir, sizeof(j.snapshot.dir)) < 0)
		return err_set(e, ERR_NOT_FOUND, ENOENT, "no snapshot %s", id);
	snprintf(j.snapshot.id, sizeof(j.snapshot.id), "%s", id);
	return job_start(d, &j, e);
}

void snapshot_cleanup(struct daemon *d)
{
	char parent[600];
	snprintf(parent, sizeof(parent), "%s/snapshots", d->cfg.state_dir);
	DIR *dp = opendir(parent);
	if (!dp)
		return;
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		json_t *s = store_get_snapshot(d->store, de->d_name);
		if (s) {
			json_decref(s);
			continue;
		}
		/* half-written (.tmp), or a fork's snapshot whose fork was interrupted */
		char dir[900];
		snprintf(dir, sizeof(dir), "%s/%s", parent, de->d_name);
		log_info("removing unrecorded snapshot directory %s", dir);
		char *rm[] = { "rm", "-rf", "--one-file-system", dir, NULL };
		run(rm);
	}
	closedir(dp);
}

/*
 * daemon/core/sandbox.c - the registry of sandboxes and their creation, deletion
 * and re-adoption.
 *
 * Create and delete are jobs: the HTTP thread registers the intent (state
 * creating/deleting), starts a job thread and suspends the request; the job
 * records the intent in the store before anything else, runs the driver
 * without d->lock and finishes the request. A crash between the two leaves a creating/deleting record that
 * sandbox_adopt_all reconciles: an unconfirmed create is undone, a delete is
 * completed.
 */
#include "daemon/core/sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "daemon/net/net.h"
#include "daemon/net/policy.h"
#include "daemon/driver/disk.h"
#include "daemon/driver/driver.h"
#include "daemon/core/isolation.h"
#include "daemon/core/job.h"
#include "daemon/base/log.h"
#include "daemon/base/spawn.h"
#include "daemon/core/op.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/peer.h"
#include "daemon/core/proc.h"
#include "daemon/core/ready.h"
#include "daemon/store/store.h"
#include "daemon/store/template.h"

const struct driver_slot *sandbox_driver(struct daemon *d, const struct sandbox *sb)
{
	const struct driver_slot *k = isolation_find(d, sb->isolation);
	return k && k->ops ? k : NULL;
}

/* Why this host cannot run sb's kind (sandbox_driver is NULL). */
static const char *unrunnable_why(struct daemon *d, const struct sandbox *sb)
{
	const struct driver_slot *k = isolation_find(d, sb->isolation);
	return k ? k->why : "this spaced does not know that kind";
}

/* Fills *e for sb, whose kind this host cannot run. Returns -ENOTSUP. */
static int unrunnable(struct daemon *d, const struct sandbox *sb, struct err *e)
{
	return err_set(e, 503, "isolation_unavailable", ENOTSUP,
		       "sandbox %s is isolated by %s, which is unavailable on this host: %s", sb->id, sb->isolation,
		       unrunnable_why(d, sb));
}

struct sandbox *sandbox_find(struct daemon *d, const char *id)
{
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		if (strcmp(sb->id, id) == 0)
			return sb;
	return NULL;
}

static void registry_add(struct daemon *d, struct sandbox *sb)
{
	struct sandbox **pp = &d->sandboxes;
	while (*pp)
		pp = &(*pp)->next;
	*pp = sb;
	d->nsandboxes++;
}

static void registry_remove(struct daemon *d, struct sandbox *sb)
{
	for (struct sandbox **pp = &d->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			d->nsandboxes--;
			return;
		}
}

static json_t *time_or_null(int64_t ms)
{
	char when[32];
	if (ms <= 0)
		return json_null();
	clock_format(when, sizeof(when), ms);
	return json_string(when);
}

/* Its policy, its addresses and what it has sent and received; null for a sandbox made before
 * sandboxes had a network. */
static json_t *network_json(const struct sandbox *sb)
{
	if (!sb->network)
		return json_null();
	char reach[16];
	uint64_t out = 0, in = 0;
	net_host_reach(sb, reach, sizeof(reach));
	net_bytes(sb, &out, &in);
	json_t *o = json_deep_copy(sb->network);
	json_object_update_missing_new(o, json_pack("{s:s, s:s, s:s, s:I, s:I}", "address", NET_SANDBOX_ADDR,
						    "gateway", NET_GATEWAY_ADDR, "host_address", reach,
						    "bytes_out", (json_int_t)out, "bytes_in", (json_int_t)in));
	return o;
}

json_t *sandbox_json(const struct sandbox *sb)
{
	/* to the millisecond: creates a moment apart still list in the order they were made */
	char created[40], whole[32];
	clock_format(whole, sizeof(whole), sb->created_ms);
	snprintf(created, sizeof(created), "%.*s.%03dZ", (int)strlen(whole) - 1, whole, (int)(sb->created_ms % 1000));
	bool ticking = sb->state == SB_RUNNING || sb->state == SB_PAUSED;
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:O, s:s, s:f, s:f, s:s, s:b, s:o, s:o, s:s}", "id",
			      sb->id, "state", sb_state_name(sb->state), "template", sb->template, "cpus", sb->cpus,
			      "memory_mb", sb->memory_mb, "disk_mb", sb->disk_mb, "metadata", sb->metadata, "created_at",
			      created, "timeout", sb->timeout_s,
			      "lifetime", sb->lifetime_s, "timeout_action", sb->timeout_kill ? "kill" : "suspend",
			      "keepalive_processes", sb->keepalive, "timeout_at",
			      time_or_null(ticking ? sb->deadline_ms : 0), "expires_at",
			      time_or_null(sb->expires_ms),
			      "isolation", sb->isolation);
	json_object_set_new(o, "driver", json_string(sb->isolation)); /* isolation's older name */
	if (sb->state == SB_SUSPENDED && sb->timeout_s > 0)
		json_object_set_new(o, "timeout_left_ms", json_integer(sb->remaining_ms));
	if (sb->state == SB_FAILED)
		json_object_set_new(o, "reason", json_string(sb->reason));
	json_object_set_new(o, "network", network_json(sb));
	json_object_set_new(o, "public_ports", json_boolean(sb->public_ports));
	json_object_set_new(o, "auto_resume", json_boolean(sandbox_auto_resume(sb->d, sb)));
	json_object_set_new(o, "access_token", json_string(sb->access_token));
	json_object_set_new(o, "traffic_token", json_string(sb->traffic_token));
	return o;
}

bool sandbox_auto_resume(const struct daemon *d, const struct sandbox *sb)
{
	return sb->auto_resume < 0 ? d && d->auto_resume : sb->auto_resume != 0;
}

void sandbox_touch(struct sandbox *sb)
{
	sb->deadline_ms = sb->timeout_s > 0 ? now_ms() + (int64_t)(sb->timeout_s * 1000) : 0;
}

void sandbox_set_lifetime(struct sandbox *sb, double seconds)
{
	sb->lifetime_s = seconds;
	sb->expires_ms = seconds > 0 ? now_ms() + (int64_t)(seconds * 1000) : 0;
}


void sandbox_free(struct sandbox *sb)
{
	chan_close(&sb->chan);
	proc_free_all(sb);
	json_decref(sb->env);
	json_decref(sb->metadata);
	json_decref(sb->network);
	free(sb->start_cmd);
	free(sb->ready_cmd);
	free(sb->metrics);
	free(sb);
}

bool sandbox_usable(const struct sandbox *sb, struct err *e)
{
	if (sb->state != SB_RUNNING) {
		err_set(e, 409, "conflict", EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return false;
	}
	if (!peer_ready(sb)) {
		err_set(e, 503, "unavailable", ENOTCONN, "sandbox %s: its agent is not connected", sb->id);
		return false;
	}
	return true;
}

/* Fails every request linked to sb or its processes. [L] */
static void fail_all(struct sandbox *sb, const struct err *e)
{
	op_fail_list(&sb->deferred, e);
	op_fail_list(&sb->ops, e);
	op_fail_process_requests(sb, e);
}

void sandbox_fail(struct daemon *d, struct sandbox *sb, const char *reason)
{
	sb->state = SB_FAILED;
	snprintf(sb->reason, sizeof(sb->reason), "%s", reason);
	if (store_save_now(d->store, sb) < 0)
		log_warn("sandbox %s: cannot record that it failed", sb->id);
	struct err e = { 0 };
	err_set(&e, 500, "sandbox_failed", EIO, "sandbox %s failed: %s", sb->id, reason);
	snprintf(e.state, sizeof(e.state), "%s", sb_state_name(sb->state));
	fail_all(sb, &e);
	log_warn("sandbox %s failed: %s", sb->id, reason);
}

#define WATCH_GRACE_MS 3000   /* an agent that lost its connection is back within this */
#define WATCH_ROUNDS 10       /* grace periods to wait while the sandbox still runs */

static bool agent_back(struct sandbox *sb)
{
	return sb->chan.phase >= CHAN_GREETED || sb->state != SB_RUNNING;
}

static void watch_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	for (int round = 0; round < WATCH_ROUNDS; round++) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += WATCH_GRACE_MS / 1000;
		daemon_lock(d);
		while (!agent_back(sb) && daemon_wait(d, &until) != ETIMEDOUT)
			;
		bool back = agent_back(sb);
		if (back)
			sb->watched = false;
		daemon_unlock(d);
		if (back)
			return;
		if (dv->ops->state(dv->drv, sb) == DRV_RUNNING)
			continue; /* the sandbox runs; its agent may yet reconnect */
		char why[sizeof(sb->reason)], reason[sizeof(sb->reason)];
		dv->ops->exit_reason(dv->drv, sb, why, sizeof(why));
		struct err ignored = { 0 };
		dv->ops->stop(dv->drv, sb, &ignored);
		if (strncmp(why, "panic: ", 7) == 0) /* a microVM's kernel, in its own words */
			snprintf(reason, sizeof(reason), "panic: the guest kernel panicked (%.*s); files kept",
				 (int)sizeof(reason) - 56, why + 7);
		else
			snprintf(reason, sizeof(reason), "%s: %s", why,
				 strcmp(why, "oom") == 0 ? "the sandbox went over its memory limit on the host; files kept"
				 : strcmp(why, "pids") == 0 ? "the sandbox went over its process limit on the host; files kept"
							   : "every process of the sandbox ended; files kept");
		daemon_lock(d);
		if (sb->state == SB_RUNNING && sb->chan.phase < CHAN_GREETED)
			sandbox_fail(d, sb, reason);
		sb->watched = false;
		daemon_unlock(d);
		return;
	}
	daemon_lock(d);
	sb->watched = false;
	daemon_unlock(d);
}

void sandbox_watch(struct daemon *d, struct sandbox *sb)
{
	if (sb->watched || sb->state != SB_RUNNING)
		return;
	struct job j = { .fn = watch_job, .sb = sb };
	struct err e = { 0 };
	if (job_start(d, &j, &e) == 0)
		sb->watched = true;
}

bool sandbox_wait(struct daemon *d, struct sandbox *sb, bool (*cond)(struct sandbox *), int timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (!cond(sb))
		if (daemon_wait(d, &until) == ETIMEDOUT)
			return cond(sb);
	return true;
}

static bool ping_settled(struct sandbox *sb)
{
	return !sb->peer.ping_ms || sb->state != SB_RUNNING;
}

static void nudge_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	struct err e = { 0 };
	int rc = dv->ops->wake(dv->drv, sb, &e);
	if (rc == -ENOSPC) {
		/* whole, and waiting for room on the host's disk: not hung. Asked again after a
		 * fresh ping's deadline (or sooner, by the probe), and continued once there is room */
		log_warn("sandbox %s: %s", sb->id, e.msg);
		daemon_lock(d);
		sb->peer.ping_ms = 0;
		sb->peer.nudging = false;
		daemon_unlock(d);
		return;
	}
	if (rc < 0)
		log_warn("sandbox %s: continuing its agent: %s", sb->id, e.msg);
	daemon_lock(d);
	/* answered, gone, or in another state: whoever changed that took charge */
	bool hung = !sandbox_wait(d, sb, ping_settled, AGENT_DEADLINE_MS);
	if (!hung) {
		if (sb->state == SB_RUNNING && peer_ready(sb))
			log_warn("sandbox %s: its agent had stopped answering; continued", sb->id);
		sb->peer.nudging = false;
		daemon_unlock(d);
		return;
	}
	/* failed first, so the connection dropping as it stops is not taken for a crash */
	sandbox_fail(d, sb, "unresponsive: its agent stopped answering (stopped or starved from inside); files kept");
	daemon_unlock(d);
	struct err ignored = { 0 };
	dv->ops->stop(dv->drv, sb, &ignored);
	daemon_lock(d);
	sb->peer.nudging = false;
	daemon_unlock(d);
}

void sandbox_unresponsive(struct daemon *d, struct sandbox *sb)
{
	if (sb->peer.nudging || sb->state != SB_RUNNING)
		return;
	log_warn("sandbox %s: its agent has not answered for %d s", sb->id, AGENT_DEADLINE_MS / 1000);
	struct job j = { .fn = nudge_job, .sb = sb };
	struct err e = { 0 };
	if (job_start(d, &j, &e) == 0)
		sb->peer.nudging = true;
}

static void probe_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	char st = '?';
	int rc = dv->ops->pid1_state ? dv->ops->pid1_state(dv->drv, sb, &st) : -ENOTSUP;
	if (rc == 0 && (st == 'T' || st == 't')) {
		/* stopped from inside, perhaps by whatever now answers on its socket: continue it; it
		 * finds its connection gone and takes the channel back. A VM that a write of its
		 * disk stopped is continued once the host has room (until then the nudge says so). */
		struct err e = { 0 };
		int w = dv->ops->wake(dv->drv, sb, &e);
		if (w == 0)
			log_warn("sandbox %s: its PID 1 (a VM: the guest) was stopped; continued it", sb->id);
		else if (w != -ENOSPC)
			log_warn("sandbox %s: continuing its PID 1: %s", sb->id, e.msg);
	}
	daemon_lock(d);
	sb->peer.probing = false;
	daemon_unlock(d);
}

void sandbox_probe(struct daemon *d, struct sandbox *sb)
{
	if (sb->peer.probing || sb->state != SB_RUNNING)
		return;
	struct job j = { .fn = probe_job, .sb = sb };
	struct err e = { 0 };
	if (job_start(d, &j, &e) == 0)
		sb->peer.probing = true;
}


void sandbox_retire(struct daemon *d, struct sandbox *sb)
{
	sb->dead = true;
	chan_close(&sb->chan);
	sb->grave = d->graveyard;
	d->graveyard = sb;
	loop_wake(&d->loop);
}

void sandbox_reap(struct daemon *d)
{
	daemon_lock(d);
	struct sandbox *g = d->graveyard, *keep = NULL, *free_list = NULL;
	d->graveyard = NULL;
	while (g) {
		/* a job still holding it finishes first; a later pass frees it */
		struct sandbox *next = g->grave;
		struct sandbox **to = g->refs > 0 ? &keep : &free_list;
		g->grave = *to;
		*to = g;
		g = next;
	}
	d->graveyard = keep;
	daemon_unlock(d);
	while (free_list) {
		struct sandbox *next = free_list->grave;
		sandbox_free(free_list);
		free_list = next;
	}
}

/* n/2 random bytes as n hex characters and a NUL. */
static int random_hex(char *out, size_t n)
{
	uint8_t r[SANDBOX_TOKEN_LEN / 2];
	if (n / 2 > sizeof(r) || getrandom(r, n / 2, 0) != (ssize_t)(n / 2))
		return -EIO;
	for (size_t i = 0; i < n / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

static int new_id(char out[SANDBOX_ID_LEN + 1])
{
	return random_hex(out, SANDBOX_ID_LEN);
}

/* Ready: connected and its process list applied, so a listing right after is complete. */
static bool agent_ready(struct sandbox *sb)
{
	return peer_ready(sb);
}

/* A sandbox restored from another one's image takes its own name, and fresh randomness,
 * from its agent (a driver without a rename of its own: a VM's agent may set its host
 * name). [L] */
static int rename_inside(struct daemon *d, struct sandbox *sb, struct err *e)
{
	struct sp_identity id;
	if (getrandom(id.seed, sizeof(id.seed), 0) != (ssize_t)sizeof(id.seed))
		return err_set(e, 500, "internal", EIO, "getrandom: %s", strerror(errno));
	return peer_request(d, sb, "taking its own name", SP_H_IDENTITY, &id, sizeof(id), sb->id, strlen(sb->id) + 1,
			    AGENT_HELLO_TIMEOUT_MS, e);
}

int sandbox_build(struct daemon *d, struct sandbox *sb, const char *rootfs, const char *snapshot, struct err *e)
{
	/* First recorded here, with the lock released: nothing changes a creating sandbox
	 * (every action on it is refused), and a crash before this leaves nothing behind. */
	int rc = store_put_sandbox(d->store, sb);
	if (rc < 0) {
		err_set(e, 500, "internal", -rc, "cannot record the sandbox: %s", strerror(-rc));
		daemon_lock(d);
		registry_remove(d, sb);
		sandbox_retire(d, sb);
		daemon_unlock(d);
		return rc;
	}
	/* a snapshot's writable layer becomes this sandbox's own copy */
	char seed[700];
	if (snapshot)
		snprintf(seed, sizeof(seed), "%s/upper", snapshot);
	const struct driver_slot *dv = sandbox_driver(d, sb); /* picked at create: it runs here */
	bool restored = false; /* from an image that waits for its identity */
	rc = dv->ops->create(dv->drv, sb, rootfs, snapshot ? seed : NULL, e);
	if (rc == 0) {
		daemon_lock(d);
		rc = peer_listen(d, sb);
		daemon_unlock(d);
		if (rc < 0)
			err_set(e, 500, "internal", -rc, "agent socket: %s", strerror(-rc));
	}
	if (rc == 0 && snapshot) {
		char image[700];
		snprintf(image, sizeof(image), "%s/image", snapshot);
		rc = dv->ops->restore(dv->drv, sb, image, e);
		if (rc == 0 && dv->ops->rename) /* it wakes up as the sandbox it was copied from */
			rc = dv->ops->rename(dv->drv, sb, e);
	} else if (rc == 0) {
		rc = dv->ops->start(dv->drv, sb, e);
		restored = rc == DRIVER_RESTORED;
		if (restored)
			rc = 0;
	}
	daemon_lock(d);
	if (rc == 0 && !sandbox_wait(d, sb, agent_ready, driver_hello_ms(dv->ops)))
		rc = err_set(e, 500, "internal", ETIMEDOUT, "sandbox %s: the agent did not connect within %d s",
			     sb->id, driver_hello_ms(dv->ops) / 1000);
	if (rc == 0 && (restored || (snapshot && !dv->ops->rename)))
		rc = rename_inside(d, sb, e);
	if (rc == 0 && !snapshot && (sb->start_cmd || sb->ready_cmd))
		rc = ready_run(d, sb, sb->start_cmd, sb->ready_cmd, e); /* a snapshot's come back running */
	free(sb->start_cmd);
	free(sb->ready_cmd);
	sb->start_cmd = sb->ready_cmd = NULL;
	if (rc == 0) {
		/* written with the lock released, while it still shows creating; a create that
		 * cannot be recorded is undone, or the next start would find it half made */
		struct sb_record rec;
		store_record(sb, &rec);
		rec.state = SB_RUNNING;
		daemon_unlock(d);
		if ((rc = store_save(d->store, &rec)) < 0)
			err_set(e, 500, "internal", -rc, "cannot record sandbox %s: %s", sb->id, strerror(-rc));
		daemon_lock(d);
		if (rc == 0) {
			sb->state = SB_RUNNING;
			daemon_unlock(d);
			return 0;
		}
	}
	/* An unconfirmed create is undone completely, or kept failed if that does not finish. */
	sb->state = SB_DELETING;
	daemon_unlock(d);
	log_warn("sandbox %s: create failed: %s", sb->id, e->msg);
	struct err left = { 0 };
	if (sandbox_destroy(d, sb, &left) < 0)
		log_warn("sandbox %s: undoing the create: %s; kept as failed", sb->id, left.msg);
	return rc;
}

static void create_job(struct job *j)
{
	struct daemon *d = j->d;
	struct err e = { 0 };
	json_t *answer = NULL;
	int rc = sandbox_build(d, j->sb, j->text, j->text2[0] ? j->text2 : NULL, &e);
	daemon_lock(d);
	if (rc == 0)
		answer = sandbox_json(j->sb); /* j->sb is gone after a failure */
	if (rc == 0) {
		j->op->status = 201;
		j->op->json = answer;
		op_finish(j->op);
	} else {
		op_fail(j->op, &e);
	}
	daemon_unlock(d);
}

int sandbox_destroy(struct daemon *d, struct sandbox *sb, struct err *e)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);
	int rc = dv ? dv->ops->destroy(dv->drv, sb, e) : unrunnable(d, sb, e);
	if (rc == 0 && (rc = store_delete_sandbox(d->store, sb->id)) < 0) /* outside the lock */
		err_set(e, 500, "internal", -rc, "its files are gone, but its record could not be removed: %s", strerror(-rc));
	daemon_lock(d);
	if (rc < 0) {
		/* the record stays until a destroy finishes: what is left is never unaccounted for */
		sb->state = SB_FAILED;
		snprintf(sb->reason, sizeof(sb->reason), SANDBOX_UNDESTROYED "%s", e->msg);
		store_save_now(d->store, sb);
	} else {
		registry_remove(d, sb);
		sandbox_retire(d, sb);
	}
	daemon_unlock(d);
	return rc;
}

bool sandbox_undestroyed(const struct sandbox *sb)
{
	return sb->state == SB_DELETING ||
	       (sb->state == SB_FAILED && strncmp(sb->reason, SANDBOX_UNDESTROYED, strlen(SANDBOX_UNDESTROYED)) == 0);
}

static void delete_job(struct job *j)
{
	struct daemon *d = j->d;
	struct err e = { 0 };
	int rc = job_record(j, &e);
	if (rc < 0) {
		/* nothing was done: it is as it was (the store still says so) */
		daemon_lock(d);
		j->sb->state = (enum sb_state)j->count;
		daemon_unlock(d);
	} else {
		rc = sandbox_destroy(d, j->sb, &e); /* the job's reference keeps j->sb */
	}
	daemon_lock(d);
	if (j->op && rc < 0) {
		op_fail(j->op, &e);
	} else if (j->op) {
		j->op->status = 204;
		op_finish(j->op);
	}
	daemon_unlock(d);
}

/* The defaults a process of sb gets from its template's config (store_put_template): the
 * image's working folder (an absolute path) and its user ("UID:GID", numbers). */
static void take_defaults(struct sandbox *sb, const json_t *tpl)
{
	const char *wd = json_string_value(json_object_get(tpl, "workdir"));
	const char *user = json_string_value(json_object_get(tpl, "user"));
	if (wd && wd[0] == '/' && strlen(wd) < sizeof(sb->workdir))
		snprintf(sb->workdir, sizeof(sb->workdir), "%s", wd);
	unsigned long u, g;
	char end;
	if (user && sscanf(user, "%lu:%lu%c", &u, &g, &end) == 2 && u < 0xffffffffu && g < 0xffffffffu) {
		sb->has_user = true;
		sb->uid = (uint32_t)u;
		sb->gid = (uint32_t)g;
	}
}

int sandbox_room(struct daemon *d, const char *tenant, struct err *e)
{
	if (tenant && *tenant) {
		int owned = 0;
		for (struct sandbox *o = d->sandboxes; o; o = o->next)
			owned += strcmp(o->tenant, tenant) == 0;
		if (owned >= TENANT_MAX_SANDBOXES)
			return err_set(e, 429, "too_many", EAGAIN, "a tenant may have at most %d sandboxes",
				       TENANT_MAX_SANDBOXES);
	}
	return 0;
}

/* A copy of base with over's entries put in, name by name. */
static json_t *merged_env(const json_t *base, const json_t *over)
{
	json_t *env = json_object_size(base) ? json_deep_copy(base) : json_object();
	if (env && json_object_size(over))
		json_object_update(env, (json_t *)over);
	return env;
}

int sandbox_claim(struct daemon *d, struct sandbox *sb, const struct sb_config *cfg, struct err *e)
{
	char token[SANDBOX_TOKEN_LEN + 1], traffic[SANDBOX_TOKEN_LEN + 1];
	json_t *env = merged_env(sb->env, cfg->env), *meta = json_deep_copy(cfg->metadata);
	if (!env || !meta || random_hex(token, SANDBOX_TOKEN_LEN) < 0 || random_hex(traffic, SANDBOX_TOKEN_LEN) < 0) {
		json_decref(env);
		json_decref(meta);
		return err_set(e, 500, "internal", EIO, "cannot claim sandbox %s: out of memory or randomness", sb->id);
	}
	json_decref(sb->env);
	json_decref(sb->metadata);
	sb->env = env;
	sb->metadata = meta;
	snprintf(sb->access_token, sizeof(sb->access_token), "%s", token);
	snprintf(sb->traffic_token, sizeof(sb->traffic_token), "%s", traffic);
	snprintf(sb->tenant, sizeof(sb->tenant), "%s", cfg->tenant ? cfg->tenant : "");
	sb->timeout_s = cfg->timeout_s;
	sb->lifetime_s = cfg->lifetime_s;
	sb->timeout_kill = cfg->timeout_kill;
	sb->keepalive = cfg->keepalive;
	sb->public_ports = cfg->public_ports;
	sb->auto_resume = cfg->auto_resume;
	sb->created_ms = now_ms(); /* its lifetime counts from the claim */
	sandbox_set_lifetime(sb, cfg->lifetime_s);
	sandbox_touch(sb);
	(void)d;
	return 0;
}

void sandbox_forget(struct daemon *d, struct sandbox *sb)
{
	registry_remove(d, sb);
	sandbox_free(sb);
}

struct sandbox *sandbox_new(struct daemon *d, const struct sb_config *cfg, char *rootfs, size_t n, struct err *e)
{
	if (d->nsandboxes >= SPACE_MAX_SANDBOXES) {
		err_set(e, 429, "too_many", EAGAIN, "at most %d sandboxes may exist at once", SPACE_MAX_SANDBOXES);
		return NULL;
	}
	if (sandbox_room(d, cfg->tenant, e) < 0)
		return NULL;
	if (template_rootfs(d, cfg->template, rootfs, n) < 0) {
		err_set(e, 404, "not_found", ENOENT, "template %s does not exist", cfg->template);
		return NULL;
	}
	struct sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		err_set(e, 500, "internal", ENOMEM, "out of memory");
		return NULL;
	}
	sb->d = d;
	peer_init(sb);
	do {
		if (new_id(sb->id) < 0) {
			free(sb);
			err_set(e, 500, "internal", EIO, "no randomness for an id");
			return NULL;
		}
	} while (sandbox_find(d, sb->id));
	snprintf(sb->template, sizeof(sb->template), "%s", cfg->template);
	snprintf(sb->isolation, sizeof(sb->isolation), "%s", cfg->isolation ? cfg->isolation : d->isolation->kind);
	snprintf(sb->tenant, sizeof(sb->tenant), "%s", cfg->tenant ? cfg->tenant : "");
	sb->cpus = cfg->cpus;
	sb->memory_mb = cfg->memory_mb;
	/* 0 from a snapshot taken before disks: the default */
	sb->disk_mb = cfg->disk_mb >= DISK_MIN_MB ? cfg->disk_mb : DISK_DEFAULT_MB;
	sb->timeout_s = cfg->timeout_s;
	sb->lifetime_s = cfg->lifetime_s;
	sb->timeout_kill = cfg->timeout_kill;
	sb->keepalive = cfg->keepalive;
	sandbox_set_lifetime(sb, cfg->lifetime_s); /* counted from now, as created_ms below */
	sandbox_touch(sb);
	/* an image's environment is every sandbox's of it; the create's own wins (template.h) */
	json_t *tpl = store_template_config(d->store, cfg->template), *tenv = json_object_get(tpl, "env");
	sb->env = merged_env(tenv, cfg->env);
	take_defaults(sb, tpl);
	const char *start = json_string_value(json_object_get(tpl, "start"));
	const char *ready = json_string_value(json_object_get(tpl, "ready"));
	sb->start_cmd = start && *start && !cfg->snapshot ? strdup(start) : NULL; /* core/ready.h */
	sb->ready_cmd = ready && *ready && !cfg->snapshot ? strdup(ready) : NULL;
	json_decref(tpl);
	sb->metadata = json_deep_copy(cfg->metadata);
	sb->net_slot = -1;
	if (!cfg->no_network)
		sb->network = cfg->network ? json_deep_copy(cfg->network)
					   : json_pack("{s:s, s:[], s:[]}", "egress", net_egress_name(d->default_egress),
						       "allow", "deny");
	snprintf(sb->net_transit, sizeof(sb->net_transit), "%s", d->net_transit);
	sb->public_ports = cfg->public_ports;
	sb->auto_resume = cfg->auto_resume;
	if (random_hex(sb->access_token, SANDBOX_TOKEN_LEN) < 0 || random_hex(sb->traffic_token, SANDBOX_TOKEN_LEN) < 0) {
		sandbox_free(sb);
		err_set(e, 500, "internal", EIO, "no randomness for an access token");
		return NULL;
	}
	if (sb->network && (sb->net_slot = net_slot_pick(d)) < 0) {
		sandbox_free(sb);
		err_set(e, 503, "unavailable", ENOSPC, "no network slot is free (%d sandboxes have one)", NET_SLOTS);
		return NULL;
	}
	sb->created_ms = now_ms();
	sb->state = SB_CREATING;
	snprintf(sb->dir, sizeof(sb->dir), "%s/sandboxes/%s", d->state_dir, sb->id);
	registry_add(d, sb); /* recorded by sandbox_build */
	return sb;
}

int sandbox_create(struct daemon *d, const struct sb_config *cfg, struct op *op, struct err *e)
{
	struct job j = { .fn = create_job, .op = op };
	j.sb = sandbox_new(d, cfg, j.text, sizeof(j.text), e);
	if (!j.sb)
		return -EINVAL;
	if (cfg->snapshot)
		snprintf(j.text2, sizeof(j.text2), "%s", cfg->snapshot);
	int rc = job_start(d, &j, e);
	if (rc < 0)
		sandbox_forget(d, j.sb);
	return rc;
}

static void network_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	struct err e = { 0 };
	int rc = net_apply_policy(d, sb, j->json, &e); /* sb->network is read under the lock only */
	daemon_lock(d);
	sb->net_changing = false;
	if (rc < 0) {
		op_fail(j->op, &e);
	} else {
		json_decref(sb->network);
		sb->network = json_incref(j->json);
		if (store_put_network(d->store, sb) < 0)
			log_warn("sandbox %s: its new network policy applies but could not be recorded", sb->id);
		j->op->status = 200;
		j->op->json = sandbox_json(sb);
		op_finish(j->op);
	}
	daemon_unlock(d);
	json_decref(j->json);
}

int sandbox_set_network(struct daemon *d, struct sandbox *sb, const json_t *policy, struct op *op, struct err *e)
{
	if (sb->state == SB_CREATING || sb->state == SB_DELETING || sb->state == SB_FAILED) {
		err_set(e, 409, "conflict", EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	if (sb->net_changing)
		return err_set(e, 409, "conflict", EBUSY, "sandbox %s: a change of its network is under way", sb->id);
	struct job j = { .fn = network_job, .sb = sb, .op = op, .json = json_deep_copy(policy) };
	int rc = j.json ? job_start(d, &j, e) : err_set(e, 500, "internal", ENOMEM, "out of memory");
	if (rc < 0)
		json_decref(j.json);
	else
		sb->net_changing = true;
	return rc;
}

int sandbox_delete(struct daemon *d, struct sandbox *sb, struct op *op, struct err *e)
{
	enum sb_state via;
	if (!sandbox_driver(d, sb)) /* its files and runtime wait, untouched, for a spaced that runs it */
		return unrunnable(d, sb, e);
	if (state_begin(sb->state, ACT_DELETE, &via) != STATE_BEGIN) {
		/* deleting already: the first delete answers; a second one is told why not */
		err_set(e, 409, "conflict", EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	enum sb_state old = sb->state;
	sb->state = SB_DELETING;
	struct err gone = { 0 };
	err_set(&gone, 404, "not_found", ENOENT, "sandbox %s was deleted", sb->id);
	snprintf(gone.state, sizeof(gone.state), "%s", sb_state_name(sb->state));
	fail_all(sb, &gone);
	struct job j = { .fn = delete_job, .sb = sb, .op = op, .count = (int)old };
	store_record(sb, &j.first); /* written by the job, with the lock released */
	int rc = job_start(d, &j, e);
	if (rc < 0)
		sb->state = old;
	return rc;
}

void sandbox_delete_marked(struct daemon *d, const char *key, const char *what)
{
	daemon_lock(d);
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		if (!json_object_get(sb->metadata, key) || sb->state == SB_DELETING)
			continue;
		struct err e = { 0 };
		if (sandbox_delete(d, sb, NULL, &e) < 0)
			log_warn("sandbox %s %s stays: %s", sb->id, what, e.msg);
		else
			log_info("sandbox %s %s is removed", sb->id, what);
	}
	daemon_unlock(d);
}

int sandbox_sync_layer(struct daemon *d, struct sandbox *sb)
{
	char upper[700];
	const struct driver_slot *dv = sandbox_driver(d, sb);
	dv->ops->layer(dv->drv, sb, upper, sizeof(upper));
	int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = syncfs(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Whether dir holds a file called name. */
static bool is_file_in(const char *dir, const char *name)
{
	char p[760];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Where a sandbox recorded in state `st` really is, given what the driver says
 * and which images are on disk. Every answer is the old state or the new one of
 * the interrupted transition, except when the processes are gone: then failed.
 */
static enum sb_state reconcile(struct daemon *d, struct sandbox *sb, enum driver_state ds)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);
	char image[700], tmp[720];
	snprintf(image, sizeof(image), "%s/checkpoint", sb->dir);
	snprintf(tmp, sizeof(tmp), "%s/checkpoint.tmp", sb->dir);
	bool have_image = is_dir(image);
	struct err e = { 0 };

	switch (sb->state) {
	case SB_RUNNING:
	case SB_PAUSING:
	case SB_PAUSED:
		return ds == DRV_RUNNING ? SB_RUNNING : ds == DRV_PAUSED ? SB_PAUSED : SB_FAILED;
	case SB_RESUMING:
		if (ds == DRV_RUNNING)
			return SB_RUNNING;
		if (ds == DRV_PAUSED) /* restored but not yet continued (a microVM's -S): finish it */
			return dv->ops->resume(dv->drv, sb, &e) == 0 ? SB_RUNNING : SB_PAUSED;
		if (have_image) {
			dv->ops->stop(dv->drv, sb, &e);
			return SB_SUSPENDED;
		}
		return SB_FAILED;
	case SB_SUSPENDING:
		/* only a marked image is whole and synced (lifecycle.c); anything else is not one */
		have_image = have_image && is_file_in(image, LIFECYCLE_IMAGE_MARK);
		if (!have_image && ds == DRV_RUNNING)
			return SB_RUNNING; /* the checkpoint had not happened: the agent reconnects */
		if (!have_image && is_file_in(tmp, LIFECYCLE_IMAGE_MARK) && rename(tmp, image) == 0)
			have_image = true; /* whole and synced; only its publishing was cut short */
		if (!have_image && ds == DRV_PAUSED && dv->ops->resume(dv->drv, sb, &e) == 0) {
			/* stopped for a checkpoint that was never published, its memory still held (a
			 * microVM after its migration): it goes on from where it stopped */
			log_info("sandbox %s: its interrupted suspend was undone; it runs on from memory", sb->id);
			return SB_RUNNING;
		}
		if (!have_image && is_dir(tmp) && (ds == DRV_STOPPED || ds == DRV_ABSENT) &&
		    dv->ops->stop(dv->drv, sb, &e) == 0 && sandbox_sync_layer(d, sb) == 0 &&
		    dv->ops->prepare(dv->drv, sb, &e) == 0 && dv->ops->restore(dv->drv, sb, tmp, &e) == 0) {
			/* runsc stopped it (a microVM's QEMU ended) for a checkpoint that may or may
			 * not have finished: the image is never trusted as a suspend, but a restore
			 * that takes proves it whole, and the sandbox runs on from where it stopped,
			 * its files as they were then */
			log_info("sandbox %s: its interrupted suspend was undone from the unpublished image", sb->id);
			return SB_RUNNING;
		}
		if (!have_image)
			return SB_FAILED;
		dv->ops->stop(dv->drv, sb, &e);
		return SB_SUSPENDED;
	case SB_SUSPENDED:
		if (ds != DRV_ABSENT)
			dv->ops->stop(dv->drv, sb, &e);
		return have_image ? SB_SUSPENDED : SB_FAILED;
	default:
		return sb->state;
	}
}

/* Brings one recorded sandbox in line with what the driver says runs. */
static void adopt(struct daemon *d, struct sandbox *sb)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);

	if (sb->state == SB_CREATING || sb->state == SB_DELETING) {
		/* A create never confirmed or a delete under way: the sweep after adoption finishes
		 * it by destroying it (core/sweep.c), or keeps it failed if that does not finish. */
		log_info("sandbox %s: was %s when spaced stopped; removing it", sb->id, sb_state_name(sb->state));
		sb->state = SB_DELETING;
		registry_add(d, sb);
		return;
	}
	if (!dv) {
		/* Its kind cannot run under this spaced: neither it nor its record is touched, so a
		 * spaced that runs its kind again adopts it as it was. Until then it shows failed. */
		log_warn("sandbox %s: isolation %s is unavailable on this host: %s; left %s as it was", sb->id,
			 sb->isolation, unrunnable_why(d, sb), sb_state_name(sb->state));
		snprintf(sb->reason, sizeof(sb->reason), "isolation %s is unavailable on this host (it was %s): %s",
			 sb->isolation, sb_state_name(sb->state), unrunnable_why(d, sb));
		sb->state = SB_FAILED;
		registry_add(d, sb);
		return;
	}
	enum driver_state ds = dv->ops->state(dv->drv, sb);
	enum sb_state was = sb->state;
	enum sb_state now = reconcile(d, sb, ds);
	if (now != was || was != SB_FAILED) {
		if (now == SB_FAILED && was != SB_FAILED)
			snprintf(sb->reason, sizeof(sb->reason),
				 "its processes were gone when spaced started (it was %s); files kept", sb_state_name(was));
		sb->state = now;
		if (now != was) {
			if (store_save_now(d->store, sb) < 0)
				log_warn("sandbox %s: cannot record that it is now %s", sb->id, sb_state_name(now));
			log_info("sandbox %s: was %s, now %s", sb->id, sb_state_name(was), sb_state_name(now));
		}
	}
	registry_add(d, sb);
	struct err ne = { 0 };
	if (sb->network && net_apply(d, sb, &ne) < 0) /* net_init made the host's table afresh */
		log_warn("sandbox %s: cannot put its network policy back: %s", sb->id, ne.msg);
	if (sb->state == SB_RUNNING || sb->state == SB_PAUSED) {
		sandbox_touch(sb); /* the idle timeout starts again with the new spaced */
		int rc = peer_listen(d, sb);
		if (rc < 0)
			log_warn("sandbox %s: cannot listen for its agent: %s", sb->id, strerror(-rc));
		else
			log_info("sandbox %s: adopted (%s)", sb->id, sb_state_name(sb->state));
	}
}

/* A sandbox recorded before it had a token of a kind gets one, recorded before it is served. */
static void give_tokens(struct daemon *d, struct sandbox *sb)
{
	char *const tokens[] = { sb->access_token, sb->traffic_token };
	int made = 0;
	for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		if (tokens[i][0] != '\0')
			continue;
		if (random_hex(tokens[i], SANDBOX_TOKEN_LEN) < 0)
			log_warn("sandbox %s: no randomness for a token; what it guards stays closed", sb->id);
		else
			made++;
	}
	if (made && store_put_sandbox(d->store, sb) < 0)
		log_warn("sandbox %s: cannot record its new tokens", sb->id);
}

int sandbox_adopt_all(struct daemon *d)
{
	struct sandbox *list = NULL;
	int rc = store_load_sandboxes(d->store, &list);
	if (rc < 0)
		return rc;
	for (struct sandbox *sb = list; sb; sb = sb->next) {
		json_t *tpl = store_template_config(d->store, sb->template);
		take_defaults(sb, tpl);
		json_decref(tpl);
		give_tokens(d, sb);
	}
	daemon_lock(d);
	while (list) {
		struct sandbox *sb = list;
		list = sb->next;
		sb->next = NULL;
		sb->d = d;
		peer_init(sb);
		snprintf(sb->dir, sizeof(sb->dir), "%s/sandboxes/%s", d->state_dir, sb->id);
		adopt(d, sb);
	}
	daemon_unlock(d);
	return 0;
}

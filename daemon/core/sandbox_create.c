/*
 * daemon/core/sandbox_create.c - creating and deleting sandboxes.
 *
 * Create and delete are jobs: the HTTP thread registers the intent (state
 * creating/deleting), starts a job thread and suspends the request; the job
 * records the intent in the store before anything else, runs the driver
 * without d->lock and finishes the request. A crash between the two leaves a creating/deleting record that
 * sandbox_adopt_all reconciles (sandbox_adopt.c): an unconfirmed create is undone, a delete is
 * completed. A warm pool's sandbox is given to its creator by sandbox_claim.
 */
#include "daemon/core/sandbox.h"
#include "daemon/core/sandbox_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "daemon/net/net.h"
#include "daemon/net/policy.h"
#include "daemon/driver/disk.h"
#include "daemon/driver/driver.h"
#include "daemon/core/job.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"
#include "daemon/core/ready.h"
#include "daemon/store/template.h"

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
		return err_set(e, ERR_INTERNAL, EIO, "getrandom: %s", strerror(errno));
	return peer_request(d, sb, "taking its own name", SP_H_IDENTITY, &id, sizeof(id), sb->id, strlen(sb->id) + 1,
			    AGENT_HELLO_TIMEOUT_MS, e);
}

int sandbox_build(struct daemon *d, struct sandbox *sb, const char *rootfs, const char *snapshot, struct err *e)
{
	/* First recorded here, with the lock released: nothing changes a creating sandbox
	 * (every action on it is refused), and a crash before this leaves nothing behind. */
	int rc = store_put_sandbox(d->store, sb);
	if (rc < 0) {
		err_set(e, ERR_INTERNAL, -rc, "cannot record the sandbox: %s", strerror(-rc));
		daemon_lock(d);
		sandbox_registry_remove(d, sb);
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
	rc = driver_create(dv, sb, rootfs, snapshot ? seed : NULL, e);
	if (rc == 0) {
		daemon_lock(d);
		rc = peer_listen(d, sb);
		daemon_unlock(d);
		if (rc < 0)
			err_set(e, ERR_INTERNAL, -rc, "agent socket: %s", strerror(-rc));
	}
	bool booting = rc == 0;
	if (booting) /* its turn to boot: the hello deadline counts from here (core/starts.h) */
		starts_enter(&d->starts);
	if (rc == 0 && snapshot) {
		char image[700];
		snprintf(image, sizeof(image), "%s/image", snapshot);
		rc = driver_restore(dv, sb, image, e);
		if (rc == 0) /* it wakes up as the sandbox it was copied from */
			rc = driver_rename(dv, sb, e);
	} else if (rc == 0) {
		rc = driver_start(dv, sb, e);
		restored = rc == DRIVER_RESTORED;
		if (restored)
			rc = 0;
	}
	daemon_lock(d);
	if (rc == 0 && !sandbox_wait(d, sb, agent_ready, driver_hello_ms(dv->ops)))
		rc = err_set(e, ERR_INTERNAL, ETIMEDOUT, "sandbox %s: the agent did not connect within %d s",
			     sb->id, driver_hello_ms(dv->ops) / 1000);
	if (booting)
		starts_leave(&d->starts);
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
			err_set(e, ERR_INTERNAL, -rc, "cannot record sandbox %s: %s", sb->id, strerror(-rc));
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
	int rc = sandbox_build(d, j->sb, j->create.rootfs, j->create.snapshot[0] ? j->create.snapshot : NULL, &e);
	daemon_lock(d);
	if (rc == 0)
		answer = sandbox_json(j->sb); /* j->sb is gone after a failure */
	if (rc == 0) {
		j->op->answer = ANSWER_CREATED;
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
	int rc = dv ? driver_destroy(dv, sb, e) : sandbox_unrunnable(d, sb, e);
	if (rc == 0 && (rc = store_delete_sandbox(d->store, sb->id)) < 0) /* outside the lock */
		err_set(e, ERR_INTERNAL, -rc, "its files are gone, but its record could not be removed: %s", strerror(-rc));
	daemon_lock(d);
	if (rc < 0) {
		/* the record stays until a destroy finishes: what is left is never unaccounted for */
		sb->state = SB_FAILED;
		snprintf(sb->reason, sizeof(sb->reason), SANDBOX_UNDESTROYED "%s", e->msg);
		store_save_now(d->store, sb);
	} else {
		sandbox_registry_remove(d, sb);
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
		j->sb->state = j->from;
		daemon_unlock(d);
	} else {
		rc = sandbox_destroy(d, j->sb, &e); /* the job's reference keeps j->sb */
	}
	daemon_lock(d);
	if (j->op && rc < 0) {
		op_fail(j->op, &e);
	} else if (j->op) {
		j->op->answer = ANSWER_EMPTY;
		op_finish(j->op);
	}
	daemon_unlock(d);
}

/* The defaults a process of sb gets from its template's config (store_put_template): the
 * image's working folder (an absolute path) and its user ("UID:GID", numbers). */
void sandbox_take_defaults(struct sandbox *sb, const json_t *tpl)
{
	const char *wd = json_string_value(json_object_get(tpl, "workdir"));
	const char *user = json_string_value(json_object_get(tpl, "user"));
	if (wd && wd[0] == '/' && strlen(wd) < sizeof(sb->conf.workdir))
		snprintf(sb->conf.workdir, sizeof(sb->conf.workdir), "%s", wd);
	unsigned long u, g;
	char end;
	if (user && sscanf(user, "%lu:%lu%c", &u, &g, &end) == 2 && u < 0xffffffffu && g < 0xffffffffu) {
		sb->conf.has_user = true;
		sb->conf.uid = (uint32_t)u;
		sb->conf.gid = (uint32_t)g;
	}
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
	json_t *env = merged_env(sb->conf.env, cfg->env), *meta = json_deep_copy(cfg->metadata);
	if (!env || !meta || sandbox_random_hex(token, SANDBOX_TOKEN_LEN) < 0 || sandbox_random_hex(traffic, SANDBOX_TOKEN_LEN) < 0) {
		json_decref(env);
		json_decref(meta);
		return err_set(e, ERR_INTERNAL, EIO, "cannot claim sandbox %s: out of memory or randomness", sb->id);
	}
	json_decref(sb->conf.env);
	json_decref(sb->conf.metadata);
	sb->conf.env = env;
	sb->conf.metadata = meta;
	snprintf(sb->conf.access_token, sizeof(sb->conf.access_token), "%s", token);
	snprintf(sb->conf.traffic_token, sizeof(sb->conf.traffic_token), "%s", traffic);
	snprintf(sb->conf.tenant, sizeof(sb->conf.tenant), "%s", cfg->tenant ? cfg->tenant : "");
	sb->timeout_s = cfg->timeout_s;
	sb->lifetime_s = cfg->lifetime_s;
	sb->timeout_kill = cfg->timeout_kill;
	sb->keepalive = cfg->keepalive;
	sb->public_ports = cfg->public_ports;
	sb->auto_resume = cfg->auto_resume;
	sb->conf.created_ms = now_ms(); /* its lifetime counts from the claim */
	sandbox_set_lifetime(sb, cfg->lifetime_s);
	sandbox_touch(sb);
	(void)d;
	return 0;
}

void sandbox_forget(struct daemon *d, struct sandbox *sb)
{
	sandbox_registry_remove(d, sb);
	sandbox_free(sb);
}

struct sandbox *sandbox_new(struct daemon *d, const struct sb_config *cfg, char *rootfs, size_t n, struct err *e)
{
	if (d->nsandboxes >= SPACE_MAX_SANDBOXES) {
		err_set(e, ERR_TOO_MANY, EAGAIN, "at most %d sandboxes may exist at once", SPACE_MAX_SANDBOXES);
		return NULL;
	}
	if (sandbox_room(d, cfg->tenant, e) < 0)
		return NULL;
	if (template_rootfs(d, cfg->template, rootfs, n) < 0) {
		err_set(e, ERR_NOT_FOUND, ENOENT, "template %s does not exist", cfg->template);
		return NULL;
	}
	struct sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb) {
		err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
		return NULL;
	}
	sb->d = d;
	peer_init(sb);
	if (sandbox_registry_pick_id(d, sb->id) < 0) {
		free(sb);
		err_set(e, ERR_INTERNAL, EIO, "no randomness for an id");
		return NULL;
	}
	snprintf(sb->conf.template, sizeof(sb->conf.template), "%s", cfg->template);
	snprintf(sb->conf.isolation, sizeof(sb->conf.isolation), "%s", cfg->isolation ? cfg->isolation : d->isolation->kind);
	snprintf(sb->conf.tenant, sizeof(sb->conf.tenant), "%s", cfg->tenant ? cfg->tenant : "");
	sb->conf.cpus = cfg->cpus;
	sb->conf.memory_mb = cfg->memory_mb;
	/* 0 from a snapshot taken before disks: the default */
	sb->conf.disk_mb = cfg->disk_mb >= DISK_MIN_MB ? cfg->disk_mb : DISK_DEFAULT_MB;
	sb->timeout_s = cfg->timeout_s;
	sb->lifetime_s = cfg->lifetime_s;
	sb->timeout_kill = cfg->timeout_kill;
	sb->keepalive = cfg->keepalive;
	sandbox_set_lifetime(sb, cfg->lifetime_s); /* counted from now, as created_ms below */
	sandbox_touch(sb);
	/* an image's environment is every sandbox's of it; the create's own wins (template.h) */
	json_t *tpl = store_template_config(d->store, cfg->template), *tenv = json_object_get(tpl, "env");
	sb->conf.env = merged_env(tenv, cfg->env);
	sandbox_take_defaults(sb, tpl);
	const char *start = json_string_value(json_object_get(tpl, "start"));
	const char *ready = json_string_value(json_object_get(tpl, "ready"));
	sb->start_cmd = start && *start && !cfg->snapshot ? strdup(start) : NULL; /* core/ready.h */
	sb->ready_cmd = ready && *ready && !cfg->snapshot ? strdup(ready) : NULL;
	json_decref(tpl);
	sb->conf.metadata = json_deep_copy(cfg->metadata);
	sb->conf.net_slot = -1;
	if (!cfg->no_network)
		sb->network = cfg->network ? json_deep_copy(cfg->network)
					   : json_pack("{s:s, s:[], s:[]}", "egress", net_egress_name(d->cfg.default_egress),
						       "allow", "deny");
	snprintf(sb->conf.net_transit, sizeof(sb->conf.net_transit), "%s", d->cfg.net_transit);
	sb->public_ports = cfg->public_ports;
	sb->auto_resume = cfg->auto_resume;
	for (int i = 0; i < cfg->nvolumes && i < SANDBOX_MAX_VOLUMES; i++)
		sb->conf.volumes[sb->conf.nvolumes++] = cfg->volumes[i];
	if (sandbox_random_hex(sb->conf.access_token, SANDBOX_TOKEN_LEN) < 0 || sandbox_random_hex(sb->conf.traffic_token, SANDBOX_TOKEN_LEN) < 0) {
		sandbox_free(sb);
		err_set(e, ERR_INTERNAL, EIO, "no randomness for an access token");
		return NULL;
	}
	if (sb->network && (sb->conf.net_slot = net_slot_pick(d)) < 0) {
		sandbox_free(sb);
		err_set(e, ERR_UNAVAILABLE, ENOSPC, "no network slot is free (%d sandboxes have one)", NET_SLOTS);
		return NULL;
	}
	sb->conf.created_ms = now_ms();
	sb->state = SB_CREATING;
	snprintf(sb->conf.dir, sizeof(sb->conf.dir), "%s/sandboxes/%s", d->cfg.state_dir, sb->id);
	sandbox_registry_add(d, sb); /* recorded by sandbox_build */
	return sb;
}

int sandbox_create(struct daemon *d, const struct sb_config *cfg, struct op *op, struct err *e)
{
	struct job j = { .fn = create_job, .op = op };
	j.sb = sandbox_new(d, cfg, j.create.rootfs, sizeof(j.create.rootfs), e);
	if (!j.sb)
		return -EINVAL;
	if (cfg->snapshot)
		snprintf(j.create.snapshot, sizeof(j.create.snapshot), "%s", cfg->snapshot);
	int rc = job_start(d, &j, e);
	if (rc < 0)
		sandbox_forget(d, j.sb);
	return rc;
}

int sandbox_delete(struct daemon *d, struct sandbox *sb, struct op *op, struct err *e)
{
	enum sb_state via;
	if (!sandbox_driver(d, sb)) /* its files and runtime wait, untouched, for a spaced that runs it */
		return sandbox_unrunnable(d, sb, e);
	if (state_begin(sb->state, ACT_DELETE, &via) != STATE_BEGIN) {
		/* deleting already: the first delete answers; a second one is told why not */
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	enum sb_state old = sb->state;
	sb->state = SB_DELETING;
	struct err gone = { 0 };
	err_set(&gone, ERR_NOT_FOUND, ENOENT, "sandbox %s was deleted", sb->id);
	snprintf(gone.state, sizeof(gone.state), "%s", sb_state_name(sb->state));
	sandbox_fail_all(sb, &gone);
	struct job j = { .fn = delete_job, .sb = sb, .op = op, .from = old };
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
		if (!json_object_get(sb->conf.metadata, key) || sb->state == SB_DELETING)
			continue;
		struct err e = { 0 };
		if (sandbox_delete(d, sb, NULL, &e) < 0)
			log_warn("sandbox %s %s stays: %s", sb->id, what, e.msg);
		else
			log_info("sandbox %s %s is removed", sb->id, what);
	}
	daemon_unlock(d);
}

/*
 * daemon/api/api_sandbox.c - routes for sandboxes themselves, templates, health
 * and version.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "daemon/api/api.h"
#include "daemon/driver/disk.h"
#include "daemon/driver/driver.h"
#include "daemon/net/policy.h"
#include "daemon/core/isolation.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/metrics.h"
#include "daemon/core/quota.h"
#include "daemon/core/recipe.h"
#include "daemon/core/pool.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/snapshot.h"
#include "daemon/core/volume.h"
#include "daemon/core/template_rm.h"
#include "daemon/store/store.h"
#include "daemon/store/template.h"

#define MAX_TIMEOUT_S (30 * 24 * 3600)
#define MAX_ENV_BYTES (128 * 1024)

int api_health(struct op *op)
{
	op->json = json_pack("{s:s, s:i}", "status", "ok", "sandboxes", op->d->nsandboxes);
	return API_DONE;
}

int api_version(struct op *op)
{
	struct daemon *d = op->d;
	/* driver and runtime: the default kind's, as before there were kinds to choose from */
	op->json = json_pack("{s:s, s:i, s:s, s:s, s:o, s:o}", "version", SPACE_VERSION, "api", 1, "driver",
			     d->isolation->kind, "runtime", driver_runtime(d->isolation), "isolation",
			     isolation_json(d), "pools", pool_json(d));
	return API_DONE;
}

static size_t map_bytes(json_t *m)
{
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(m, k, v) n += strlen(k) + json_string_length(v) + 2;
	return n;
}

/* Snapshot sid if this request may see it (its tenant's, or any over the Unix socket). */
/* Whether metadata m has a key of spaced's own ("space.build", "space.pool"...). */
static bool reserved_key(json_t *m)
{
	const char *k;
	json_t *v;
	json_object_foreach(m, k, v) {
		if (strncmp(k, "space.", 6) == 0)
			return true;
	}
	return false;
}

static json_t *visible_snapshot(struct op *op, const char *sid)
{
	json_t *s = store_get_snapshot(op->d->store, sid);
	if (s && op->tcp && strcmp(json_string_value(json_object_get(s, "tenant")), op->tenant) != 0) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/*
 * The kind a new sandbox gets: the one asked for (NULL: none was), which must be the
 * snapshot's when it starts from one (snap), since only that kind can restore its image
 * (a known kind other than the snapshot's is refused, available here or not); else the
 * snapshot's, else the default. Returns it, or NULL with op->err filled.
 */
static const struct driver_slot *create_isolation(struct op *op, const char *asked, json_t *snap, const char *snapid)
{
	const char *of = snap ? json_string_value(json_object_get(snap, "isolation")) : NULL;
	if (asked && !isolation_find(op->d, asked))
		return isolation_pick(op->d, asked, &op->err); /* NULL, naming the kinds there are */
	if (asked && of && strcmp(asked, of) != 0) {
		err_set(&op->err, ERR_INVALID, EINVAL,
			"snapshot %s was taken under %s isolation: its image restores only under %s, not %s", snapid, of, of,
			asked);
		return NULL;
	}
	return isolation_pick(op->d, of ? of : asked, &op->err);
}

/* 400 in op->err (and -EINVAL) when a timeout or lifetime given (NULL: not given) is out of
 * 0..MAX_TIMEOUT_S seconds, or a timeout_action given is neither suspend nor kill; else 0. */
static int check_timeouts(struct op *op, const json_t *timeout, const json_t *lifetime, const char *action)
{
	double t = json_number_value(timeout), l = json_number_value(lifetime);
	if (timeout && !(t >= 0 && t <= MAX_TIMEOUT_S))
		return err_set(&op->err, ERR_INVALID, EINVAL, "timeout must be 0..%d seconds", MAX_TIMEOUT_S);
	if (lifetime && !(l >= 0 && l <= MAX_TIMEOUT_S))
		return err_set(&op->err, ERR_INVALID, EINVAL, "lifetime must be 0..%d seconds", MAX_TIMEOUT_S);
	if (action && strcmp(action, "kill") != 0 && strcmp(action, "suspend") != 0)
		return err_set(&op->err, ERR_INVALID, EINVAL, "timeout_action must be \"suspend\" or \"kill\"");
	return 0;
}

/* What a create's body b asks for, into cfg (env and metadata default to empty). */
static void create_read(struct op *op, json_t *b, struct sb_config *cfg, json_t *empty)
{
	const char *tpl = json_string_value(json_object_get(b, "template"));
	json_t *v;
	snprintf(cfg->template, sizeof(cfg->template), "%s", tpl ? tpl : "default");
	template_name_canon(cfg->template); /* NAME:latest is NAME */
	if ((v = json_object_get(b, "cpus")))
		cfg->cpus = (int)(json_integer_value(v) > MAX_CPUS + 1 ? MAX_CPUS + 1 : json_integer_value(v));
	if ((v = json_object_get(b, "memory_mb")))
		cfg->memory_mb = (int)(json_integer_value(v) > MAX_MEMORY_MB + 1 ? MAX_MEMORY_MB + 1 : json_integer_value(v));
	if ((v = json_object_get(b, "disk_mb")))
		cfg->disk_mb = (int)(json_integer_value(v) > DISK_MAX_MB + 1 ? DISK_MAX_MB + 1 : json_integer_value(v));
	if ((v = json_object_get(b, "timeout")))
		cfg->timeout_s = json_number_value(v);
	if ((v = json_object_get(b, "lifetime")))
		cfg->lifetime_s = json_number_value(v);
	cfg->keepalive = json_is_true(json_object_get(b, "keepalive_processes"));
	cfg->public_ports = json_is_true(json_object_get(b, "public_ports"));
	cfg->auto_resume = json_object_get(b, "auto_resume") ? json_is_true(json_object_get(b, "auto_resume"))
							    : op->d->cfg.auto_resume;
	const char *action = json_string_value(json_object_get(b, "timeout_action"));
	cfg->timeout_kill = action && strcmp(action, "kill") == 0;
	cfg->env = json_object_get(b, "env") ? json_object_get(b, "env") : empty;
	cfg->metadata = json_object_get(b, "metadata") ? json_object_get(b, "metadata")
			: json_object_get(b, "labels") ? json_object_get(b, "labels") : empty;
	if (op->tcp)
		cfg->tenant = op->tenant;
}

/* Checks what create_read read. Returns 0 or -errno with op->err set. */
static int create_check(struct op *op, json_t *b, const struct sb_config *cfg)
{
	const char *tpl = json_string_value(json_object_get(b, "template"));
	if (cfg->cpus < 1 || cfg->cpus > MAX_CPUS)
		return err_set(&op->err, ERR_INVALID, EINVAL, "cpus must be 1..%d", MAX_CPUS);
	if (cfg->memory_mb < MIN_MEMORY_MB || cfg->memory_mb > MAX_MEMORY_MB)
		return err_set(&op->err, ERR_INVALID, EINVAL, "memory_mb must be %d..%d", MIN_MEMORY_MB, MAX_MEMORY_MB);
	if (cfg->disk_mb < DISK_MIN_MB || cfg->disk_mb > DISK_MAX_MB)
		return err_set(&op->err, ERR_INVALID, EINVAL, "disk_mb must be %d..%d", DISK_MIN_MB, DISK_MAX_MB);
	int rc = check_timeouts(op, json_object_get(b, "timeout"), json_object_get(b, "lifetime"),
				json_string_value(json_object_get(b, "timeout_action")));
	if (rc < 0)
		return rc;
	if (strlen(tpl ? tpl : "") >= sizeof(cfg->template))
		return err_set(&op->err, ERR_INVALID, EINVAL, "template name too long");
	if (map_bytes(cfg->env) > MAX_ENV_BYTES || map_bytes(cfg->metadata) > MAX_ENV_BYTES)
		return err_set(&op->err, ERR_TOO_LARGE, E2BIG, "env and metadata are limited to %d bytes each",
			       MAX_ENV_BYTES);
	if (op->tcp && reserved_key(cfg->metadata))
		return err_set(&op->err, ERR_INVALID, EINVAL, "metadata keys starting with \"space.\" are spaced's own");
	const char *k;
	json_t *x;
	json_object_foreach(cfg->env, k, x) {
		if (!*k || strchr(k, '=') || strlen(k) != strcspn(k, "\n"))
			return err_set(&op->err, ERR_INVALID, EINVAL, "bad environment variable name \"%s\"", k);
	}
	return 0;
}

/* A create from snapshot snapid: its size, template and (unless b names them) env and metadata
 * come from the snapshot, whose record goes to *snap and folder to snapdir. Returns 0 or
 * -errno with op->err set. */
static int create_from(struct op *op, json_t *b, const char *snapid, struct sb_config *cfg, json_t **snap,
		       char *snapdir, size_t n)
{
	*snap = visible_snapshot(op, snapid);
	if (!*snap || snapshot_path(op->d, snapid, snapdir, n) < 0)
		return err_set(&op->err, ERR_NOT_FOUND, ENOENT, "no snapshot %s", snapid);
	if (json_object_get(b, "cpus") || json_object_get(b, "memory_mb") || json_object_get(b, "disk_mb") ||
	    json_object_get(b, "template"))
		return err_set(&op->err, ERR_INVALID, EINVAL, "cpus, memory_mb, disk_mb and template come from the snapshot");
	cfg->cpus = (int)json_integer_value(json_object_get(*snap, "cpus"));
	cfg->memory_mb = (int)json_integer_value(json_object_get(*snap, "memory_mb"));
	cfg->disk_mb = (int)json_integer_value(json_object_get(*snap, "disk_mb"));
	snprintf(cfg->template, sizeof(cfg->template), "%s", json_string_value(json_object_get(*snap, "template")));
	if (!json_object_get(b, "env"))
		cfg->env = json_object_get(*snap, "env");
	if (!json_object_get(b, "metadata") && !json_object_get(b, "labels"))
		cfg->metadata = json_object_get(*snap, "metadata");
	cfg->snapshot = snapdir;
	return 0;
}

/* The network a create gets: none (false), the policy b names, its snapshot's, or (from a
 * snapshot without one) none, into cfg; cfg->network is the caller's to release. Returns 0 or
 * -EINVAL with op->err set. */
static int create_network(struct op *op, json_t *b, const json_t *snap, struct sb_config *cfg)
{
	json_t *asked = json_object_get(b, "network");
	if (json_is_false(asked)) {
		cfg->no_network = true;
	} else if (asked) {
		cfg->network = net_policy_parse(asked, NULL, op->d->cfg.default_egress, &op->err);
		return cfg->network ? 0 : -EINVAL;
	} else if (snap && json_is_object(json_object_get(snap, "network"))) {
		cfg->network = json_incref(json_object_get(snap, "network")); /* its source's policy */
	} else if (snap) {
		cfg->no_network = true; /* its source had none: the image has no interface to use */
	}
	return 0;
}

/* The volumes a create mounts (core/volume.h), into vols and cfg: under gVisor only, and not
 * into a sandbox restored from a snapshot (its image knows no such mounts). 0 or -errno with
 * op->err set. */
static int create_volumes(struct op *op, json_t *b, const char *snapid, struct sb_config *cfg, struct sb_volume *vols)
{
	if (cfg->isolation && strcmp(cfg->isolation, "gvisor") != 0)
		return err_set(&op->err, ERR_INVALID, EINVAL, "volumes are not available in microVMs yet");
	if (snapid)
		return err_set(&op->err, ERR_INVALID, EINVAL,
			       "volumes cannot be mounted in a sandbox made from a snapshot yet");
	int rc = volume_mounts_read(op->d, op->tcp ? op->tenant : NULL, json_object_get(b, "volumes"), vols,
				    &cfg->nvolumes, &op->err);
	cfg->volumes = vols;
	return rc;
}

int api_sandbox_create(struct op *op)
{
	static const struct field fields[] = {
		{ "template", F_STRING }, { "cpus", F_INT }, { "memory_mb", F_INT }, { "disk_mb", F_INT },
		{ "env", F_STRMAP },
		{ "metadata", F_STRMAP }, { "labels", F_STRMAP }, { "timeout", F_NUMBER }, { "snapshot", F_STRING },
		{ "lifetime", F_NUMBER }, { "timeout_action", F_STRING }, { "keepalive_processes", F_BOOL },
		{ "isolation", F_STRING }, { "network", F_OBJECT_OR_FALSE }, { "public_ports", F_BOOL },
		{ "auto_resume", F_BOOL }, { "volumes", F_ARRAY },
		{ NULL, 0 },
	};
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	struct sb_volume vols[SANDBOX_MAX_VOLUMES];
	struct sb_config cfg = { .cpus = DEFAULT_CPUS, .memory_mb = DEFAULT_MEMORY_MB, .disk_mb = DISK_DEFAULT_MB,
				 .timeout_s = DEFAULT_TIMEOUT_S };
	json_t *empty = json_object(), *snap = NULL;
	create_read(op, b, &cfg, empty);
	int rc = 0;
	if (op->tcp && template_is_build_step(cfg.template)) /* the builder's, on the Unix socket */
		rc = err_set(&op->err, ERR_NOT_FOUND, ENOENT, "template %s does not exist", cfg.template);
	else
		rc = create_check(op, b, &cfg);
	char snapdir[700];
	const char *snapid = json_string_value(json_object_get(b, "snapshot"));
	if (rc == 0 && snapid)
		rc = create_from(op, b, snapid, &cfg, &snap, snapdir, sizeof(snapdir));
	if (rc == 0)
		rc = create_network(op, b, snap, &cfg);
	if (rc == 0) {
		const struct driver_slot *k =
			create_isolation(op, json_string_value(json_object_get(b, "isolation")), snap, snapid);
		cfg.isolation = k ? k->kind : NULL;
		rc = k ? 0 : -EINVAL;
	}
	if (rc == 0 && json_array_size(json_object_get(b, "volumes")))
		rc = create_volumes(op, b, snapid, &cfg, vols);
	int pending = rc == 0 && !snap ? recipe_wait(op->d, op, cfg.template, &op->err) : 0;
	if (pending < 0)
		rc = pending;
	/* pending: its template is being built from its recipe, and this runs again once it is there */
	if (rc == 0 && !pending)
		rc = quota_create(op->d, snap ? (uint64_t)json_integer_value(json_object_get(snap, "bytes")) : 0, &op->err);
	int claimed = 0;
	if (rc == 0 && !pending && !cfg.nvolumes && (claimed = pool_claim(op->d, &cfg, op, &op->err)) < 0)
		rc = claimed;
	if (rc == 0 && !pending && !claimed)
		rc = sandbox_create(op->d, &cfg, op, &op->err);
	json_decref(snap);
	json_decref(empty);
	json_decref((json_t *)cfg.network);
	json_decref(b);
	if (pending)
		return API_PENDING;
	op->kind = OP_JOB;
	return rc == 0 ? API_PENDING : API_DONE;
}

/* Whether sb's metadata holds every "K=V" of the label filters in arr. */
static bool labels_match(const struct sandbox *sb, json_t *arr)
{
	size_t i;
	json_t *f;
	json_array_foreach(arr, i, f) {
		const char *s = json_string_value(f);
		const char *eq = s ? strchr(s, '=') : NULL;
		if (!eq)
			return false;
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - s), s);
		const char *have = json_string_value(json_object_get(sb->conf.metadata, key));
		if (!have || strcmp(have, eq + 1) != 0)
			return false;
	}
	return true;
}

int api_sandbox_list(struct op *op)
{
	/* label=K=V (repeatable) and metadata.K=V select by metadata; every pair must match */
	json_t *filters = json_deep_copy(json_object_get(op->query, "label[]"));
	const char *qk;
	json_t *qv;
	json_object_foreach(op->query, qk, qv) {
		if (strncmp(qk, "metadata.", 9) != 0 || !json_is_array(qv) || strchr(qk, '[') == NULL)
			continue;
		if (!filters)
			filters = json_array();
		size_t i;
		json_t *v;
		json_array_foreach(qv, i, v) {
			char pair[512];
			snprintf(pair, sizeof(pair), "%.*s=%s", (int)(strlen(qk) - 9 - 2), qk + 9, json_string_value(v));
			json_array_append_new(filters, json_string(pair));
		}
	}
	json_t *arr = json_array();
	for (struct sandbox *sb = op->d->sandboxes; sb; sb = sb->next)
		if (sb->pooled == SB_POOL_NONE && (!op->tcp || strcmp(sb->conf.tenant, op->tenant) == 0) && (!filters || labels_match(sb, filters)))
			json_array_append_new(arr, sandbox_json(sb));
	json_decref(filters);
	op->json = json_pack("{s:o}", "sandboxes", arr);
	return API_DONE;
}

int api_sandbox_get(struct op *op)
{
	struct sandbox *sb = api_sandbox(op, false);
	if (sb)
		op->json = sandbox_json(sb);
	return API_DONE;
}

/* A bound of the metrics' time range: Unix seconds, 0..METRICS_TIME_MAX, into *ms (the second's
 * first ms, or with `last` its last); absent leaves *ms. */
#define METRICS_TIME_MAX 253402300799LL /* 9999-12-31T23:59:59Z */
static int time_arg(struct op *op, const char *name, bool last, int64_t *ms)
{
	const char *v = json_string_value(json_object_get(op->query, name));
	char *end = NULL;
	long long s = v ? strtoll(v, &end, 10) : 0;
	if (v && (!*v || *end || s < 0 || s > METRICS_TIME_MAX))
		return err_set(&op->err, ERR_INVALID, EINVAL, "%s must be Unix seconds, 0..%lld", name,
			       METRICS_TIME_MAX);
	if (v)
		*ms = (int64_t)s * 1000 + (last ? 999 : 0);
	return 0;
}

int api_sandbox_metrics(struct op *op)
{
	int64_t from = 0, to = INT64_MAX;
	if (time_arg(op, "start", false, &from) < 0 || time_arg(op, "end", true, &to) < 0)
		return API_DONE;
	struct sandbox *sb = api_sandbox(op, false);
	if (sb)
		op->json = json_pack("{s:s, s:s, s:i, s:o}", "id", sb->id, "state", sb_state_name(sb->state),
				     "interval_ms", METRICS_INTERVAL_MS, "metrics", metrics_json(sb, from, to));
	return API_DONE;
}

int api_sandbox_delete(struct op *op)
{
	struct sandbox *sb = api_sandbox(op, false);
	if (!sb)
		return API_DONE;
	op->kind = OP_JOB;
	return sandbox_delete(op->d, sb, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

static int transition(struct op *op, enum sb_action a)
{
	struct sandbox *sb = api_sandbox(op, false);
	if (!sb)
		return API_DONE;
	op->kind = OP_JOB;
	int rc = lifecycle_start(op->d, sb, a, op, &op->err);
	return rc == 0 ? API_PENDING : API_DONE;
}

int api_sandbox_pause(struct op *op)
{
	return transition(op, ACT_PAUSE);
}

int api_sandbox_resume(struct op *op)
{
	static const struct field fields[] = { { "timeout", F_NUMBER }, { NULL, 0 } };
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	json_t *t = json_object_get(b, "timeout");
	double timeout = t ? json_number_value(t) : -1;
	int bad = check_timeouts(op, t, NULL, NULL);
	json_decref(b);
	if (bad < 0)
		return API_DONE;
	struct sandbox *sb = api_sandbox(op, false);
	if (sb && t) {
		/* a new idle timeout, counted from now, instead of what was left */
		sb->timeout_s = timeout;
		sb->remaining_ms = 0;
		sandbox_touch(sb);
	}
	return transition(op, ACT_RESUME);
}

int api_sandbox_suspend(struct op *op)
{
	return transition(op, ACT_SUSPEND);
}

int api_sandbox_network(struct op *op)
{
	static const struct field fields[] = {
		{ "egress", F_STRING }, { "allow", F_STRLIST }, { "deny", F_STRLIST }, { NULL, 0 },
	};
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	struct sandbox *sb = api_sandbox(op, false);
	json_t *policy = NULL;
	if (sb && !sb->network)
		err_set(&op->err, ERR_CONFLICT, EINVAL, "sandbox %s was made without a network", sb->id);
	else if (sb)
		policy = net_policy_parse(b, sb->network, op->d->cfg.default_egress, &op->err);
	json_decref(b);
	if (!policy)
		return API_DONE;
	op->kind = OP_JOB;
	int rc = sandbox_set_network(op->d, sb, policy, op, &op->err);
	json_decref(policy);
	return rc == 0 ? API_PENDING : API_DONE;
}

int api_sandbox_timeout(struct op *op)
{
	static const struct field fields[] = {
		{ "timeout", F_NUMBER }, { "lifetime", F_NUMBER }, { "timeout_action", F_STRING }, { NULL, 0 },
	};
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	json_t *timeout = json_object_get(b, "timeout"), *lifetime = json_object_get(b, "lifetime");
	const char *action = json_string_value(json_object_get(b, "timeout_action"));
	struct sb_timeouts t = { .set_timeout = timeout != NULL, .set_lifetime = lifetime != NULL,
				 .set_action = action != NULL, .timeout_s = json_number_value(timeout),
				 .lifetime_s = json_number_value(lifetime), .kill = action && strcmp(action, "kill") == 0 };
	int rc = 0;
	if (!t.set_timeout && !t.set_lifetime && !t.set_action)
		rc = err_set(&op->err, ERR_INVALID, EINVAL, "give timeout, lifetime or timeout_action");
	else
		rc = check_timeouts(op, timeout, lifetime, action);
	json_decref(b); /* timeout, lifetime and action were its */
	struct sandbox *sb = rc == 0 ? api_sandbox(op, false) : NULL;
	if (!sb)
		return API_DONE;
	op->kind = OP_JOB;
	return lifecycle_set_timeouts(op->d, sb, &t, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

int api_sandbox_sync(struct op *op)
{
	struct sandbox *sb = api_sandbox(op, false);
	if (!sb)
		return API_DONE;
	op->kind = OP_JOB;
	return lifecycle_sync(op->d, sb, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

int api_sandbox_snapshot(struct op *op)
{
	static const struct field fields[] = { { "name", F_STRING }, { NULL, 0 } };
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	const char *name = json_string_value(json_object_get(b, "name"));
	struct sandbox *sb = api_sandbox(op, false);
	int rc = -ENOENT;
	if (sb && name && strlen(name) > 128)
		err_set(&op->err, ERR_INVALID, EINVAL, "name is limited to 128 bytes");
	else if (sb)
		rc = snapshot_take(op->d, sb, name, op, &op->err);
	json_decref(b);
	op->kind = OP_JOB;
	return rc == 0 ? API_PENDING : API_DONE;
}

int api_sandbox_fork(struct op *op)
{
	static const struct field fields[] = { { "count", F_INT }, { "isolation", F_STRING }, { NULL, 0 } };
	json_t *b;
	if (api_body(op, fields, &b) < 0)
		return API_DONE;
	json_t *c = json_object_get(b, "count");
	json_int_t count = c ? json_integer_value(c) : 1;
	/* any kind but the sandbox's is refused below, available here or not */
	const char *asked = json_string_value(json_object_get(b, "isolation"));
	const struct driver_slot *k = asked ? isolation_find(op->d, asked) : NULL;
	bool unknown = asked && !k;
	if (unknown)
		isolation_pick(op->d, asked, &op->err); /* names the kinds there are */
	json_decref(b);
	if (unknown)
		return API_DONE;
	if (count < 1 || count > FORK_MAX_COUNT) {
		err_set(&op->err, ERR_INVALID, EINVAL, "count must be 1..%d", FORK_MAX_COUNT);
		return API_DONE;
	}
	struct sandbox *sb = api_sandbox(op, false);
	if (!sb)
		return API_DONE;
	/* forks are restored from the sandbox's own image, which only its kind can restore */
	if (k && strcmp(k->kind, sb->conf.isolation) != 0) {
		err_set(&op->err, ERR_INVALID, EINVAL,
			"sandbox %s runs under %s isolation: its forks are restored from its image, so they run under %s too, "
			"not %s",
			sb->id, sb->conf.isolation, sb->conf.isolation, k->kind);
		return API_DONE;
	}
	op->kind = OP_JOB;
	return snapshot_fork(op->d, sb, (int)count, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

int api_snapshot_list(struct op *op)
{
	json_t *all = store_list_snapshots(op->d->store), *mine = json_array();
	size_t i;
	json_t *s;
	json_array_foreach(all, i, s) if (!op->tcp || strcmp(json_string_value(json_object_get(s, "tenant")), op->tenant) == 0)
		json_array_append(mine, s);
	json_decref(all);
	op->json = json_pack("{s:o}", "snapshots", mine);
	return API_DONE;
}

int api_snapshot_get(struct op *op)
{
	op->json = visible_snapshot(op, op->snapid);
	if (!op->json)
		err_set(&op->err, ERR_NOT_FOUND, ENOENT, "no snapshot %s", op->snapid);
	return API_DONE;
}

int api_snapshot_delete(struct op *op)
{
	json_t *s = visible_snapshot(op, op->snapid);
	if (!s) {
		err_set(&op->err, ERR_NOT_FOUND, ENOENT, "no snapshot %s", op->snapid);
		return API_DONE;
	}
	json_decref(s);
	op->kind = OP_JOB;
	return snapshot_remove(op->d, op->snapid, op, &op->err) == 0 ? API_PENDING : API_DONE;
}

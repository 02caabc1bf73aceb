/*
 * tests/fuzz/stubs_daemon.c - stand-ins for the daemon modules the fuzz
 * targets do not link: the store (SQLite), jobs, the lifecycle, snapshots,
 * templates and host programs.
 *
 * The targets link the real request validation (api*.c), the real agent
 * channel (agent.c, op.c, timer.c) and the real sandbox registry
 * (sandbox.c). The log is silenced. Everything below is what those reach only on paths that would
 * start real work on the host: a stub fails the request as a broken host
 * would (an error with a message), so the code under test takes its error
 * path and never mounts, spawns or writes anything. None of them aborts:
 * a fuzzer must not mistake a legitimate error path for a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/quota.h"
#include "daemon/base/log.h"
#include "daemon/core/recipe.h"
#include "daemon/core/snapshot.h"
#include "daemon/core/system.h"
#include "lib/host/spawn.h"
#include "daemon/store/store.h"
#include "daemon/core/template_rm.h"
#include "daemon/core/volume.h"
#include "daemon/store/template.h"
#include "daemon/net/net.h"

#define NOT_HERE(e) err_set((e), ERR_INTERNAL, ENOSYS, "not available in the fuzz target")

/* The log would drown libFuzzer's own output: what spaced logs is not what is checked. */
void log_msg(const char *level, const char *fmt, ...)
{
}

int job_start(struct daemon *d, const struct job *tmpl, struct err *e)
{
	return NOT_HERE(e);
}

int quota_create(struct daemon *d, uint64_t layer, struct err *e)
{
	return 0; /* the host always has room here */
}

uint64_t quota_layer_bytes(struct daemon *d, struct sandbox *sb)
{
	return 0; /* nothing is measured here: the sampling job never starts (job_start) */
}

int job_record(struct job *j, struct err *e)
{
	return NOT_HERE(e);
}

int lifecycle_start(struct daemon *d, struct sandbox *sb, enum sb_action a, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

int lifecycle_sync(struct daemon *d, struct sandbox *sb, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

int lifecycle_set_timeouts(struct daemon *d, struct sandbox *sb, const struct sb_timeouts *t, struct op *op,
			   struct err *e)
{
	return NOT_HERE(e);
}

void lifecycle_resumed(struct daemon *d, struct sandbox *sb, const struct err *e)
{
}

int snapshot_take(struct daemon *d, struct sandbox *sb, const char *name, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

int volume_create(struct daemon *d, const char *tenant, const char *name, int size_mb, const json_t *labels,
		  struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

int volume_remove(struct daemon *d, const char *tenant, const char *name, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

json_t *volume_get(struct daemon *d, const char *tenant, const char *name, struct err *e)
{
	NOT_HERE(e);
	return NULL;
}

json_t *volume_list(struct daemon *d, const char *tenant)
{
	return json_array();
}

int volume_mounts_read(struct daemon *d, const char *tenant, const json_t *list, struct sb_volume *out, int *n,
		       struct err *e)
{
	*n = 0;
	return NOT_HERE(e);
}

int snapshot_fork(struct daemon *d, struct sandbox *sb, int count, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

int snapshot_path(struct daemon *d, const char *id, char *out, size_t n)
{
	return -ENOENT;
}

int snapshot_remove(struct daemon *d, const char *id, struct op *op, struct err *e)
{
	return err_set(e, ERR_NOT_FOUND, ENOENT, "no snapshot %s", id);
}

int spawn_run(char *const argv[], int out_fd, int err_fd)
{
	return -ENOSYS;
}

int spawn_capture(char *const argv[], char *out, size_t n)
{
	return -ENOSYS;
}

void spawn_reap_orphan(pid_t pid)
{
}

int store_put_sandbox(struct store *st, const struct sandbox *sb)
{
	return -ENOSYS;
}

int store_put_network(struct store *st, const struct sandbox *sb)
{
	return -ENOSYS;
}

/* the network (daemon/net/net.c) makes namespaces and rules: never here; the policy's
 * parsing (policy.c) is the real one */
int net_slot_pick(struct daemon *d)
{
	return 0;
}

void net_host_reach(const struct sandbox *sb, char *out, size_t n)
{
	snprintf(out, n, "10.213.0.2");
}

int net_bytes(const struct sandbox *sb, uint64_t *out, uint64_t *in)
{
	return -ENOSYS;
}

int net_apply(struct daemon *d, struct sandbox *sb, struct err *e)
{
	return NOT_HERE(e);
}

int net_apply_policy(struct daemon *d, const struct sandbox *sb, const json_t *policy, struct err *e)
{
	return NOT_HERE(e);
}

void store_record(struct sandbox *sb, struct sb_record *r)
{
	memset(r, 0, sizeof(*r));
	r->seq = ++sb->seq;
}

int store_save(struct store *st, const struct sb_record *r)
{
	return 0;
}

int store_save_now(struct store *st, struct sandbox *sb)
{
	return 0;
}

int store_delete_sandbox(struct store *st, const char *id)
{
	return 0;
}

int store_load_sandboxes(struct store *st, struct sandbox **out)
{
	*out = NULL;
	return 0;
}

json_t *store_get_snapshot(struct store *st, const char *id)
{
	return NULL;
}

json_t *store_list_snapshots(struct store *st)
{
	return json_array();
}

json_t *store_list_templates(struct store *st)
{
	return json_array();
}

json_t *store_get_template(struct store *st, const char *name)
{
	return NULL;
}

json_t *store_template_config(struct store *st, const char *name)
{
	return NULL;
}

int template_remove(struct daemon *d, const char *name, struct op *op, struct err *e)
{
	return err_set(e, ERR_NOT_FOUND, ENOENT, "no template %s", name);
}

int template_rootfs(struct daemon *d, const char *name, char *out, size_t n)
{
	return -ENOENT;
}

bool template_is_build_step(const char *name)
{
	return strncmp(name, "build/", 6) == 0;
}

bool template_name_ok(const char *s)
{
	return *s && strlen(s) < 64;
}

void template_name_canon(char *s)
{
	size_t n = strlen(s);
	if (n > 7 && strcmp(s + n - 7, ":latest") == 0)
		s[n - 7] = '\0';
}

/* Builds: the request's checks run; nothing is written or started. */
int build_begin(struct daemon *d, struct op *op, const char *name, const char *file, json_t *args,
		const char *packages, struct err *e)
{
	return err_set(e, ERR_INVALID, EINVAL, "no builds here");
}

int build_cancel(struct daemon *d, const char *name, struct err *e)
{
	return err_set(e, ERR_NOT_FOUND, ENOENT, "no build of template %s runs", name);
}

int build_import(struct daemon *d, struct op *op, const char *name, const char *source, struct err *e)
{
	return err_set(e, ERR_INVALID, EINVAL, "no imports here");
}

int build_upload(struct op *op, const char *data, size_t n)
{
	return 0;
}

int build_start(struct op *op)
{
	return err_set(&op->err, ERR_INTERNAL, EIO, "no builds here");
}

int build_record(struct daemon *d, struct op *op, const char *name, json_t *body, struct err *e)
{
	return err_set(e, ERR_INVALID, EINVAL, "no builds here");
}

int system_df(struct daemon *d, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

int system_prune(struct daemon *d, long long keep, struct op *op, struct err *e)
{
	return NOT_HERE(e);
}

void system_trim(struct daemon *d)
{
}

int store_token_admin(struct store *st, const char *hash_hex)
{
	return 0; /* no token is an administrator's here */
}

int recipe_wait(struct daemon *d, struct op *op, const char *name, struct err *e)
{
	return 0; /* no template is built from a recipe here */
}

/*
 * daemon/core/sweep.c - the sweep at start (see sweep.h), in the order it runs:
 *
 *   1. sandboxes left deleting (a create or delete interrupted) or failed by a
 *      destroy that did not finish are destroyed again; one that fails again
 *      stays failed with the new reason, for the next start;
 *   2. the ids of the sandboxes that remain are the owners;
 *   3. each driver's leftovers (containers, then mounts in sandbox dirs, then
 *      loop devices on image files under the state dir) whose owner is not
 *      one of them are released, driver after driver (whichever kind a record
 *      has, its owner's id keeps what every driver finds of it);
 *   4. folders under <state>/sandboxes/ no record owns are removed, without
 *      crossing into another filesystem (a mount that could not be released
 *      keeps its folder, and says so).
 *
 * Only what lies under this spaced's state dir and runsc root is looked at:
 * other spaceds on the same host are never touched.
 */
#include "daemon/core/sweep.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/core/op.h"
#include "daemon/core/sandbox.h"
#include "daemon/driver/driver.h"

/* The ids of the registry's sandboxes, those waiting for a destroy only if `undestroyed`. */
struct ids {
	char (*v)[SANDBOX_ID_LEN + 1];
	size_t n;
};

static int ids_collect(struct daemon *d, bool undestroyed, struct ids *out)
{
	daemon_lock(d);
	out->n = 0;
	out->v = calloc((size_t)d->nsandboxes + 1, sizeof(*out->v));
	for (struct sandbox *sb = out->v ? d->sandboxes : NULL; sb; sb = sb->next)
		if (!undestroyed || sandbox_undestroyed(sb))
			snprintf(out->v[out->n++], sizeof(*out->v), "%s", sb->id);
	daemon_unlock(d);
	return out->v ? 0 : -ENOMEM;
}

static bool ids_have(const struct ids *ids, const char *id)
{
	for (size_t i = 0; i < ids->n; i++)
		if (strcmp(ids->v[i], id) == 0)
			return true;
	return false;
}

/* Step 1: the destroys left unfinished. */
static void finish_destroys(struct daemon *d)
{
	struct ids todo;
	if (ids_collect(d, true, &todo) < 0)
		return;
	for (size_t i = 0; i < todo.n; i++) {
		daemon_lock(d);
		struct sandbox *sb = sandbox_find(d, todo.v[i]);
		if (sb)
			sb->refs++; /* sandbox_destroy retires it; freed only once we let go */
		daemon_unlock(d);
		if (!sb)
			continue;
		struct err e = { 0 };
		if (sandbox_destroy(d, sb, &e) == 0)
			log_info("sweep: sandbox %s destroyed (its destroy had not finished)", todo.v[i]);
		else
			log_warn("sweep: sandbox %s could not be destroyed: %s; kept as failed until the next start",
				 todo.v[i], e.msg);
		daemon_lock(d);
		sb->refs--;
		daemon_unlock(d);
	}
	free(todo.v);
}

static const char *left_kind(enum driver_left k)
{
	return k == DRV_LEFT_CONTAINER ? "container" : k == DRV_LEFT_MOUNT ? "mount" : "loop device";
}

/* Step 3: what one driver holds that no record owns. */
static void release_leftovers(const struct driver_slot *dv, const struct ids *owners)
{
	struct driver_leftover *left = NULL;
	size_t n = 0;
	if (!dv->ops->leftovers)
		return;
	int rc = driver_leftovers(dv, &left, &n);
	if (rc < 0) {
		log_warn("sweep: cannot list what the %s driver left behind: %s", dv->kind, strerror(-rc));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct driver_leftover *l = &left[i];
		if (l->owner[0] && ids_have(owners, l->owner))
			continue;
		struct err e = { 0 };
		const char *of = l->kind == DRV_LEFT_LOOP ? l->file : "";
		if (driver_release(dv, l, &e) == 0)
			log_info("sweep: %s %s%s%s released: no sandbox record owns it", left_kind(l->kind), l->name,
				 *of ? " on " : "", of);
		else
			log_warn("sweep: %s %s: no sandbox record owns it, but releasing it failed: %s",
				 left_kind(l->kind), l->name, e.msg);
	}
	free(left);
}

/* Step 4: folders under <state>/sandboxes/ no record owns. */
static void remove_folders(struct daemon *d, const struct ids *owners)
{
	char parent[600];
	snprintf(parent, sizeof(parent), "%s/sandboxes", d->cfg.state_dir);
	DIR *dp = opendir(parent);
	if (!dp)
		return;
	struct dirent *de;
	while ((de = readdir(dp))) {
		char dir[900];
		struct stat st;
		snprintf(dir, sizeof(dir), "%s/%s", parent, de->d_name);
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || ids_have(owners, de->d_name) ||
		    lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		char *rm[] = { "rm", "-rf", "--one-file-system", dir, NULL };
		if (spawn_run(rm, -1, -1) == 0)
			log_info("sweep: sandbox folder %s removed: no sandbox record owns it", dir);
		else
			log_warn("sweep: sandbox folder %s: no sandbox record owns it, but it could not be removed "
				 "(a mount inside that would not go?)", dir);
	}
	closedir(dp);
}

void sweep_run(struct daemon *d)
{
	finish_destroys(d);
	struct ids owners;
	if (ids_collect(d, false, &owners) < 0) {
		log_warn("sweep: out of memory; nothing swept");
		return;
	}
	for (int i = 0; i < ISOLATION_KINDS; i++)
		if (d->drivers[i].ops)
			release_leftovers(&d->drivers[i], &owners);
	remove_folders(d, &owners);
	free(owners.v);
}

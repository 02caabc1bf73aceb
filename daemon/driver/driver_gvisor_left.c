/*
 * daemon/driver/driver_gvisor_left.c - what gVisor sandboxes leave behind when spaced or the
 * host goes down mid-way: runsc containers, mounts inside sandbox dirs and loop devices of
 * their disks, listed (deeper mounts first) and released one by one (driver.h, leftovers).
 */
#include "daemon/driver/driver_gvisor_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/driver/host.h"
#include "lib/host/spawn.h"

/* The leftovers found so far, growing as gv_leftovers finds more. */
struct found {
	struct driver_leftover *v;
	size_t n, cap;
	char sandboxes[600];  /* <state dir>/sandboxes, canonical */
	char volumes[600];    /* <state dir>/volumes, canonical, "" when there is none */
};

static int found_add(struct found *f, enum driver_left kind, const char *name, const char *file)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct driver_leftover *v = realloc(f->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	struct driver_leftover *l = &f->v[f->n++];
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(l->file, sizeof(l->file), "%s", file ? file : "");
	/* the sandbox whose dir holds it: <state>/sandboxes/<owner>/... */
	const char *p = kind == DRV_LEFT_CONTAINER ? NULL : kind == DRV_LEFT_MOUNT ? name : file;
	size_t k = strlen(f->sandboxes);
	if (!p)
		snprintf(l->owner, sizeof(l->owner), "%s", strlen(name) < sizeof(l->owner) ? name : "");
	else if (f->sandboxes[0] && strncmp(p, f->sandboxes, k) == 0 && p[k] == '/')
		snprintf(l->owner, sizeof(l->owner), "%.*s", (int)strcspn(p + k + 1, "/"), p + k + 1);
	return 0;
}

static int found_mount(const char *mnt, void *ctx)
{
	return found_add(ctx, DRV_LEFT_MOUNT, mnt, NULL);
}

static int found_loop(const char *dev, const char *file, void *ctx)
{
	struct found *f = ctx;
	/* a volume's image (core/volume.h) is mounted for as long as the volume exists: not ours */
	if (f->volumes[0] && strncmp(file, f->volumes, strlen(f->volumes)) == 0 && file[strlen(f->volumes)] == '/')
		return 0;
	return found_add(ctx, DRV_LEFT_LOOP, dev, file);
}

static int deeper_first(const void *a, const void *b)
{
	size_t la = strlen(((const struct driver_leftover *)a)->name), lb = strlen(((const struct driver_leftover *)b)->name);
	return la < lb ? 1 : la > lb ? -1 : 0;
}

#define LIST_BYTES (64 * 1024) /* `runsc list -quiet` of SPACE_MAX_SANDBOXES ids and then some */

int gv_leftovers(struct driver *drv, struct driver_leftover **out, size_t *n)
{
	struct found f = { 0 };
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/sandboxes", drv->d->cfg.state_dir);
	char *canon = realpath(dir, NULL);
	if (canon)
		snprintf(f.sandboxes, sizeof(f.sandboxes), "%s", canon);
	free(canon);
	snprintf(dir, sizeof(dir), "%s/volumes", drv->d->cfg.state_dir);
	canon = realpath(dir, NULL);
	if (canon)
		snprintf(f.volumes, sizeof(f.volumes), "%s", canon);
	free(canon);
	char *ids = malloc(LIST_BYTES);
	char *argv[] = { "runsc", "--root", drv->root, "list", "-quiet", NULL };
	int rc = ids ? 0 : -ENOMEM;
	if (rc == 0 && spawn_capture(argv, ids, LIST_BYTES) != 0)
		rc = -EIO;
	char *save = NULL;
	for (char *id = rc == 0 ? strtok_r(ids, "\n", &save) : NULL; id && rc == 0; id = strtok_r(NULL, "\n", &save))
		rc = found_add(&f, DRV_LEFT_CONTAINER, id, NULL);
	free(ids);
	/* mounts only inside sandbox dirs: the state dir itself, or a disk mounted on it, is not ours */
	if (rc == 0 && f.sandboxes[0])
		rc = host_mounts_below(f.sandboxes, found_mount, &f);
	if (rc == 0)
		rc = host_loops_below(drv->d->cfg.state_dir, found_loop, &f);
	if (rc < 0) {
		free(f.v);
		return rc;
	}
	/* a mount on top of another goes first: deeper paths before the ones they are in */
	size_t first = 0, last;
	while (first < f.n && f.v[first].kind != DRV_LEFT_MOUNT)
		first++;
	for (last = first; last < f.n && f.v[last].kind == DRV_LEFT_MOUNT; last++)
		;
	if (last > first)
		qsort(f.v + first, last - first, sizeof(*f.v), deeper_first);
	*out = f.v;
	*n = f.n;
	return 0;
}

/* A container id runsc listed, safe to use in a path (cgroups). */
static int plain_id(const char *id)
{
	return id[0] && id[0] != '.' && !strchr(id, '/');
}

int gv_release(struct driver *drv, const struct driver_leftover *l, struct err *e)
{
	int rc;
	switch (l->kind) {
	case DRV_LEFT_CONTAINER: {
		char *del[] = { "runsc", "--root", drv->root, "delete", "--force", (char *)l->name, NULL };
		char *state[] = { "runsc", "--root", drv->root, "state", (char *)l->name, NULL };
		char out[4096];
		if (spawn_run(del, -1, -1) != 0 && spawn_capture(state, out, sizeof(out)) == 0)
			return err_set(e, ERR_INTERNAL, EBUSY, "runsc still knows container %s after delete", l->name);
		if (plain_id(l->name))
			gv_remove_cgroups(l->name);
		return 0;
	}
	case DRV_LEFT_MOUNT:
		if ((rc = host_umount(l->name)) < 0)
			return err_set(e, ERR_INTERNAL, -rc, "unmounting %s: %s", l->name, strerror(-rc));
		return 0;
	case DRV_LEFT_LOOP:
		if ((rc = host_loop_detach(l->name, l->file)) < 0)
			return err_set(e, ERR_INTERNAL, -rc, "detaching %s from %s: %s", l->name, l->file, strerror(-rc));
		return 0;
	}
	return err_set(e, ERR_INTERNAL, EINVAL, "unknown leftover");
}

/*
 * daemon/driver/call.c - the one door to the isolation drivers: every call the rest of spaced
 * makes to a driver goes through a wrapper here, which counts it, its failures and its time per
 * kind and call (GET /metrics), and logs the slow ones (see driver.h).
 */
#include "daemon/driver/driver.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/expo.h"
#include "daemon/base/log.h"

/* The calls counted: those that change a sandbox or the host. */
enum call {
	CALL_CREATE,
	CALL_PREPARE,
	CALL_START,
	CALL_PAUSE,
	CALL_RESUME,
	CALL_CHECKPOINT,
	CALL_RESTORE,
	CALL_RENAME,
	CALL_WAKE,
	CALL_STOP,
	CALL_DESTROY,
	CALL_WEIGH,
	CALL_RELEASE,
	CALLS
};

static const char *const call_names[CALLS] = {
	[CALL_CREATE] = "create",   [CALL_PREPARE] = "prepare",       [CALL_START] = "start",
	[CALL_PAUSE] = "pause",     [CALL_RESUME] = "resume",         [CALL_CHECKPOINT] = "checkpoint",
	[CALL_RESTORE] = "restore", [CALL_RENAME] = "rename",         [CALL_WAKE] = "wake",
	[CALL_STOP] = "stop",       [CALL_DESTROY] = "destroy",       [CALL_WEIGH] = "weigh",
	[CALL_RELEASE] = "release",
};

_Static_assert(CALLS <= DRIVER_CALLS_MAX, "struct driver_slot counts every call");

/* Counts a call of dv that began at t0 and returned rc, and logs it if it was slow. */
static int done(const struct driver_slot *dv, enum call c, const char *what, int64_t t0, int rc)
{
	int64_t ns = mono_ns() - t0;
	struct driver_slot *slot = (struct driver_slot *)dv; /* only its atomic counts are written */
	__atomic_fetch_add(&slot->counts[c][0], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&slot->counts[c][1], rc < 0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&slot->counts[c][2], (uint64_t)ns, __ATOMIC_RELAXED);
	if (ns >= (int64_t)DRIVER_SLOW_MS * 1000000)
		log_info("%s %s of %s took %.1f s%s", dv->kind, call_names[c], what, ns / 1e9, rc < 0 ? " and failed" : "");
	return rc;
}

int driver_create(const struct driver_slot *dv, struct sandbox *sb, const char *rootfs, const char *seed,
		  struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_CREATE, sb->id, t0, dv->ops->create(dv->drv, sb, rootfs, seed, e));
}

int driver_prepare(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_PREPARE, sb->id, t0, dv->ops->prepare(dv->drv, sb, e));
}

int driver_start(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_START, sb->id, t0, dv->ops->start(dv->drv, sb, e));
}

int driver_pause(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_PAUSE, sb->id, t0, dv->ops->pause(dv->drv, sb, e));
}

int driver_resume(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_RESUME, sb->id, t0, dv->ops->resume(dv->drv, sb, e));
}

/* What an image's IMAGE_FORMAT_FILE says: its format and the kind that made it. */
static int image_format(const struct driver_slot *dv, char *out, size_t n)
{
	int len = snprintf(out, n, "space-image %d %s\n", IMAGE_FORMAT, dv->kind);
	return len > 0 && (size_t)len < n ? len : -ENAMETOOLONG;
}

/* Writes dir's format before the checkpoint writes anything: an image cut short is still
 * known for what it was to be. */
static int image_mark(const struct driver_slot *dv, const char *dir, struct err *e)
{
	char path[PATH_MAX], text[128];
	int len = image_format(dv, text, sizeof(text));
	if (len < 0 || snprintf(path, sizeof(path), "%s/%s", dir, IMAGE_FORMAT_FILE) >= (int)sizeof(path))
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "image folder path too long: %s", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot write %s: %s", path, strerror(errno));
	int rc = write(fd, text, (size_t)len) == len && fsync(fd) == 0 ? 0 : -EIO;
	close(fd);
	return rc < 0 ? err_set(e, ERR_INTERNAL, EIO, "cannot write %s", path) : 0;
}

/* Refuses an image this spaced does not know: without a format (made by a spaced from before
 * image formats, or not an image), of another format, or of another kind. */
static int image_known(const struct driver_slot *dv, const char *dir, struct err *e)
{
	char path[PATH_MAX], want[128], got[128] = "";
	if (image_format(dv, want, sizeof(want)) < 0 ||
	    snprintf(path, sizeof(path), "%s/%s", dir, IMAGE_FORMAT_FILE) >= (int)sizeof(path))
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "image folder path too long: %s", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, got, sizeof(got) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return err_set(e, ERR_CONFLICT, ENOEXEC,
			       "the image %s has no format (it was made by a spaced from before image formats, or is "
			       "not an image): this spaced restores images of format %d only", dir, IMAGE_FORMAT);
	got[n] = '\0';
	if (strcmp(got, want) != 0) {
		got[strcspn(got, "\n")] = '\0';
		return err_set(e, ERR_CONFLICT, ENOEXEC, "the image %s is \"%.64s\": this spaced restores \"space-image %d %s\" only",
			       dir, got, IMAGE_FORMAT, dv->kind);
	}
	return 0;
}

int driver_checkpoint(const struct driver_slot *dv, struct sandbox *sb, const char *dir, bool leave_running,
		      struct err *e)
{
	int rc = image_mark(dv, dir, e);
	if (rc < 0)
		return rc;
	int64_t t0 = mono_ns();
	return done(dv, CALL_CHECKPOINT, sb->id, t0, dv->ops->checkpoint(dv->drv, sb, dir, leave_running, e));
}

int driver_restore(const struct driver_slot *dv, struct sandbox *sb, const char *dir, struct err *e)
{
	int rc = image_known(dv, dir, e);
	if (rc < 0)
		return rc;
	int64_t t0 = mono_ns();
	return done(dv, CALL_RESTORE, sb->id, t0, dv->ops->restore(dv->drv, sb, dir, e));
}

int driver_rename(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	if (!dv->ops->rename)
		return 0; /* its agent does (H_IDENTITY) */
	int64_t t0 = mono_ns();
	return done(dv, CALL_RENAME, sb->id, t0, dv->ops->rename(dv->drv, sb, e));
}

int driver_wake(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_WAKE, sb->id, t0, dv->ops->wake(dv->drv, sb, e));
}

int driver_stop(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_STOP, sb->id, t0, dv->ops->stop(dv->drv, sb, e));
}

int driver_destroy(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_DESTROY, sb->id, t0, dv->ops->destroy(dv->drv, sb, e));
}

int driver_weigh(const struct driver_slot *dv, struct sandbox *sb, struct err *e)
{
	if (!dv->ops->weigh)
		return 0;
	int64_t t0 = mono_ns();
	return done(dv, CALL_WEIGH, sb->id, t0, dv->ops->weigh(dv->drv, sb, e));
}

int driver_release(const struct driver_slot *dv, const struct driver_leftover *l, struct err *e)
{
	int64_t t0 = mono_ns();
	return done(dv, CALL_RELEASE, "a leftover", t0, dv->ops->release(dv->drv, l, e));
}

int driver_pid1_state(const struct driver_slot *dv, struct sandbox *sb, char *state)
{
	return dv->ops->pid1_state ? dv->ops->pid1_state(dv->drv, sb, state) : -ENOTSUP;
}

enum driver_state driver_state(const struct driver_slot *dv, struct sandbox *sb)
{
	return dv->ops->state(dv->drv, sb);
}

int driver_stats(const struct driver_slot *dv, struct sandbox *sb, struct driver_stats *out)
{
	return dv->ops->stats ? dv->ops->stats(dv->drv, sb, out) : -ENOTSUP;
}

void driver_layer(const struct driver_slot *dv, struct sandbox *sb, char *out, size_t n)
{
	dv->ops->layer(dv->drv, sb, out, n);
}

void driver_exit_reason(const struct driver_slot *dv, struct sandbox *sb, char *buf, size_t n)
{
	dv->ops->exit_reason(dv->drv, sb, buf, n);
}

int driver_leftovers(const struct driver_slot *dv, struct driver_leftover **out, size_t *n)
{
	return dv->ops->leftovers(dv->drv, out, n);
}

const char *driver_runtime(const struct driver_slot *dv)
{
	return dv->ops->runtime(dv->drv);
}

int driver_write_metrics(const struct daemon *d, struct buf *b)
{
	static const struct {
		const char *name, *help;
	} families[] = {
		{ "space_driver_calls_total", "Calls of an isolation driver, by kind and call." },
		{ "space_driver_call_failures_total", "Calls of an isolation driver that failed." },
		{ "space_driver_call_seconds_total", "Time spent in calls of an isolation driver." },
	};
	int rc = 0;
	for (size_t f = 0; rc == 0 && f < sizeof(families) / sizeof(families[0]); f++) {
		rc = expo_family(b, families[f].name, "counter", families[f].help);
		for (int k = 0; rc == 0 && k < ISOLATION_KINDS; k++)
			for (int c = 0; rc == 0 && d->drivers[k].ops && c < CALLS; c++) {
				const char *labels[] = { "isolation", d->drivers[k].kind, "call", call_names[c], NULL };
				uint64_t v = __atomic_load_n(&d->drivers[k].counts[c][f], __ATOMIC_RELAXED);
				rc = expo_sample(b, families[f].name, labels, f == 2 ? v / 1e9 : (double)v);
			}
	}
	return rc;
}

/*
 * daemon/core/recipe.c - see recipe.h. One job per recipe build: it runs space-build on the
 * recipe's folder (the builder records the template through spaced's socket, as any build
 * does), waits for it with a deadline, then runs again, or fails, the creates that waited.
 */
#include "daemon/core/recipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <jansson.h>

#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/store/template.h"

struct recipe {
	struct recipe *next;   /* [L] in d->recipe_list */
	char name[TEMPLATE_NAME_MAX + 1];
	char dir[600];         /* the recipe: the build's context */
	char packages[TEMPLATE_EXTRA_MAX + 1]; /* its packages file's line, "" for none */
	struct op *waiting;    /* [L] the creates that wait, through op->next */
};

/* A waiting create's request ends (its client left): it waits no more. [L] */
static void on_close(struct op *op)
{
	struct recipe *r = op->owner;
	for (struct op **p = r ? &r->waiting : NULL; p && *p; p = &(*p)->next)
		if (*p == op) {
			*p = op->next;
			break;
		}
	op->next = NULL;
	op->owner = NULL;
	op->on_close = NULL;
	op->deferred = false;
}

/* The recipe's packages file: its first line into out (n bytes), "" when there is none.
 * 0 or -errno with *e set. */
static int read_packages(const char *dir, char *out, size_t n, struct err *e)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/packages", dir);
	out[0] = '\0';
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : err_set(e, ERR_INTERNAL, errno, "cannot read %s: %s", path, strerror(errno));
	int rc = 0;
	if (fgets(out, (int)n, f) && !strchr(out, '\n') && !feof(f))
		rc = err_set(e, ERR_INTERNAL, E2BIG, "%s is over %d bytes", path, TEMPLATE_EXTRA_MAX);
	out[strcspn(out, "\r\n")] = '\0';
	fclose(f);
	return rc;
}

/* The message of the builder's last error event in log (NDJSON), or a plain one. */
static void build_message(const char *log, const char *name, char *out, size_t n)
{
	snprintf(out, n, "building template %s from its recipe failed (no message)", name);
	FILE *f = fopen(log, "re");
	char line[4096];
	while (f && fgets(line, sizeof(line), f)) {
		json_t *ev = json_loads(line, 0, NULL);
		const char *msg = json_string_value(json_object_get(json_object_get(ev, "error"), "message"));
		if (msg)
			snprintf(out, n, "building template %s from its recipe failed: %s", name, msg);
		json_decref(ev);
	}
	if (f)
		fclose(f);
}

/* Waits until pidfd's process ends or ms pass; whether it ended. */
static bool ended(int pidfd, int64_t ms)
{
	int64_t until = mono_ms() + ms;
	for (;;) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int64_t left = until - mono_ms();
		int rc = poll(&p, 1, left > 0 ? (int)(left > 60000 ? 60000 : left) : 0);
		if (rc > 0)
			return true;
		if ((rc == 0 || errno != EINTR) && mono_ms() >= until)
			return false;
	}
}

/* Runs the builder on r's folder; 0 once the template is recorded, else -errno with *e set. */
static int run_build(struct daemon *d, struct recipe *r, struct err *e)
{
	char builds[600], log[800];
	snprintf(builds, sizeof(builds), "%s/builds", d->cfg.state_dir);
	snprintf(log, sizeof(log), "%s/recipe-%s.log", builds, r->name);
	char *argv[16] = { d->cfg.build_path, "--socket", d->cfg.socket_path, "--cache-dir", d->cfg.cache_dir, "--state-dir",
			   d->cfg.state_dir, "--context", r->dir, "--name", r->name };
	int argc = 11;
	if (r->packages[0]) {
		argv[argc++] = "--packages";
		argv[argc++] = r->packages;
	}
	argv[argc] = NULL;
	if (mkdir(builds, 0700) < 0 && errno != EEXIST)
		return err_set(e, ERR_INTERNAL, errno, "cannot make %s: %s", builds, strerror(errno));
	int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot write %s: %s", log, strerror(errno));
	log_info("building template %s from its recipe %s (%s)", r->name, r->dir, log);
	pid_t pid = spawn_start_keep(argv, NULL, 0, out, out);
	close(out);
	if (pid < 0)
		return err_set(e, ERR_INTERNAL, (int)-pid, "cannot start %s: %s", d->cfg.build_path, strerror((int)-pid));
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) /* the builder runs on: without a handle, it is given its whole time */
		return err_set(e, ERR_INTERNAL, errno, "cannot watch the builder: %s", strerror(errno));
	bool in_time = ended(pidfd, RECIPE_BUILD_TIMEOUT_S * 1000LL);
	if (!in_time) { /* told as a build whose client left: it removes its step's sandbox */
		syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
		if (!ended(pidfd, RECIPE_STOP_GRACE_S * 1000LL)) {
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			ended(pidfd, RECIPE_STOP_GRACE_S * 1000LL);
		}
	}
	close(pidfd);
	char rootfs[1024];
	if (in_time && template_rootfs(d, r->name, rootfs, sizeof(rootfs)) == 0)
		return 0;
	if (!in_time)
		return err_set(e, ERR_TIMEOUT, ETIMEDOUT, "building template %s from its recipe took over %d s: stopped",
			       r->name, RECIPE_BUILD_TIMEOUT_S);
	char msg[sizeof(e->msg)];
	build_message(log, r->name, msg, sizeof(msg));
	return err_set(e, ERR_BUILD_FAILED, EIO, "%s", msg);
}

static void recipe_job(struct job *j)
{
	struct daemon *d = j->d;
	struct recipe *r = j->recipe;
	struct err e = { 0 };
	int rc = run_build(d, r, &e);
	if (rc == 0)
		log_info("template %s built from its recipe", r->name);
	else
		log_warn("%s", e.msg);
	daemon_lock(d);
	for (struct recipe **p = &d->recipe_list; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	for (struct op *op; (op = r->waiting);) {
		on_close(op); /* it waits no more */
		if (rc < 0)
			op_fail(op, &e);
		else
			op->front->retry(op); /* the create again */
	}
	daemon_unlock(d);
	free(r);
}

int recipe_wait(struct daemon *d, struct op *op, const char *name, struct err *e)
{
	char rootfs[1024], dockerfile[700];
	if (!template_name_ok(name) || strchr(name, ':') || template_rootfs(d, name, rootfs, sizeof(rootfs)) == 0)
		return 0;
	struct recipe *r = d->recipe_list;
	while (r && strcmp(r->name, name) != 0)
		r = r->next;
	if (!r) {
		snprintf(dockerfile, sizeof(dockerfile), "%s/%s/Dockerfile", d->cfg.recipes_dir, name);
		if (access(dockerfile, R_OK) != 0)
			return 0;
		if (!(r = calloc(1, sizeof(*r))))
			return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
		snprintf(r->name, sizeof(r->name), "%s", name);
		snprintf(r->dir, sizeof(r->dir), "%s/%s", d->cfg.recipes_dir, name);
		struct job j = { .fn = recipe_job, .recipe = r };
		int rc = read_packages(r->dir, r->packages, sizeof(r->packages), e);
		if (rc == 0)
			rc = job_start(d, &j, e);
		if (rc < 0) {
			free(r);
			return rc;
		}
		r->next = d->recipe_list;
		d->recipe_list = r;
	}
	op->deferred = true;
	op->owner = r;
	op->on_close = on_close;
	op->next = r->waiting;
	r->waiting = op;
	return 1;
}

void recipe_tick(struct daemon *d)
{
	for (struct recipe *r = d->recipe_list; r; r = r->next)
		for (struct op *op = r->waiting, *next; op; op = next) {
			next = op->next;
			op_check_gone(op);
		}
}

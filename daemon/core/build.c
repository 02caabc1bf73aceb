/*
 * daemon/core/build.c - see build.h.
 */
#include "daemon/core/build.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/core/pool.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/stats.h"
#include "daemon/core/template_rm.h"
#include "daemon/store/store.h"
#include "daemon/store/template.h"
#include "lib/host/dockerfile.h"

struct build {
	struct build *next; /* [L] in d->build_list */
	struct daemon *d;
	struct op *op;     /* [L] the request; NULL once its client left */
	char dir[600];     /* <state>/builds/<id> */
	char name[TEMPLATE_NAME_MAX + 1];
	char file[BUILD_FILE_MAX + 1];
	json_t *args;      /* "NAME=VALUE" strings */
	char transport[32]; /* an import (build_import): "oci-archive" or "docker-archive" for the
			     * body, "" for an image named in source; "" and no source: a build */
	char source[TEMPLATE_SOURCE_MAX + 1];
	char packages[TEMPLATE_EXTRA_MAX + 1]; /* a build's --packages, "" for none */
	int tar_fd;        /* context.tar while it is written, then -1 */
	uint64_t tar_bytes;
	int pidfd;         /* [L] the builder while it runs, else -1 */
	bool started;      /* [L] the job owns the build (and frees it) */
	bool cancelled;    /* [L] by build_cancel: no more context is taken, its builder is told */
	bool made;         /* the builder said "done": the template was made */
};

static void remove_dir(const char *dir)
{
	char *rm[] = { "rm", "-rf", "--", (char *)dir, NULL };
	if (spawn_run(rm, -1, -1) != 0)
		log_warn("build folder %s stays", dir);
}

/* Takes b out of d->build_list and frees it. [L] */
static void build_free(struct build *b)
{
	for (struct build **p = &b->d->build_list; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			break;
		}
	if (b->tar_fd >= 0)
		close(b->tar_fd);
	json_decref(b->args);
	free(b);
}

/* The build is over: its request (if its client is still there) is let go, and b freed. [L] */
static void build_done(struct build *b)
{
	if (b->op) {
		b->op->owner = NULL;
		b->op->on_take = b->op->on_close = NULL;
	}
	b->d->builds--;
	build_free(b);
}

/* The client took bytes: a builder waiting for room may go on. [L] */
static void on_take(struct op *op)
{
	struct build *b = op->owner;
	if (b && buf_avail(&op->out) <= BUILD_LOG_BUFFER / 2)
		pthread_cond_broadcast(&b->d->cond);
}

/* The request ends: a build whose client left is cancelled. [L] */
static void on_close(struct op *op)
{
	struct build *b = op->owner;
	op->owner = NULL;
	op->on_take = op->on_close = NULL;
	if (!b)
		return;
	b->op = NULL;
	if (!b->started) { /* its context never came whole: nothing runs yet, one file to remove */
		char tar[700];
		snprintf(tar, sizeof(tar), "%s/context.tar", b->dir);
		unlink(tar);
		rmdir(b->dir);
		build_done(b);
		return;
	}
	if (b->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGTERM, NULL, 0);
	pthread_cond_broadcast(&b->d->cond);
}

int build_cancel(struct daemon *d, const char *name, struct err *e)
{
	int told = 0;
	for (struct build *b = d->build_list, *next; b; b = next) {
		next = b->next;
		if (strcmp(b->name, name) != 0)
			continue;
		told++;
		b->cancelled = true; /* its context's next piece fails, or its builder is told once it runs */
		if (b->started && b->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, b->pidfd, SIGTERM, NULL, 0);
	}
	pthread_cond_broadcast(&d->cond);
	return told ? 0 : err_set(e, ERR_NOT_FOUND, ENOENT, "no build of template %s runs", name);
}

int build_import(struct daemon *d, struct op *op, const char *name, const char *source, struct err *e)
{
	bool upload = strcmp(source, "oci-archive") == 0 || strcmp(source, "docker-archive") == 0;
	if (!upload && strncmp(source, "docker://", 9) != 0 && strncmp(source, BUILD_PACKAGES_SOURCE,
									 strlen(BUILD_PACKAGES_SOURCE)) != 0)
		return err_set(e, ERR_INVALID, EINVAL,
			       "source must be oci-archive or docker-archive (the body is the archive), docker://REFERENCE "
			       "or packages:PKG[,PKG...]");
	if (!upload && source[0] == 'p') { /* the default template's packages and these */
		struct template_spec t;
		char arg[TEMPLATE_NAME_MAX + TEMPLATE_SOURCE_MAX + 2];
		snprintf(arg, sizeof(arg), "x=%s", source + strlen(BUILD_PACKAGES_SOURCE));
		if (template_parse(arg, &t, e) < 0)
			return -EINVAL;
	}
	if (strlen(source) > TEMPLATE_SOURCE_MAX)
		return err_set(e, ERR_INVALID, E2BIG, "source is over %d bytes", TEMPLATE_SOURCE_MAX);
	int rc = build_begin(d, op, name, "Dockerfile", NULL, NULL, e);
	if (rc < 0)
		return rc;
	struct build *b = op->owner;
	if (upload)
		snprintf(b->transport, sizeof(b->transport), "%s", source);
	else
		snprintf(b->source, sizeof(b->source), "%s", source);
	return 0;
}

void build_sweep(struct daemon *d)
{
	char builds[600];
	snprintf(builds, sizeof(builds), "%s/builds", d->cfg.state_dir);
	if (access(builds, F_OK) == 0) /* contexts, logs and locks of builds that ended with the spaced before */
		remove_dir(builds);
	sandbox_delete_marked(d, BUILD_SANDBOX_KEY, "of a build that ended with the spaced before");
}

void build_tick(struct daemon *d)
{
	for (struct build *b = d->build_list; b; b = b->next)
		if (b->op)
			op_check_gone(b->op);
}

int build_begin(struct daemon *d, struct op *op, const char *name, const char *file, json_t *args,
		const char *packages, struct err *e)
{
	if (!name || !template_name_ok(name))
		return err_set(e, ERR_INVALID, EINVAL,
			       "name must be a template name: NAME[:TAG], each [A-Za-z0-9][A-Za-z0-9._-]*, at most %d bytes",
			       TEMPLATE_NAME_MAX);
	char canon[TEMPLATE_NAME_MAX + 1];
	snprintf(canon, sizeof(canon), "%s", name);
	template_name_canon(canon);
	name = canon;
	if (strcmp(name, TEMPLATE_DEFAULT) == 0)
		return err_set(e, ERR_CONFLICT, EEXIST, "the default template is spaced's own: name the build another");
	if (strlen(file) > BUILD_FILE_MAX || !*file)
		return err_set(e, ERR_INVALID, EINVAL, "dockerfile must be a path of 1 to %d bytes", BUILD_FILE_MAX);
	if (packages) { /* checked as spaced --template NAME=PKG,... is (the builder names them again) */
		struct template_spec t;
		char arg[TEMPLATE_EXTRA_MAX + 8];
		if (strlen(packages) > TEMPLATE_EXTRA_MAX)
			return err_set(e, ERR_INVALID, E2BIG, "packages is over %d bytes", TEMPLATE_EXTRA_MAX);
		snprintf(arg, sizeof(arg), "x=%s", packages);
		if (template_parse(arg, &t, e) < 0)
			return -EINVAL;
	}
	if (json_array_size(args) > DOCKERFILE_BUILD_ARGS_MAX)
		return err_set(e, ERR_INVALID, E2BIG, "at most %d build arguments", DOCKERFILE_BUILD_ARGS_MAX);
	if (d->builds >= BUILD_MAX_RUNNING)
		return err_set(e, ERR_TOO_MANY, EAGAIN, "%d builds are running: try again when one ends", BUILD_MAX_RUNNING);
	struct build *b = calloc(1, sizeof(*b));
	unsigned char r[8];
	if (!b || getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		free(b);
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	}
	b->d = d;
	b->op = op;
	b->pidfd = -1;
	snprintf(b->name, sizeof(b->name), "%s", name);
	snprintf(b->packages, sizeof(b->packages), "%s", packages ? packages : "");
	snprintf(b->file, sizeof(b->file), "%s", file);
	b->args = json_incref(args);
	char parent[600], tar[700];
	snprintf(parent, sizeof(parent), "%s/builds", d->cfg.state_dir);
	snprintf(b->dir, sizeof(b->dir), "%s/%02x%02x%02x%02x%02x%02x%02x%02x", parent, r[0], r[1], r[2], r[3], r[4],
		 r[5], r[6], r[7]);
	snprintf(tar, sizeof(tar), "%s/context.tar", b->dir);
	if ((mkdir(parent, 0700) < 0 && errno != EEXIST) || mkdir(b->dir, 0700) < 0 ||
	    (b->tar_fd = open(tar, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
		int rc = err_set(e, ERR_INTERNAL, errno, "cannot make the build's folder: %s", strerror(errno));
		rmdir(b->dir);
		b->tar_fd = -1;
		build_free(b);
		return rc;
	}
	d->builds++;
	b->next = d->build_list;
	d->build_list = b;
	op->owner = b;
	op->on_take = on_take;
	op->on_close = on_close;
	return 0;
}

int build_upload(struct op *op, const char *data, size_t n)
{
	struct build *b = op->owner;
	if (!b || b->tar_fd < 0)
		return err_set(&op->err, ERR_INTERNAL, EBADF, "the build is gone");
	if (b->cancelled)
		return err_set(&op->err, ERR_CANCELLED, ECANCELED, "the build of template %s was cancelled", b->name);
	if (b->tar_bytes + n > BUILD_UPLOAD_MAX)
		return err_set(&op->err, ERR_TOO_LARGE, E2BIG, "a build context is limited to %llu bytes",
			       (unsigned long long)BUILD_UPLOAD_MAX);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(b->tar_fd, data + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return err_set(&op->err, errno == ENOSPC ? ERR_NO_SPACE : ERR_INTERNAL, errno,
				       "cannot keep the build context: %s", strerror(errno));
		off += (size_t)w;
	}
	b->tar_bytes += n;
	return 0;
}

/* Hands the builder's output to the client as it comes, holding at most BUILD_LOG_BUFFER. */
static void relay(struct build *b, int fd)
{
	struct daemon *d = b->d;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		b->made = b->made || (n > 0 && memmem(buf, (size_t)n, "{\"type\":\"done\"", 14)); /* its last event */
		daemon_lock(d);
		if (n > 0 && b->op) {
			buf_put(&b->op->out, buf, (size_t)n);
			op_wake(b->op);
			while (b->op && buf_avail(&b->op->out) > BUILD_LOG_BUFFER)
				pthread_cond_wait(&d->cond, &d->lock);
		}
		if (n <= 0 && b->op) {
			if (n < 0)
				b->op->failed = true;
			b->op->eof = true;
			op_wake(b->op);
		}
		daemon_unlock(d);
		if (n <= 0)
			return;
	}
}

static void build_job(struct job *j)
{
	struct build *b = j->build;
	struct daemon *d = j->d;
	char tar[700], context[700], log[700];
	snprintf(tar, sizeof(tar), "%s/context.tar", b->dir);
	snprintf(context, sizeof(context), "%s/context", b->dir);
	snprintf(log, sizeof(log), "%s/build.log", b->dir);
	char *argv[20 + DOCKERFILE_BUILD_ARGS_MAX * 2] = {
		d->cfg.build_path, "--socket", d->cfg.socket_path, "--cache-dir", d->cfg.cache_dir, "--state-dir", d->cfg.state_dir,
		"--context", context, "--archive", tar, "--name", b->name, "--file", b->file,
	};
	int argc = 15;
	if (b->packages[0]) {
		argv[argc++] = "--packages";
		argv[argc++] = b->packages;
	}
	size_t i;
	json_t *a;
	json_array_foreach(b->args, i, a) {
		argv[argc++] = "--build-arg";
		argv[argc++] = (char *)json_string_value(a);
	}
	argv[argc] = NULL;
	int64_t t0 = mono_ms();
	int pipefd[2] = { -1, -1 }, logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pid_t pid = pipe2(pipefd, O_CLOEXEC) < 0 ? -errno : spawn_start_keep(argv, NULL, 0, pipefd[1], logfd);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (logfd >= 0)
		close(logfd);
	daemon_lock(d);
	if (pid > 0)
		b->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (b->op && pid < 0) {
		struct err e = { 0 };
		err_set(&e, ERR_INTERNAL, -pid, "cannot start the builder: %s", strerror(-pid));
		op_fail(b->op, &e);
	} else if (b->op) {
		b->op->answer = ANSWER_OK;
		b->op->responding = true; /* the builder's events, as they come */
		op_wake(b->op);
	}
	if (b->pidfd >= 0 && (!b->op || b->cancelled)) /* its client left, or a DELETE came, before it ran */
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGTERM, NULL, 0);
	daemon_unlock(d);
	if (pid > 0) {
		log_info("building template %s (%s)", b->name, b->dir);
		stats_add(d->stats, STATS_BUILDS_STARTED, 1);
		relay(b, pipefd[0]);
		stats_build_done(d->stats, b->made, (mono_ms() - t0) * 1000000);
	}
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	remove_dir(b->dir);
	daemon_lock(d);
	if (b->pidfd >= 0)
		close(b->pidfd);
	b->pidfd = -1;
	build_done(b);
	daemon_unlock(d);
}

/* An import: the image (the body's archive, or source) becomes template b->name. */
static void import_job(struct job *j)
{
	struct build *b = j->build;
	struct daemon *d = j->d;
	struct template_spec t = { 0 };
	snprintf(t.name, sizeof(t.name), "%s", b->name);
	if (b->transport[0]) { /* the archive is a file of the request's: the record says so */
		snprintf(t.source, sizeof(t.source), "%s:%s/context.tar", b->transport, b->dir);
		snprintf(t.recorded, sizeof(t.recorded), "%s:(uploaded)", b->transport);
		t.consume = true;
	} else {
		snprintf(t.source, sizeof(t.source), "%s", b->source);
	}
	struct err e = { 0 };
	int rc = 0;
	if (strncmp(b->source, BUILD_PACKAGES_SOURCE, strlen(BUILD_PACKAGES_SOURCE)) == 0) {
		char arg[TEMPLATE_NAME_MAX + TEMPLATE_SOURCE_MAX + 2];
		snprintf(arg, sizeof(arg), "%s=%s", b->name, b->source + strlen(BUILD_PACKAGES_SOURCE));
		rc = template_parse(arg, &t, &e);
		if (rc == 0) /* mmdebstrap from the host's apt sources, as the default template is made */
			rc = template_ensure(d, &t, &e);
	} else {
		rc = template_import(d, &t, &e);
	}
	json_t *tpl = rc == 0 ? store_get_template(d->store, b->name) : NULL;
	remove_dir(b->dir);
	daemon_lock(d);
	if (b->op && rc < 0) {
		op_fail(b->op, &e);
	} else if (b->op) {
		b->op->answer = ANSWER_CREATED;
		b->op->json = tpl;
		tpl = NULL;
		op_finish(b->op);
	}
	build_done(b);
	daemon_unlock(d);
	json_decref(tpl);
}

int build_start(struct op *op)
{
	struct build *b = op->owner;
	if (!b)
		return err_set(&op->err, ERR_INTERNAL, EBADF, "the build is gone");
	if (b->started)
		return 0;
	if (b->cancelled)
		return err_set(&op->err, ERR_CANCELLED, ECANCELED, "the build of template %s was cancelled", b->name);
	if (close(b->tar_fd) < 0) {
		b->tar_fd = -1;
		return err_set(&op->err, ERR_INTERNAL, errno, "cannot keep the build context: %s", strerror(errno));
	}
	b->tar_fd = -1;
	struct job j = { .fn = b->transport[0] || b->source[0] ? import_job : build_job, .build = b };
	int rc = job_start(op->d, &j, &op->err);
	if (rc == 0)
		b->started = true;
	return rc;
}

static void record_job(struct job *j)
{
	struct daemon *d = j->d;
	const char *name = j->record.name, *key = j->record.key;
	const char *source = json_string_value(json_object_get(j->record.body, "source"));
	char rootfs[1200], *cfg = json_dumps(json_object_get(j->record.body, "config"), JSON_COMPACT | JSON_SORT_KEYS);
	snprintf(rootfs, sizeof(rootfs), "%s/templates/%s/rootfs", d->cfg.cache_dir, key);
	struct err e = { 0 };
	/* marked before it is looked for: a release sees it (template.h) */
	int rc = template_use(d, key);
	if (rc < 0)
		err_set(&e, ERR_INTERNAL, -rc, "cannot mark the template's files as used: %s", strerror(-rc));
	else if (access(rootfs, F_OK) < 0)
		rc = err_set(&e, ERR_CONFLICT, ENOENT, "the files of %s left the cache: build again", key);
	json_t *old = rc == 0 ? store_get_template(d->store, name) : NULL;
	if (rc == 0 && (rc = store_put_template(d->store, name, key, rootfs, source, cfg ? cfg : "{}")) < 0)
		err_set(&e, ERR_INTERNAL, -rc, "cannot record template %s", name);
	const char *old_key = json_string_value(json_object_get(old, "key"));
	daemon_lock(d);
	int users = old_key && strcmp(old_key, key) != 0 ? template_sandboxes(d, name) : 0;
	daemon_unlock(d);
	/* the files it replaced go with their last user; a sandbox or snapshot of them keeps them */
	if (rc == 0 && old_key && strcmp(old_key, key) != 0 && users == 0 && store_template_snapshots(d->store, name) == 0)
		template_release(d, old_key);
	if (rc == 0) {
		template_put_info(d, name, rootfs, json_incref(json_object_get(j->record.body, "layers")));
		json_int_t pool = json_integer_value(json_object_get(json_object_get(j->record.body, "config"), "pool"));
		daemon_lock(d);
		pool_template(d, name, pool > 0 && pool <= POOL_MAX_SIZE ? (int)pool : 0); /* LABEL space.pool */
		daemon_unlock(d);
	}
	json_t *t = rc == 0 ? store_get_template(d->store, name) : NULL;
	json_decref(old);
	free(cfg);
	if (rc == 0)
		log_info("template %s recorded (%s)", name, key);
	daemon_lock(d);
	if (rc < 0) {
		op_fail(j->op, &e);
	} else {
		j->op->answer = ANSWER_OK;
		j->op->json = t;
		op_finish(j->op);
	}
	daemon_unlock(d);
	json_decref(j->record.body);
}

int build_record(struct daemon *d, struct op *op, const char *name, json_t *body, struct err *e)
{
	const char *key = json_string_value(json_object_get(body, "key"));
	const char *source = json_string_value(json_object_get(body, "source"));
	if (!template_name_ok(name) || strcmp(name, TEMPLATE_DEFAULT) == 0)
		return err_set(e, ERR_INVALID, EINVAL, "%s cannot name a built template", name);
	if (!key || !*key || strlen(key) > 80 || key[0] == '.' ||
	    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(key))
		return err_set(e, ERR_INVALID, EINVAL, "key must name an entry of the cache's templates");
	if (!source || strlen(source) > TEMPLATE_SOURCE_MAX || !json_is_object(json_object_get(body, "config")))
		return err_set(e, ERR_INVALID, EINVAL, "source (a string) and config (an object) are required");
	struct job j = { .fn = record_job, .op = op, .record.body = json_incref(body) };
	snprintf(j.record.name, sizeof(j.record.name), "%s", name);
	snprintf(j.record.key, sizeof(j.record.key), "%s", key);
	int rc = job_start(d, &j, e);
	if (rc < 0)
		json_decref(body);
	return rc;
}

/*
 * daemon/main.c - spaced: the host daemon of space.
 *
 *   spaced [--state-dir DIR] [--socket PATH] [--listen HOST:PORT [--tls-cert FILE --tls-key FILE]]
 *          [--isolation gvisor|microvm] [--accel auto|kvm|tcg] [--cache-dir DIR] [--agent PATH] [--no-auto-resume]
 *          [--tenant-snapshots N] [--tenant-snapshot-mb MB] [--reserve-mb MB]
 *          [--template NAME=PKG[,PKG...]]...
 *   spaced [--state-dir DIR] token create [--name NAME] [--tenant TENANT] [--admin]
 *
 * main() is the list of phases. Sandboxes do not depend on spaced staying
 * alive: stopping spaced leaves them running, and the next spaced adopts them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <linux/close_range.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/core/isolation.h"
#include "daemon/core/build.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/op.h"
#include "daemon/core/pool.h"
#include "daemon/core/ready.h"
#include "daemon/core/recipe.h"
#include "daemon/daemon.h"
#include "daemon/driver/driver.h"
#include "daemon/driver/vm_log.h"
#include "lib/host/hash.h"
#include "daemon/api/http.h"
#include "daemon/base/reaper.h"
#include "daemon/base/crash.h"
#include "daemon/base/log.h"
#include "daemon/base/notify.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/snapshot.h"
#include "daemon/core/stats.h"
#include "daemon/core/sweep.h"
#include "daemon/core/volume.h"
#include "daemon/core/metrics.h"
#include "daemon/net/net.h"
#include "daemon/net/proxy.h"
#include "daemon/net/dns.h"
#include "daemon/net/policy.h"
#include "daemon/store/store.h"
#include "daemon/store/template.h"

static void io_lock(void *ctx)
{
	daemon_lock(ctx);
}

static void io_unlock(void *ctx)
{
	daemon_unlock(ctx);
}

/* What spaced serves, in a line for the service manager's status: its sandboxes by state and
 * the warm ones of its pools. [L] */
static void status_line(const struct daemon *d, char *out, size_t n)
{
	int shown = 0, running = 0, paused = 0, suspended = 0, warm = 0;
	for (const struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		if (sb->pooled != SB_POOL_NONE) {
			warm++;
			continue;
		}
		shown++;
		running += sb->state == SB_RUNNING;
		paused += sb->state == SB_PAUSED;
		suspended += sb->state == SB_SUSPENDED;
	}
	snprintf(out, n, "serving: %d sandboxes (%d running, %d paused, %d suspended), %d warm in pools", shown, running,
		 paused, suspended, warm);
}

/* Tells the service manager the status line once it changed (each tick, from the API's start). [L] */
static void io_status(struct daemon *d)
{
	char line[sizeof(d->status)];
	if (!d->serving)
		return;
	status_line(d, line, sizeof(line));
	if (strcmp(line, d->status) == 0)
		return;
	memcpy(d->status, line, sizeof(line));
	notify_status("%s", line);
}

static void io_tick(void *ctx)
{
	io_status(ctx);
	lifecycle_tick(ctx);
	build_tick(ctx);
	recipe_tick(ctx);
	pool_tick(ctx);
	e2b_tick(ctx);
	metrics_tick(ctx);
}

static void io_after(void *ctx)
{
	sandbox_reap(ctx);
}

static void io_reaper(void *ctx)
{
	struct daemon *d = ctx;
	reaper_run(d->reaperfd);
}

/* What the I/O thread calls back: it knows no sandbox itself. */
static const struct loop_hooks io_hooks = {
	.lock = io_lock, .unlock = io_unlock, .tick = io_tick, .after = io_after, .reaper = io_reaper,
};

/* Makes path and its missing parents, the parents 0755 and path itself `mode`, whatever the
 * umask; what exists keeps its mode. Returns 0 or -errno. */
static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[512];
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;
		*p = '\0';
		mode_t m = c ? 0755 : mode;
		if (mkdir(tmp, m) == 0) {
			if (chmod(tmp, m) < 0)
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
		if (!c)
			return 0;
		*p = c;
	}
}

/* The state directory is spaced's alone: made 0700, and one that exists loses its group and
 * other bits (tokens' hashes and every sandbox's files are in it). Returns 0 or -errno. */
static int make_state_dir(const char *path)
{
	int rc = mkdir_p(path, 0700);
	if (rc < 0)
		return rc;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	rc = fstat(fd, &st) < 0 ? -errno : 0;
	if (rc == 0 && (st.st_mode & 077)) {
		rc = fchmod(fd, st.st_mode & 0700) < 0 ? -errno : 0;
		if (rc == 0)
			log_info("%s was open to others (mode %04o): made it %04o", path, st.st_mode & 07777,
				 st.st_mode & 0700);
	}
	close(fd);
	return rc;
}

/* Makes a token and prints it. A tenant's name over TENANT_NAME_MAX bytes is refused: cut to
 * fit, two long names sharing a prefix would become one tenant. */
static int token_create(struct daemon *d, int argc, char **argv, struct err *e)
{
	const char *name = "", *tenant = NULL;
	bool admin = false; /* it may also read GET /metrics over TCP */
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			name = argv[++i];
		else if (strcmp(argv[i], "--tenant") == 0 && i + 1 < argc)
			tenant = argv[++i];
		else if (strcmp(argv[i], "--admin") == 0)
			admin = true;
		else
			return err_set(e, ERR_INVALID, EINVAL, "token create: unexpected argument '%s'", argv[i]);
	}
	/* every token belongs to a tenant: its own name unless told otherwise */
	if (!tenant || !*tenant)
		tenant = *name ? name : "default";
	if (strlen(tenant) > TENANT_NAME_MAX)
		return err_set(e, ERR_INVALID, ENAMETOOLONG,
			       "the tenant's name is %zu bytes; at most %d are allowed", strlen(tenant), TENANT_NAME_MAX);
	uint8_t r[24];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return err_set(e, ERR_INTERNAL, EIO, "no random bytes: %s", strerror(errno));
	char token[3 + 2 * sizeof(r) + 1] = "sp_";
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(token + 3 + 2 * i, 3, "%02x", r[i]);
	char hex[65];
	int rc = hash_sha256_hex(token, strlen(token), hex);
	if (rc == 0)
		rc = store_add_token(d->store, hex, name, tenant);
	if (rc == 0 && admin)
		rc = store_token_set_admin(d->store, hex);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot store it: %s", strerror(-rc));
	printf("%s\n", token);
	return 0;
}

static void block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigset_t all = *set;
	sigaddset(&all, SIGCHLD); /* taken by the reaper's signalfd, in the I/O thread */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Every connection a client holds (a stream of a background command's output holds one for the
 * command's life) is a descriptor: take up to SPACED_NOFILE of them when the hard limit allows
 * (the usual soft limit, 1,024, is below the listeners' HTTP_MAX_CONNECTIONS). */
#define SPACED_NOFILE 65536
static void raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) < 0 || r.rlim_cur >= SPACED_NOFILE || r.rlim_cur == r.rlim_max)
		return;
	r.rlim_cur = r.rlim_max < SPACED_NOFILE ? r.rlim_max : SPACED_NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &r) < 0)
		log_warn("cannot raise the limit on open files to %llu: %s", (unsigned long long)r.rlim_cur,
			 strerror(errno));
}

/* 2. state: what spaced writes is its own (the socket and what sandboxes see are made open on
 * purpose). Returns the exit status, or -1 to go on. */
static int open_state(struct daemon *d)
{
	char dbpath[600];
	int rc;
	umask(077);
	if ((rc = make_state_dir(d->cfg.state_dir)) < 0) {
		fprintf(stderr, "spaced: cannot create %s: %s\n", d->cfg.state_dir, strerror(-rc));
		return 1;
	}
	snprintf(dbpath, sizeof(dbpath), "%s/state.db", d->cfg.state_dir);
	if ((rc = store_open(dbpath, &d->store)) < 0) {
		fprintf(stderr, "spaced: cannot open %s: %s\n", dbpath,
			rc == -EPROTO	     ? "it was written by a newer spaced (its schema is past this one's)"
			: rc == -EMEDIUMTYPE ? "it was written by a spaced from before numbered schemas, which this one "
					       "does not read (move it away to start afresh)"
					     : strerror(-rc));
		return 1;
	}
	return -1;
}

/* A subcommand instead of the daemon (`spaced token create ...`): its exit status. */
static int subcommand(struct daemon *d, int argc, char **argv)
{
	struct err e = { 0 };
	if (strcmp(argv[0], "token") == 0 && argc > 1 && strcmp(argv[1], "create") == 0) {
		int rc = token_create(d, argc - 2, argv + 2, &e);
		if (rc < 0)
			fprintf(stderr, "spaced: cannot create a token: %s\n", e.msg);
		return rc == -EINVAL ? 2 : rc < 0;
	}
	config_usage(stderr);
	return 2;
}

/* 3 and 4. the host: every isolation kind it can run (the default one at least), its side of
 * the sandboxes' networks (table inet space made afresh: adoption puts each sandbox's rules
 * back), and the templates: the default one and those --template names (each built once per
 * machine and package list, then cached). Returns the exit status, or -1 to go on. */
static int prepare_host(struct daemon *d, const struct config *cfg)
{
	static const struct template_spec deflt = { .name = TEMPLATE_DEFAULT };
	struct err e = { 0 };
	int rc;
	if (config_programs(&d->cfg) < 0)
		return 1;
	if ((rc = isolation_init(d, cfg->isolation, driver_find, &e)) < 0) {
		fprintf(stderr, "spaced: %s\n", e.msg);
		return rc == -EINVAL ? 2 : 1;
	}
	if (net_init(d, &e) < 0) {
		fprintf(stderr, "spaced: %s\n", e.msg);
		return 1;
	}
	notify_status("preparing the templates (the first start on a machine builds the default one, about a minute)");
	for (int i = -1; i < cfg->ntemplates; i++) {
		const struct template_spec *t = i < 0 ? &deflt : &cfg->templates[i];
		if (template_ensure(d, t, &e) < 0) {
			log_error("template %s: %s", t->name, e.msg);
			return 1;
		}
	}
	return -1;
}

/* 5 and 6. threads (signals stay blocked in all of them; main waits for them), then the
 * sandboxes a previous spaced left running adopted, and what no record owns released:
 * unfinished destroys, containers, mounts, loops, folders, interfaces. Returns the exit
 * status, or -1 to go on. */
static int adopt(struct daemon *d, sigset_t *sigs)
{
	struct err e = { 0 };
	int rc;
	block_signals(sigs);
	d->reaperfd = reaper_init();
	if (d->reaperfd < 0)
		log_warn("cannot become a subreaper: %s; deletes and suspends wait for PID 1 to reap",
			 strerror(-d->reaperfd));
	d->peer_events = &lifecycle_peer_events;
	if ((rc = loop_start(&d->loop, &io_hooks, d, d->reaperfd)) < 0) {
		log_error("cannot start the I/O thread: %s", strerror(-rc));
		return 1;
	}
	volume_start(d); /* the volumes' images mounted before any sandbox that binds them is adopted */
	notify_status("adopting the sandboxes a previous spaced left running");
	if ((rc = sandbox_adopt_all(d)) < 0) {
		log_error("cannot load sandboxes: %s", strerror(-rc));
		return 1;
	}
	daemon_lock(d);
	rc = net_transit_check(d, &e);
	daemon_unlock(d);
	if (rc < 0) {
		log_error("%s", e.msg);
		return 2;
	}
	snapshot_cleanup(d);
	sweep_run(d);
	daemon_lock(d);
	net_sweep(d);
	daemon_unlock(d);
	build_sweep(d);
	pool_sweep(d); /* the pools fill afresh once the API is up (pool_tick) */
	pool_templates(d);
	return -1;
}

/* 7. the API, the port proxy, the resolver and the watch of the sandboxes' rules; then the
 * service manager is told spaced is ready. Returns the exit status, or -1 to go on. */
static int serve(struct daemon *d)
{
	char rundir[512];
	int rc;
	snprintf(rundir, sizeof(rundir), "%s", d->cfg.socket_path);
	mkdir_p(dirname(rundir), 0755); /* the group space reaches the socket through it */
	if (http_start(d) < 0 || proxy_start(d) < 0)
		return 1;
	if (dns_start(d) < 0)
		log_warn("sandboxes have no resolver of spaced's: their DNS questions go unanswered");
	if ((rc = net_watch_start(d)) < 0)
		log_warn("cannot watch the sandboxes' rules: %s; rules taken away stay away (sandboxes then reach "
			 "nothing beyond this host)", strerror(-rc));
	log_info("spaced %s listening on %s%s%s%s (isolation %s by default, %s)", SPACE_VERSION, d->cfg.socket_path,
		 d->cfg.listen_addr[0] ? " and " : "", d->cfg.listen_addr, d->tls_cert ? " (TLS)" : "", d->isolation->kind,
		 driver_runtime(d->isolation));
	/* the socket answers from here on: a service manager may start what needs spaced. Told
	 * under the lock, so no status of the I/O thread's (io_status) goes before it. */
	daemon_lock(d);
	d->serving = true; /* the warm pools fill from here on: the start's sweeps are done */
	status_line(d, d->status, sizeof(d->status));
	notify_ready(d->status);
	daemon_unlock(d);
	return -1;
}

int main(int argc, char **argv)
{
	static struct daemon dd;
	static struct config cfg;
	struct daemon *d = &dd;
	struct err e = { 0 };
	sigset_t sigs;
	int rc;

	/* Descriptors inherited from whoever started us must not reach runsc and sandboxes. */
	close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
	/* spaced run as a microVM's log keeper (vm_log.h), its pipes as 3 and 4 */
	if (argc == 2 && strcmp(argv[1], "--version") == 0)
		return printf("spaced %s\n", SPACE_VERSION) < 0;
	if (argc == 3 && strcmp(argv[1], VM_LOG_KEEPER_ARG) == 0)
		return vm_log_keep(argv[2]);

	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->loop.epfd = d->loop.wakefd = d->reaperfd = -1;
	d->e2b_fd = d->e2b_pidfd = -1;
	if (!(d->stats = stats_new()))
		return 1;

	/* 1. configuration (and the durability tests' crash step, when they set one) */
	crash_init();
	rc = config_load(d, &cfg, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	starts_init(&d->starts, d->cfg.max_starting);
	raise_nofile();
	if (optind == argc && http_tls_load(d, &e) < 0) {
		fprintf(stderr, "spaced: %s\n", e.msg);
		return 2;
	}
	if ((rc = open_state(d)) >= 0)
		return rc;
	if (optind < argc)
		return subcommand(d, argc - optind, argv + optind);
	if ((rc = prepare_host(d, &cfg)) >= 0 || (rc = adopt(d, &sigs)) >= 0 || (rc = serve(d)) >= 0)
		return rc;

	/* 8. run until told to stop; sandboxes keep running after */
	int sig;
	sigwait(&sigs, &sig);
	log_info("stopping on signal %d; sandboxes keep running", sig);
	notify_stopping("stopping; sandboxes keep running");
	net_watch_stop(d);
	proxy_stop(d);
	dns_stop(d);
	http_stop(d);
	daemon_lock_report(d);
	return 0;
}

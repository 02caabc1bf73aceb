/*
 * daemon/api/api_metrics.c - GET /metrics: spaced's own figures in Prometheus' text format.
 *
 * The answer is the sandboxes by state and kind, the warm pools, the builds in flight and the
 * node's capacity, read at the request, then the counters and histograms of core/stats.h. The
 * route is the administrator's: the Unix socket's, or a request made with an administrator's
 * token (spaced token create --admin); a tenant's token is refused (403), since the figures are
 * every tenant's together. This file also times the requests of the routes stats.h names, when
 * each ends (api_metrics_done), and counts the file bytes they moved. docs/metrics.md lists
 * every series.
 */
#include "daemon/api/api.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/api/http.h"
#include "daemon/base/expo.h"
#include "lib/host/hash.h"
#include "daemon/core/pool.h"
#include "daemon/core/stats.h"
#include "daemon/driver/driver.h"
#include "daemon/store/store.h"

/* Bytes of /proc/meminfo read: its MemTotal and MemAvailable lines come first. */
#define METRICS_MEMINFO_MAX 4096

int64_t api_metrics_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The operation a route's requests are, or STATS_OPS for none timed. */
static enum stats_op op_of(const struct route *r)
{
	static const struct {
		int (*handler)(struct op *op);
		enum stats_op op;
	} timed[] = {
		{ api_sandbox_create, STATS_CREATE },     { api_sandbox_delete, STATS_DELETE },
		{ api_sandbox_pause, STATS_PAUSE },       { api_sandbox_resume, STATS_RESUME },
		{ api_sandbox_suspend, STATS_SUSPEND },   { api_sandbox_snapshot, STATS_SNAPSHOT },
		{ api_sandbox_fork, STATS_FORK },         { api_exec, STATS_EXEC },
	};
	for (size_t i = 0; r && i < sizeof(timed) / sizeof(timed[0]); i++)
		if (r->handler == timed[i].handler)
			return timed[i].op;
	return STATS_OPS;
}

void api_metrics_done(struct op *op)
{
	struct stats *st = op->d->stats;
	if (!op->route)
		return;
	enum stats_op kind = op_of(op->route);
	if (kind != STATS_OPS)
		stats_op_done(st, kind, op->err.kind ? err_code(op->err.kind) : NULL, api_metrics_now_ns() - op->arrived_ns);
	if (op->route->handler == api_file_read)
		stats_add(st, STATS_FILE_READ_BYTES, op->out_read);
	else if (op->route->handler == api_file_write)
		stats_add(st, STATS_FILE_WRITE_BYTES, op->upload.size);
}

/* Whether op may read the host's figures: the Unix socket's administrator, or a request whose
 * token (its bearer token on TCP, its Space-Tenant-Token on the Unix socket) is an
 * administrator's. */
static bool admin(struct op *op)
{
	if (!op->tcp)
		return true;
	const char *h = MHD_lookup_connection_value(op->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *token = h && strncmp(h, "Bearer ", 7) == 0 ? h + 7 : NULL;
	if (!token)
		token = MHD_lookup_connection_value(op->conn, MHD_HEADER_KIND, SPACE_TENANT_TOKEN);
	char hex[65];
	return token && hash_sha256_hex(token, strlen(token), hex) == 0 && store_token_admin(op->d->store, hex) == 1;
}

/* The kB of one line of meminfo text ("MemAvailable:"), or -1. */
static double meminfo_bytes(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p)
		return -1;
	char *end;
	unsigned long long kib = strtoull(p + strlen(key), &end, 10);
	return end == p + strlen(key) ? -1 : (double)kib * 1024;
}

static int write_gauge(struct buf *b, const char *name, const char *help, double v)
{
	int rc = expo_family(b, name, "gauge", help);
	return rc ? rc : expo_sample(b, name, NULL, v);
}

/* The node: its CPUs, its memory, the free space of the state dir's filesystem. */
static int write_node(struct daemon *d, struct buf *b)
{
	char text[METRICS_MEMINFO_MAX];
	ssize_t n = -1;
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	text[n > 0 ? n : 0] = '\0';
	struct statvfs fs;
	bool disk = statvfs(d->cfg.state_dir, &fs) == 0;
	int rc = write_gauge(b, "space_node_cpus", "CPUs online on this host.", (double)sysconf(_SC_NPROCESSORS_ONLN));
	double total = meminfo_bytes(text, "MemTotal:"), avail = meminfo_bytes(text, "MemAvailable:");
	if (rc == 0 && total >= 0)
		rc = write_gauge(b, "space_node_memory_bytes", "Memory of this host (MemTotal).", total);
	if (rc == 0 && avail >= 0)
		rc = write_gauge(b, "space_node_memory_available_bytes",
				 "Memory this host can still give without swapping (MemAvailable).", avail);
	if (rc == 0 && disk)
		rc = write_gauge(b, "space_node_disk_free_bytes",
				 "Space free to spaced on the filesystem of its state directory.",
				 (double)fs.f_bavail * (double)fs.f_frsize);
	if (rc == 0 && disk)
		rc = write_gauge(b, "space_node_disk_bytes", "Size of the filesystem of spaced's state directory.",
				 (double)fs.f_blocks * (double)fs.f_frsize);
	return rc;
}

/* Sandboxes by state and kind, every pair (0 included); the warm pools' apart. [L] */
static int write_sandboxes(struct daemon *d, struct buf *b)
{
	int count[SB_NSTATES][ISOLATION_KINDS] = { { 0 } };
	int pooled = 0, target = 0;
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next) {
		if (sb->pooled != SB_POOL_NONE) {
			pooled++;
			continue;
		}
		for (int k = 0; k < ISOLATION_KINDS; k++)
			if (d->drivers[k].kind && strcmp(d->drivers[k].kind, sb->conf.isolation) == 0)
				count[sb->state][k]++;
	}
	for (int i = 0; i < d->npools; i++)
		target += d->pools[i].size;
	int rc = expo_family(b, "space_sandboxes", "gauge", "Sandboxes by state and isolation kind (warm pools apart).");
	for (int s = 0; s < SB_NSTATES && rc == 0; s++)
		for (int k = 0; k < ISOLATION_KINDS && rc == 0; k++)
			if (d->drivers[k].kind)
				rc = expo_sample(b, "space_sandboxes",
						 (const char *const[]){ "state", sb_state_name((enum sb_state)s), "isolation",
									d->drivers[k].kind, NULL },
						 count[s][k]);
	if (rc == 0)
		rc = write_gauge(b, "space_pool_sandboxes", "Sandboxes in the warm pools, ready or starting.", pooled);
	if (rc == 0)
		rc = write_gauge(b, "space_pool_target_sandboxes", "Sandboxes the warm pools are to keep, all together.",
				 target);
	if (rc == 0)
		rc = write_gauge(b, "space_template_builds_running", "Template builds in flight.", d->builds);
	return rc;
}

int api_metrics(struct op *op)
{
	struct daemon *d = op->d;
	if (!admin(op)) {
		err_set(&op->err, ERR_PERMISSION, EACCES,
			"GET /metrics needs the Unix socket or an administrator's token (spaced token create --admin)");
		return API_DONE;
	}
	int rc = write_sandboxes(d, &op->out);
	if (rc == 0)
		rc = write_node(d, &op->out);
	if (rc == 0)
		rc = stats_write(d->stats, &op->out);
	if (rc == 0)
		rc = starts_write(&d->starts, &op->out);
	if (rc == 0)
		rc = driver_write_metrics(d, &op->out);
	if (rc < 0) {
		err_set(&op->err, ERR_INTERNAL, -rc, "cannot write the metrics: %s", strerror(-rc));
		return API_DONE;
	}
	op->content_type = EXPO_CONTENT_TYPE;
	return API_DONE;
}

struct MHD_Response *api_text_response(struct op *op)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(buf_avail(&op->out), (void *)buf_head(&op->out),
								 MHD_RESPMEM_MUST_COPY);
	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, op->content_type);
	return r;
}

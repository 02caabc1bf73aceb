/*
 * daemon/config.c - spaced's options, from its configuration file and its command line
 * (see config.h). One table names every option; both sources go through apply().
 */
#include "daemon/config.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "daemon/core/isolation.h"
#include "daemon/core/pool.h"
#include "daemon/core/ready.h"
#include "daemon/core/system.h"
#include "daemon/net/dns.h"
#include "daemon/net/net.h"
#include "daemon/net/policy.h"
#include "daemon/net/proxy.h"

enum opt {
	O_STATE_DIR = 256, O_SOCKET, O_LISTEN, O_ISOLATION, O_DRIVER, O_CACHE_DIR, O_AGENT, O_NO_AUTO_RESUME,
	O_HELP, O_TLS_CERT, O_TLS_KEY, O_TENANT_SNAPSHOTS, O_TENANT_SNAPSHOT_MB, O_RESERVE_MB, O_TEMPLATE, O_ACCEL,
	O_DEFAULT_EGRESS, O_EGRESS_PERMIT, O_NET_TRANSIT, O_PROXY_LISTEN, O_PROXY_DOMAIN, O_PROXY_IDLE_TIMEOUT,
	O_DNS_UPSTREAM, O_DNS_PORT, O_READY_TIMEOUT, O_POOL, O_E2B_LISTEN, O_CONFIG, O_CACHE_MAX_MB, O_RECIPES, O_MAX_STARTING,
	O_UI,
};

static const struct option opts[] = {
	{ "state-dir", required_argument, NULL, O_STATE_DIR },
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "isolation", required_argument, NULL, O_ISOLATION },
	{ "driver", required_argument, NULL, O_DRIVER },
	{ "cache-dir", required_argument, NULL, O_CACHE_DIR },
	{ "agent", required_argument, NULL, O_AGENT },
	{ "no-auto-resume", no_argument, NULL, O_NO_AUTO_RESUME },
	{ "help", no_argument, NULL, O_HELP },
	{ "tls-cert", required_argument, NULL, O_TLS_CERT },
	{ "tls-key", required_argument, NULL, O_TLS_KEY },
	{ "tenant-snapshots", required_argument, NULL, O_TENANT_SNAPSHOTS },
	{ "tenant-snapshot-mb", required_argument, NULL, O_TENANT_SNAPSHOT_MB },
	{ "reserve-mb", required_argument, NULL, O_RESERVE_MB },
	{ "template", required_argument, NULL, O_TEMPLATE },
	{ "accel", required_argument, NULL, O_ACCEL },
	{ "default-egress", required_argument, NULL, O_DEFAULT_EGRESS },
	{ "egress-permit", required_argument, NULL, O_EGRESS_PERMIT },
	{ "net-transit", required_argument, NULL, O_NET_TRANSIT },
	{ "proxy-listen", required_argument, NULL, O_PROXY_LISTEN },
	{ "proxy-domain", required_argument, NULL, O_PROXY_DOMAIN },
	{ "proxy-idle-timeout", required_argument, NULL, O_PROXY_IDLE_TIMEOUT },
	{ "dns-upstream", required_argument, NULL, O_DNS_UPSTREAM },
	{ "dns-port", required_argument, NULL, O_DNS_PORT },
	{ "ready-timeout", required_argument, NULL, O_READY_TIMEOUT },
	{ "pool", required_argument, NULL, O_POOL },
	{ "e2b-listen", required_argument, NULL, O_E2B_LISTEN },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "cache-max-mb", required_argument, NULL, O_CACHE_MAX_MB },
	{ "recipes", required_argument, NULL, O_RECIPES },
	{ "max-starting", required_argument, NULL, O_MAX_STARTING },
	{ "ui", required_argument, NULL, O_UI },
	{ NULL, 0, NULL, 0 },
};

void config_usage(FILE *f)
{
	fprintf(f, "usage: spaced [--config FILE] [--state-dir DIR] [--socket PATH]\n"
		   "              [--listen HOST:PORT [--tls-cert FILE --tls-key FILE]]\n"
		   "              [--isolation gvisor|microvm] [--accel auto|kvm|tcg] [--cache-dir DIR] [--cache-max-mb MB]\n"
		   "              [--agent PATH] [--no-auto-resume] [--recipes DIR] [--max-starting N]\n"
		   "              [--tenant-snapshots N] [--tenant-snapshot-mb MB] [--reserve-mb MB]\n"
		   "              [--template NAME=PKG[,PKG...]]... [--default-egress none|open|allow]\n"
		   "              [--egress-permit CIDR]... [--net-transit CIDR]\n"
		   "              [--proxy-listen HOST:PORT [--proxy-domain DOMAIN] [--proxy-idle-timeout SECONDS]]\n"
		   "              [--dns-upstream ADDR[:PORT]] [--dns-port PORT] [--ready-timeout SECONDS]\n"
		   "              [--pool TEMPLATE=N[,cpus=C][,memory_mb=M][,disk_mb=D][,isolation=KIND]]...\n"
		   "              [--e2b-listen HOST:PORT] [--ui DIR]\n"
		   "       spaced [--state-dir DIR] token create [--name NAME] [--tenant TENANT] [--admin]\n"
		   "Options may also be lines of %s (or of --config FILE): name = value.\n",
		CONFIG_DEFAULT_PATH);
}

static void defaults(struct daemon *d, struct config *c)
{
	snprintf(d->cfg.state_dir, sizeof(d->cfg.state_dir), "/var/lib/space");
	snprintf(d->cfg.cache_dir, sizeof(d->cfg.cache_dir), "/var/cache/space");
	snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path), "/run/space/space.sock");
	c->isolation = ISOLATION_DEFAULT;
	d->cfg.auto_resume = true;
	d->cfg.max_snapshots = TENANT_MAX_SNAPSHOTS;
	d->cfg.max_snapshot_bytes = TENANT_MAX_SNAPSHOT_BYTES;
	d->cfg.default_egress = NET_EGRESS_OPEN;
	snprintf(d->cfg.proxy_domain, sizeof(d->cfg.proxy_domain), "localhost");
	d->cfg.proxy_idle_s = PROXY_IDLE_TIMEOUT_S;
	d->cfg.cache_max_bytes = (long long)CACHE_MAX_MB_DEFAULT << 20;
	d->cfg.dns_port = NET_DNS_PORT;
	d->cfg.ready_timeout_s = READY_DEFAULT_TIMEOUT_S;
	char exe[400];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(d->cfg.agent_path, sizeof(d->cfg.agent_path), "%s/space-agent", dirname(exe));
}

/* v as a whole number in [min, max] into *out; else -EINVAL with why. */
static int number(const char *name, const char *v, long long min, long long max, long long *out, char *why, size_t n)
{
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max) {
		snprintf(why, n, "--%s wants a whole number from %lld to %lld, not %s", name, min, max, v);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

/* v into dst (of size n); a value that does not fit is refused rather than cut. */
static int text(const char *name, const char *v, char *dst, size_t size, char *why, size_t n)
{
	if (strlen(v) >= size) {
		snprintf(why, n, "--%s takes at most %zu bytes", name, size - 1);
		return -EINVAL;
	}
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* Adds one --template NAME=PKG[,PKG...]. */
static int add_template(struct config *c, const char *arg, char *why, size_t n)
{
	struct err e = { 0 };
	if (c->ntemplates == TEMPLATE_MAX_NAMED) {
		snprintf(why, n, "--template: at most %d named templates", TEMPLATE_MAX_NAMED);
		return -EINVAL;
	}
	struct template_spec *t = &c->templates[c->ntemplates];
	if (template_parse(arg, t, &e) < 0) {
		snprintf(why, n, "--template %s: %s", arg, e.msg);
		return -EINVAL;
	}
	for (int i = 0; i < c->ntemplates; i++)
		if (strcmp(c->templates[i].name, t->name) == 0) {
			snprintf(why, n, "--template: %s is named twice", t->name);
			return -EINVAL;
		}
	c->ntemplates++;
	return 0;
}

/* The options about the network: egress, the transit range, the proxy's, the resolver's. */
static int apply_net(struct daemon *d, int id, const char *v, char *why, size_t n)
{
	long long x = 0;
	int rc = 0;
	enum net_egress m;
	switch (id) {
	case O_DEFAULT_EGRESS:
		if (net_egress_parse(v, &m) < 0)
			return snprintf(why, n, "--default-egress is none, open or allow, not %s", v), -EINVAL;
		d->cfg.default_egress = (int)m;
		return 0;
	case O_EGRESS_PERMIT:
		if (d->cfg.net_npermits >= NET_PERMITS_MAX ||
		    net_cidr_normal(v, d->cfg.net_permits[d->cfg.net_npermits], sizeof(d->cfg.net_permits[0])) < 0)
			return snprintf(why, n, "--egress-permit takes an IPv4 CIDR block (at most %d of them), not %s",
					NET_PERMITS_MAX, v), -EINVAL;
		d->cfg.net_npermits++;
		return 0;
	case O_NET_TRANSIT:
		if (net_transit_parse(v, d->cfg.net_transit, sizeof(d->cfg.net_transit)) < 0)
			return snprintf(why, n, "--net-transit takes an IPv4 range /%d to /%d, not %s",
					NET_TRANSIT_MIN_PREFIX, NET_TRANSIT_MAX_PREFIX, v), -EINVAL;
		return 0;
	case O_PROXY_LISTEN: return text("proxy-listen", v, d->cfg.proxy_listen, sizeof(d->cfg.proxy_listen), why, n);
	case O_PROXY_DOMAIN:
		if (!*v || strchr(v, ':') || strchr(v, '/'))
			return snprintf(why, n, "--proxy-domain wants a DNS name, not %s", v), -EINVAL;
		return text("proxy-domain", v, d->cfg.proxy_domain, sizeof(d->cfg.proxy_domain), why, n);
	case O_PROXY_IDLE_TIMEOUT:
		rc = number("proxy-idle-timeout", v, 1, PROXY_IDLE_TIMEOUT_MAX_S, &x, why, n);
		d->cfg.proxy_idle_s = rc == 0 ? (int)x : d->cfg.proxy_idle_s;
		return rc;
	case O_DNS_UPSTREAM: return text("dns-upstream", v, d->cfg.dns_upstream, sizeof(d->cfg.dns_upstream), why, n);
	case O_DNS_PORT:
		rc = number("dns-port", v, 1, 65535, &x, why, n);
		d->cfg.dns_port = rc == 0 ? (int)x : d->cfg.dns_port;
		return rc;
	}
	return -ENOENT;
}

/* Applies option id with value v (NULL for a flag without one). */
static int apply(struct daemon *d, struct config *c, int id, const char *v, char *why, size_t n)
{
	long long x = 0;
	int rc = apply_net(d, id, v, why, n);
	if (rc != -ENOENT)
		return rc;
	rc = 0;
	switch (id) {
	case O_STATE_DIR: return text("state-dir", v, d->cfg.state_dir, sizeof(d->cfg.state_dir), why, n);
	case O_SOCKET: return text("socket", v, d->cfg.socket_path, sizeof(d->cfg.socket_path), why, n);
	case O_LISTEN: return text("listen", v, d->cfg.listen_addr, sizeof(d->cfg.listen_addr), why, n);
	case O_CACHE_DIR: return text("cache-dir", v, d->cfg.cache_dir, sizeof(d->cfg.cache_dir), why, n);
	case O_CACHE_MAX_MB:
		rc = number("cache-max-mb", v, 0, CACHE_MAX_MB_MAX, &x, why, n);
		d->cfg.cache_max_bytes = rc == 0 ? x << 20 : d->cfg.cache_max_bytes;
		return rc;
	case O_MAX_STARTING:
		rc = number("max-starting", v, 1, STARTS_MAX, &x, why, n);
		d->cfg.max_starting = rc == 0 ? (int)x : d->cfg.max_starting;
		return rc;
	case O_AGENT: return text("agent", v, d->cfg.agent_path, sizeof(d->cfg.agent_path), why, n);
	case O_RECIPES: return text("recipes", v, d->cfg.recipes_dir, sizeof(d->cfg.recipes_dir), why, n);
	case O_UI: return text("ui", v, d->cfg.ui_dir, sizeof(d->cfg.ui_dir), why, n);
	case O_TLS_CERT: return text("tls-cert", v, d->cfg.tls_cert_path, sizeof(d->cfg.tls_cert_path), why, n);
	case O_TLS_KEY: return text("tls-key", v, d->cfg.tls_key_path, sizeof(d->cfg.tls_key_path), why, n);
	case O_E2B_LISTEN: return text("e2b-listen", v, d->cfg.e2b_listen, sizeof(d->cfg.e2b_listen), why, n);
	case O_ISOLATION: c->isolation = v; return 0;
	case O_ACCEL: d->cfg.vm_accel = v; return 0;
	case O_DRIVER: /* its name before any release */
		return snprintf(why, n, "--driver is now --isolation (gvisor or microvm)"), -EINVAL;
	case O_NO_AUTO_RESUME: d->cfg.auto_resume = false; return 0;
	case O_TENANT_SNAPSHOTS:
		rc = number("tenant-snapshots", v, 0, INT_MAX, &x, why, n);
		d->cfg.max_snapshots = rc == 0 ? (int)x : d->cfg.max_snapshots;
		return rc;
	case O_TENANT_SNAPSHOT_MB:
		rc = number("tenant-snapshot-mb", v, 0, (long long)(UINT64_MAX >> 21), &x, why, n);
		d->cfg.max_snapshot_bytes = rc == 0 ? (uint64_t)x << 20 : d->cfg.max_snapshot_bytes;
		return rc;
	case O_RESERVE_MB:
		rc = number("reserve-mb", v, 0, (long long)(UINT64_MAX >> 21), &x, why, n);
		d->cfg.reserve_bytes = rc == 0 ? (uint64_t)x << 20 : d->cfg.reserve_bytes;
		return rc;
	case O_TEMPLATE: return add_template(c, v, why, n);
	case O_READY_TIMEOUT:
		rc = number("ready-timeout", v, 1, READY_MAX_TIMEOUT_S, &x, why, n);
		d->cfg.ready_timeout_s = rc == 0 ? (int)x : d->cfg.ready_timeout_s;
		return rc;
	case O_POOL: return pool_parse(d, v, why, n) < 0 ? -EINVAL : 0;
	case O_CONFIG: return 0; /* read before everything else */
	}
	snprintf(why, n, "unknown option");
	return -EINVAL;
}

/* The option called name (a long flag without its dashes), or NULL. */
static const struct option *named(const char *name)
{
	for (const struct option *o = opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && strchr(" \t\r\n", s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* One line of the file, without its comment: applied, or -EINVAL with why. */
static int file_line(struct daemon *d, struct config *c, char *s, char *why, size_t n)
{
	char *eq = strchr(s, '='), *value = NULL;
	if (eq) {
		*eq = '\0';
		value = trim(eq + 1);
	}
	char *name = trim(s);
	const struct option *o = named(name);
	if (!o || o->val == O_CONFIG || o->val == O_HELP)
		return snprintf(why, n, "unknown option '%s' (a long flag of spaced without its dashes)", name), -EINVAL;
	if (o->has_arg == no_argument) {
		if (value && strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
			return snprintf(why, n, "%s is a flag: true, false or no value, not '%s'", name, value), -EINVAL;
		return value && strcmp(value, "false") == 0 ? 0 : apply(d, c, o->val, NULL, why, n);
	}
	if (!value || !*value)
		return snprintf(why, n, "%s wants a value: %s = VALUE", name, name), -EINVAL;
	char *kept = strdup(value); /* some options keep pointing at their value: it lives as spaced does */
	if (!kept)
		return snprintf(why, n, "out of memory"), -EINVAL;
	return apply(d, c, o->val, kept, why, n);
}

/* Reads the configuration file at path; one that is not there is fine unless must. */
static int read_file(struct daemon *d, struct config *c, const char *path, bool must)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (!must && errno == ENOENT)
			return 0;
		fprintf(stderr, "spaced: %s: %s\n", path, strerror(errno));
		return -EINVAL;
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	char *line = NULL, why[600];
	size_t cap = 0;
	ssize_t len;
	int no = 0, rc = 0;
	while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
		no++;
		if (len > CONFIG_LINE_MAX) {
			snprintf(why, sizeof(why), "a line is at most %d bytes", CONFIG_LINE_MAX);
			rc = -EINVAL;
		} else if (memchr(line, '\0', (size_t)len)) {
			snprintf(why, sizeof(why), "a NUL byte");
			rc = -EINVAL;
		} else {
			line[strcspn(line, "#")] = '\0';
			char *s = trim(line);
			rc = *s ? file_line(d, c, s, why, sizeof(why)) : 0;
		}
		if (rc < 0)
			fprintf(stderr, "spaced: %s:%d: %s\n", path, no, why);
	}
	free(line);
	fclose(f);
	return rc;
}

/* The file --config names in argv, or NULL: looked for before the options are applied. */
static const char *config_arg(int argc, char **argv)
{
	const char *path = NULL;
	for (int i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i] + (argv[i][1] == '-' ? 2 : 1);
		const char *eq = strchr(a, '=');
		size_t k = eq ? (size_t)(eq - a) : strlen(a);
		const struct option *o = NULL;
		for (const struct option *p = opts; p->name; p++)
			if (strlen(p->name) == k && strncmp(p->name, a, k) == 0)
				o = p;
		if (o && o->val == O_CONFIG)
			path = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
		if (o && o->has_arg == required_argument && !eq)
			i++; /* its value */
	}
	return path;
}

int config_load(struct daemon *d, struct config *c, int argc, char **argv)
{
	defaults(d, c);
	const char *path = config_arg(argc, argv);
	int rc = read_file(d, c, path ? path : CONFIG_DEFAULT_PATH, path != NULL);
	if (rc < 0)
		return rc;
	char why[600];
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (o == 'h' || o == O_HELP) {
			config_usage(stdout);
			return 1;
		}
		if (o == '?') {
			config_usage(stderr);
			return -EINVAL;
		}
		if (apply(d, c, o, optarg, why, sizeof(why)) < 0) {
			fprintf(stderr, "spaced: %s\n", why);
			return -EINVAL;
		}
	}
	return 0;
}

/* The folder of the agent (build/ or <prefix>/lib/space/), where the programs and files spaced
 * runs beside itself are, into dir. */
static void beside_agent(const struct settings *s, char *dir, size_t n)
{
	const char *slash = strrchr(s->agent_path, '/');
	snprintf(dir, n, "%.*s", slash ? (int)(slash - s->agent_path) : 1, slash ? s->agent_path : ".");
}

int config_programs(struct settings *s)
{
	char dir[sizeof(s->agent_path)];
	/* runsc resolves relative bind sources against the bundle: make the path absolute */
	char *abs = realpath(s->agent_path, NULL);
	if (abs) {
		snprintf(s->agent_path, sizeof(s->agent_path), "%s", abs);
		free(abs);
	}
	beside_agent(s, dir, sizeof(dir));
	snprintf(s->shim_path, sizeof(s->shim_path), "%s/libspace-shim.so", dir);
	snprintf(s->build_path, sizeof(s->build_path), "%s/space-build", dir);
	snprintf(s->e2b_path, sizeof(s->e2b_path), "%s/space-e2b", dir);
	if (!s->recipes_dir[0])
		snprintf(s->recipes_dir, sizeof(s->recipes_dir), "%s/recipes", dir);
	if (!s->ui_dir[0])
		snprintf(s->ui_dir, sizeof(s->ui_dir), "%s/ui", dir);
	if (access(s->shim_path, R_OK) != 0) {
		log_warn("%s is missing: `ls -l` and `stat` will fail inside sandboxes", s->shim_path);
		s->shim_path[0] = '\0';
	}
	if (access(s->build_path, X_OK) != 0)
		log_warn("%s is missing: templates cannot be built (POST /v1/templates)", s->build_path);
	if (access(s->ui_dir, R_OK | X_OK) != 0)
		log_warn("%s is missing: the web console (/ui) cannot be served", s->ui_dir);
	if (s->e2b_listen[0] && access(s->e2b_path, X_OK) != 0) {
		fprintf(stderr, "spaced: --e2b-listen needs %s, which is missing (build it with make)\n", s->e2b_path);
		return -ENOENT;
	}
	if (access(s->agent_path, X_OK) != 0) {
		fprintf(stderr, "spaced: the agent binary %s is missing (build it with make, or pass --agent)\n",
			s->agent_path);
		return -ENOENT;
	}
	return 0;
}

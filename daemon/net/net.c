/*
 * daemon/net/net.c - sandboxes' namespaces, links and rules (see net.h).
 *
 * A job thread does the work inside a sandbox's namespace by moving itself there (setns of
 * the network namespace is per thread) and back: the netlink sockets it opens there (link.h,
 * libnftables) belong to that namespace. A thread that cannot move back aborts spaced, since
 * anything it did next would act inside a sandbox's network; sandboxes outlive spaced, and a
 * restarted spaced adopts them. Moving in and out, and what is done inside, is net_ns.c's.
 */
#include "daemon/net/net.h"
#include "daemon/net/net_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/net/link.h"
#include "daemon/net/policy.h"

#define CHAIN_FMT "sb%d"
#define SCRIPT_MAX 16384

/* A transit range's first address (host order) and prefix length. */
static uint32_t range_of(const char *cidr, int *prefix)
{
	char base[20];
	snprintf(base, sizeof(base), "%s", cidr);
	char *slash = strchr(base, '/');
	*prefix = slash ? atoi(slash + 1) : 32;
	if (slash)
		*slash = '\0';
	struct in_addr a = { 0 };
	inet_pton(AF_INET, base, &a);
	return ntohl(a.s_addr);
}

static int slots_of(const struct daemon *d)
{
	int prefix;
	range_of(d->cfg.net_transit, &prefix);
	int n = 1 << (32 - prefix - 2);
	return n < NET_SLOTS ? n : NET_SLOTS;
}

/* The address of sb's /30 with the last part `part` (1: host's end, 2: edge's). */
static void slot_addr(const struct sandbox *sb, int part, char *out, size_t n)
{
	int prefix;
	struct in_addr a = { .s_addr = htonl(range_of(sb->conf.net_transit, &prefix) + (uint32_t)sb->conf.net_slot * 4 +
					     (uint32_t)part) };
	inet_ntop(AF_INET, &a, out, (socklen_t)n);
}

/* sb's interface in spaced's namespace: "sp" + the tag + the slot. */
static void host_if(const struct sandbox *sb, char *out, size_t n)
{
	snprintf(out, n, "sp%s%d", sb->d->net_tag, sb->conf.net_slot);
}

int net_transit_parse(const char *in, char *out, size_t n)
{
	const char *slash = strchr(in, '/');
	int prefix = slash ? atoi(slash + 1) : 0;
	if (!slash || prefix < NET_TRANSIT_MIN_PREFIX || prefix > NET_TRANSIT_MAX_PREFIX)
		return -EINVAL;
	return net_cidr_normal(in, out, n);
}

void net_host_reach(const struct sandbox *sb, char *out, size_t n)
{
	slot_addr(sb, 2, out, n);
}

static const char *const NO_IPV6[] = { "net/ipv6/conf/all/disable_ipv6", "net/ipv6/conf/default/disable_ipv6",
				       NULL };
static const char *const FORWARD[] = { "net/ipv4/ip_forward", NULL };
static const char *const INNER_NO_IPV6[] = { "net/ipv6/conf/eth0/disable_ipv6", NULL };
static const char *const TIME_WAIT[] = { "net/netfilter/nf_conntrack_tcp_timeout_time_wait", NULL };

static int host_table(struct daemon *d, struct err *e);

static int rules_steps(struct link_nl *nl, const void *arg)
{
	const struct daemon *d = arg;
	int prefix;
	uint32_t base = range_of(d->cfg.net_transit, &prefix);
	char from[16];
	struct in_addr a = { .s_addr = htonl(base) };
	inet_ntop(AF_INET, &a, from, sizeof(from));
	/* what this host sends from the range (to a sandbox: its resolver, its proxy) is routed as
	 * ever; what the range sends through it goes nowhere unless table space_<tag> marked it */
	struct link_rule own = { .prio = NET_RULE_PRIO, .from = from, .from_len = prefix, .iif = "lo" };
	struct link_rule unmarked = { .prio = NET_RULE_PRIO + 1, .from = from, .from_len = prefix, .mask = NET_MARK,
				      .prohibit = true };
	int rc = link_rule_add(nl, &own);
	return rc < 0 ? rc : link_rule_add(nl, &unmarked);
}

/* The routing rules that make sandboxes' networks fail closed (see host_table's chain checked). */
static int host_rules(struct daemon *d, struct err *e)
{
	return net_in_ns(NULL, rules_steps, d, "add the routing rules of the sandboxes' range", false, e);
}

int net_init(struct daemon *d, struct err *e)
{
	uint32_t h = 2166136261u; /* FNV-1a of the state dir: the tag */
	for (const unsigned char *p = (const unsigned char *)d->cfg.state_dir; *p; p++)
		h = (h ^ *p) * 16777619u;
	snprintf(d->net_tag, sizeof(d->net_tag), "%04x", (unsigned)(h & 0xffff));
	if (!d->cfg.net_transit[0])
		snprintf(d->cfg.net_transit, sizeof(d->cfg.net_transit), "%s", NET_TRANSIT_DEFAULT);
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		int rc = errno;
		if (fd >= 0)
			close(fd);
		return err_set(e, ERR_INTERNAL, rc, "cannot turn IPv4 forwarding on: %s", strerror(rc));
	}
	close(fd);
	int rc = host_rules(d, e);
	return rc < 0 ? rc : host_table(d, e);
}

/* Table inet space_<tag>, afresh: what keeps sandboxes to their policies in spaced's namespace. */
static int host_table(struct daemon *d, struct err *e)
{
	char permits[NET_PERMITS_MAX * 20 + 64] = "";
	size_t used = 0;
	for (int i = 0; i < d->cfg.net_npermits; i++)
		used += (size_t)snprintf(permits + used, sizeof(permits) - used, "%s%s", i ? ", " : "elements = { ",
					 d->cfg.net_permits[i]);
	if (d->cfg.net_npermits)
		snprintf(permits + used, sizeof(permits) - used, " };");
	char script[4096];
	/* sandboxes are told apart by the interface their traffic comes in on: sp<tag><slot> maps
	 * to the chain of that sandbox's policy; one with no chain reaches nothing */
	const char *t = d->net_tag;
	snprintf(script, sizeof(script),
		 "table inet space_%s\n"
		 "delete table inet space_%s\n"
		 "table inet space_%s {\n"
		 "  set blocked { type ipv4_addr; flags interval; elements = { " NET_BLOCKED " }; }\n"
		 "  set permitted { type ipv4_addr; flags interval; %s }\n"
		 "  map sandboxes { type ifname : verdict; }\n"
		 /* what comes from a sandbox is marked before it is routed: the routing rules
		  * (host_rules) refuse to forward it unmarked, so it goes nowhere without this table */
		 "  chain checked { type filter hook prerouting priority mangle; policy accept;\n"
		 "    iifname \"sp%s*\" meta mark set meta mark | 0x%x; }\n"
		 "  chain input { type filter hook input priority filter - 10; policy accept;\n"
		 "    iifname \"sp%s*\" ct state established,related accept\n"
		 "    iifname \"sp%s*\" meta l4proto { tcp, udp } th dport %d accept\n"
		 "    iifname \"sp%s*\" meta l4proto tcp reject with tcp reset\n"
		 "    iifname \"sp%s*\" reject with icmp type admin-prohibited; }\n"
		 "  chain forward { type filter hook forward priority filter - 10; policy accept;\n"
		 "    oifname \"sp%s*\" ct state established,related accept\n"
		 "    oifname \"sp%s*\" meta l4proto tcp reject with tcp reset\n"
		 "    oifname \"sp%s*\" reject with icmp type admin-prohibited\n"
		 "    iifname vmap @sandboxes\n"
		 "    iifname \"sp%s*\" drop; }\n"
		 "  chain postrouting { type nat hook postrouting priority srcnat; policy accept;\n"
		 "    iifname \"sp%s*\" oifname != \"sp%s*\" masquerade; }\n"
		 "}\n",
		 t, t, t, permits, t, NET_MARK, t, t, d->cfg.dns_port, t, t, t, t, t, t, t, t);
	return net_nft(NULL, script, false, e);
}

int net_transit_check(struct daemon *d, struct err *e)
{
	for (struct sandbox *s = d->sandboxes; s; s = s->next)
		if (s->network && s->conf.net_transit[0] && strcmp(s->conf.net_transit, d->cfg.net_transit) != 0)
			return err_set(e, ERR_INVALID, EINVAL,
				       "sandbox %s has its network in %s, not in --net-transit %s: start spaced with "
				       "--net-transit %s (and delete the sandboxes there before changing it)",
				       s->id, s->conf.net_transit, d->cfg.net_transit, s->conf.net_transit);
	return 0;
}

int net_slot_pick(struct daemon *d)
{
	static unsigned char used[NET_SLOTS / 8]; /* [L] */
	memset(used, 0, sizeof(used));
	int slots = slots_of(d);
	/* every sandbox's slot, whatever range it was made in: the slot names its interface */
	for (struct sandbox *s = d->sandboxes; s; s = s->next)
		if (s->network && s->conf.net_slot >= 0 && s->conf.net_slot < NET_SLOTS)
			used[s->conf.net_slot / 8] |= (unsigned char)(1u << (s->conf.net_slot % 8));
	for (int i = 0; i < slots; i++)
		if (!(used[i / 8] & (1u << (i % 8))))
			return i;
	return -ENOSPC;
}

/* Whether the interface name exists in spaced's namespace. */
static bool host_link(const struct sandbox *sb)
{
	char name[IF_NAMESIZE];
	host_if(sb, name, sizeof(name));
	return if_nametoindex(name) != 0;
}

struct edge_args {
	const char *reach, *host;
	int inner_ns; /* the inner namespace, or -1: a microVM's tap */
};

static int edge_steps(struct link_nl *nl, const void *arg)
{
	const struct edge_args *a = arg;
	int rc;
	if ((rc = link_up(nl, "lo")) < 0 || (rc = link_up(nl, "up0")) < 0 ||
	    (rc = link_addr(nl, "up0", a->reach, NET_PREFIX)) < 0 ||
	    (rc = link_default_route(nl, "up0", a->host)) < 0)
		return rc;
	rc = a->inner_ns >= 0 ? link_veth(nl, "gw0", "eth0", a->inner_ns) : link_tap("gw0");
	if (rc == 0 && (rc = link_addr(nl, "gw0", NET_GATEWAY_ADDR, NET_PREFIX)) == 0)
		rc = link_up(nl, "gw0");
	return rc;
}

/* The edge: its half of the slot, the way to the sandbox (a veth to inner, or a tap), and its
 * address translation. Only the sandbox's own address passes, only between gw0 and up0. */
static int build_edge(const struct sandbox *sb, const char *edge, bool inner, struct err *e)
{
	char host[16], reach[16], in[600], script[2048];
	slot_addr(sb, 1, host, sizeof(host));
	slot_addr(sb, 2, reach, sizeof(reach));
	net_inner_path(sb, in, sizeof(in));
	struct edge_args a = { .reach = reach, .host = host, .inner_ns = -1 };
	if (inner && (a.inner_ns = open(in, O_RDONLY | O_CLOEXEC)) < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot open %s: %s", in, strerror(errno));
	int rc = net_in_ns(edge, edge_steps, &a, "set up a sandbox's edge", false, e);
	if (a.inner_ns >= 0)
		close(a.inner_ns);
	if (rc < 0)
		return rc;
	snprintf(script, sizeof(script),
		 "table ip space {\n"
		 "  chain prerouting { type nat hook prerouting priority dstnat; policy accept;\n"
		 /* every DNS question, to whatever server, goes to spaced's resolver */
		 "    iifname \"gw0\" meta l4proto { tcp, udp } th dport 53 dnat to %s:%d\n"
		 "    iifname \"up0\" ip daddr %s dnat to " NET_SANDBOX_ADDR "; }\n"
		 "  chain postrouting { type nat hook postrouting priority srcnat; policy accept;\n"
		 "    oifname \"up0\" ip saddr " NET_SANDBOX_ADDR " snat to %s; }\n"
		 "  chain forward { type filter hook forward priority filter; policy drop;\n"
		 "    ct state established,related accept\n"
		 "    iifname \"gw0\" ct state new ct count over %d reject with icmp type admin-prohibited\n"
		 "    iifname \"gw0\" oifname \"up0\" ip saddr " NET_SANDBOX_ADDR " accept\n"
		 "    iifname \"up0\" oifname \"gw0\" ip daddr " NET_SANDBOX_ADDR " ct status dnat accept; }\n"
		 "  chain input { type filter hook input priority filter; policy drop;\n"
		 "    iif \"lo\" accept\n"
		 "    ct state established,related accept\n"
		 "    meta l4proto tcp reject with tcp reset\n"
		 "    reject with icmp type admin-prohibited; }\n"
		 "}\n",
		 host, sb->d->cfg.dns_port, reach, reach, NET_FLOWS_MAX);
	int rc2 = net_nft(edge, script, false, e);
	/* gVisor's time-wait lasts 60 s; the tracking's, 120 s by default, is brought just past it */
	if (rc2 == 0 && (rc2 = net_sysctls(edge, TIME_WAIT, "61")) < 0)
		rc2 = err_set(e, ERR_INTERNAL, -rc2, "cannot set the edge's time-wait: %s", strerror(-rc2));
	return rc2;
}

static int inner_steps(struct link_nl *nl, const void *arg)
{
	(void)arg;
	int rc;
	if ((rc = link_up(nl, "lo")) < 0 || (rc = link_up(nl, "eth0")) < 0 ||
	    (rc = link_addr(nl, "eth0", NET_SANDBOX_ADDR, NET_PREFIX)) < 0)
		return rc;
	return link_default_route(nl, "eth0", NET_GATEWAY_ADDR);
}

/* The inner namespace as runsc is to find it: runsc takes the interface's address away from
 * the host's view when it starts, so a restore needs it put back. */
static int refresh_inner(const char *in, struct err *e)
{
	return net_in_ns(in, inner_steps, NULL, "set up a sandbox's interface", false, e);
}

struct host_args {
	const char *name, *host;
	int edge_ns;
};

static int host_steps(struct link_nl *nl, const void *arg)
{
	const struct host_args *a = arg;
	int rc;
	if ((rc = link_veth(nl, a->name, "up0", a->edge_ns)) < 0 || (rc = link_addr(nl, a->name, a->host, NET_PREFIX)) < 0)
		return rc;
	return link_up(nl, a->name);
}

int net_ensure(struct daemon *d, struct sandbox *sb, bool inner, struct err *e)
{
	char dir[600], edge[600], in[600];
	snprintf(dir, sizeof(dir), "%s/net", sb->conf.dir);
	net_ns_path(sb, "edge", edge, sizeof(edge));
	net_inner_path(sb, in, sizeof(in));
	if (!sb->network || sb->conf.net_slot < 0 || sb->conf.net_slot >= NET_SLOTS || !sb->conf.net_transit[0])
		return err_set(e, ERR_INTERNAL, EINVAL, "sandbox %s has no network slot", sb->id);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return err_set(e, ERR_INTERNAL, errno, "cannot create %s: %s", dir, strerror(errno));
	int rc = 0;
	bool fresh = !(net_is_ns(edge) && host_link(sb) && (!inner || net_is_ns(in)));
	if (fresh) {
		struct err ignored = { 0 };
		if (net_is_ns(edge) || net_is_ns(in) || host_link(sb)) /* half made: made again whole */
			net_remove(d, sb, &ignored);
		char name[IF_NAMESIZE], host[16];
		host_if(sb, name, sizeof(name));
		slot_addr(sb, 1, host, sizeof(host));
		if ((rc = net_make_ns(edge)) < 0 || (inner && (rc = net_make_ns(in)) < 0))
			return err_set(e, ERR_INTERNAL, -rc, "cannot make a network namespace for %s: %s", sb->id,
				       strerror(-rc));
		/* in the inner namespace only eth0 loses IPv6: gVisor copies its loopback from there,
		 * and ::1 is a loopback address programs bind */
		if ((rc = net_sysctls(edge, FORWARD, "1")) < 0 || (rc = net_sysctls(edge, NO_IPV6, "1")) < 0)
			return err_set(e, ERR_INTERNAL, -rc, "cannot set up %s's network namespaces: %s", sb->id,
				       strerror(-rc));
		struct host_args h = { .name = name, .host = host, .edge_ns = open(edge, O_RDONLY | O_CLOEXEC) };
		if (h.edge_ns < 0)
			return err_set(e, ERR_INTERNAL, errno, "cannot open %s: %s", edge, strerror(errno));
		rc = net_in_ns(NULL, host_steps, &h, "link a sandbox's edge", false, e);
		close(h.edge_ns);
		if (rc < 0 || (rc = build_edge(sb, edge, inner, e)) < 0)
			return rc;
		if (inner && (rc = net_sysctls(in, INNER_NO_IPV6, "1")) < 0)
			return err_set(e, ERR_INTERNAL, -rc, "cannot set up %s's network namespaces: %s", sb->id,
				       strerror(-rc));
	}
	if (inner && (rc = refresh_inner(in, e)) < 0)
		return rc;
	struct err ignored = { 0 };
	if (fresh) { /* a new network starts with no pins, whatever its slot held before */
		char script[128];
		snprintf(script, sizeof(script), "flush set inet space_%s " CHAIN_FMT "_pins\n", d->net_tag, sb->conf.net_slot);
		net_nft(NULL, script, true, &ignored);
	} else {
		net_hold(d, sb, false, &ignored); /* a suspend's, now over */
	}
	return net_apply(d, sb, e);
}

int net_hold(struct daemon *d, struct sandbox *sb, bool on, struct err *e)
{
	(void)d;
	char edge[600];
	net_ns_path(sb, "edge", edge, sizeof(edge));
	if (!on)
		return net_nft(edge, "flush chain ip space hold\ndelete chain ip space hold\n", true, e);
	return net_nft(edge,
		    "add chain ip space hold { type filter hook forward priority filter - 5; policy accept; }\n"
		    "flush chain ip space hold\n"
		    "add rule ip space hold iifname \"up0\" ct state new drop\n"
		    "add rule ip space hold iifname \"gw0\" ct state new meta l4proto tcp reject with tcp reset\n"
		    "add rule ip space hold iifname \"gw0\" ct state new drop\n",
		    false, e);
}

int net_apply(struct daemon *d, struct sandbox *sb, struct err *e)
{
	return net_apply_policy(d, sb, sb->network, e);
}

/* The chain of slot's policy, and the map's way to it (sandbox id's, for errors). */
static int apply_slot(struct daemon *d, int slot, const char *id, const json_t *policy, struct err *e)
{
	char *script = malloc(SCRIPT_MAX), chain[16];
	if (!script)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	snprintf(chain, sizeof(chain), CHAIN_FMT, slot);
	char table[32], name[IF_NAMESIZE];
	snprintf(table, sizeof(table), "space_%s", d->net_tag);
	snprintf(name, sizeof(name), "sp%s%d", d->net_tag, slot);
	int n = net_policy_rules(policy, table, chain, script, SCRIPT_MAX - 128);
	int rc = n < 0 ? err_set(e, ERR_INTERNAL, -n, "the policy of %s is too long to render", id) : 0;
	if (rc == 0) {
		snprintf(script + n, SCRIPT_MAX - (size_t)n, "add element inet %s sandboxes { \"%s\" : jump %s }\n", table,
			 name, chain);
		rc = net_nft(NULL, script, false, e);
	}
	free(script);
	return rc;
}

int net_apply_policy(struct daemon *d, const struct sandbox *sb, const json_t *policy, struct err *e)
{
	return apply_slot(d, sb->conf.net_slot, sb->id, policy, e);
}

bool net_intact(struct daemon *d)
{
	char table[64];
	snprintf(table, sizeof(table), "space_%s", d->net_tag);
	return nft_chain_exists(table, "checked") == 1 && nft_chain_exists(table, "forward") == 1;
}

struct held {
	int slot;
	char id[SANDBOX_ID_LEN + 1];
	json_t *policy;
};

int net_restore(struct daemon *d, struct err *e)
{
	int n = 0, rc;
	daemon_lock(d);
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		n += sb->network != NULL && sb->conf.net_slot >= 0;
	struct held *all = calloc((size_t)n + 1, sizeof(*all));
	n = 0;
	for (struct sandbox *sb = d->sandboxes; all && sb; sb = sb->next)
		if (sb->network && sb->conf.net_slot >= 0) {
			all[n] = (struct held){ .slot = sb->conf.net_slot, .policy = json_deep_copy(sb->network) };
			snprintf(all[n++].id, sizeof(all[0].id), "%s", sb->id);
		}
	daemon_unlock(d);
	if (!all)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	if ((rc = host_rules(d, e)) == 0)
		rc = host_table(d, e);
	for (int i = 0; i < n; i++) {
		struct err one = { 0 };
		if (rc == 0 && all[i].policy && apply_slot(d, all[i].slot, all[i].id, all[i].policy, &one) < 0)
			log_warn("sandbox %s: cannot put its network policy back: %s", all[i].id, one.msg);
		json_decref(all[i].policy);
	}
	free(all);
	return rc;
}

int net_remove(struct daemon *d, struct sandbox *sb, struct err *e)
{
	if (!sb->network || sb->conf.net_slot < 0)
		return 0;
	char script[256], edge[600], in[600], name[IF_NAMESIZE];
	host_if(sb, name, sizeof(name));
	/* the map's element first: no packet finds a jump to a chain that is going */
	snprintf(script, sizeof(script), "delete element inet space_%s sandboxes { \"%s\" }\n", d->net_tag, name);
	net_nft(NULL, script, true, e);
	snprintf(script, sizeof(script), "delete chain inet space_%s " CHAIN_FMT "\n", d->net_tag, sb->conf.net_slot);
	net_nft(NULL, script, true, e);
	/* and its pins: the slot's next sandbox, of whatever tenant, starts with none */
	snprintf(script, sizeof(script), "delete set inet space_%s " CHAIN_FMT "_pins\n", d->net_tag, sb->conf.net_slot);
	net_nft(NULL, script, true, e);
	int rc;
	if (host_link(sb) && (rc = net_in_ns(NULL, net_del_step, name, "remove a sandbox's link", false, e)) < 0)
		return rc;
	net_ns_path(sb, "edge", edge, sizeof(edge));
	net_inner_path(sb, in, sizeof(in));
	net_drop_ns(edge);
	net_drop_ns(in);
	return 0;
}

int net_pin(struct daemon *d, const char *id, uint32_t addr, uint32_t seconds, struct err *e)
{
	int slot = -1;
	daemon_lock(d);
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		if (!strcmp(sb->id, id) && sb->network)
			slot = sb->conf.net_slot;
	daemon_unlock(d);
	if (slot < 0)
		return err_set(e, ERR_NOT_FOUND, ENOENT, "no sandbox %s with a network", id);
	char a[16], script[256];
	struct in_addr in = { .s_addr = addr };
	inet_ntop(AF_INET, &in, a, sizeof(a));
	/* an element already there gets the new timeout: the newest answer's TTL counts */
	snprintf(script, sizeof(script),
		 "delete element inet space_%s " CHAIN_FMT "_pins { %s }\n", d->net_tag, slot, a);
	net_nft(NULL, script, true, e);
	snprintf(script, sizeof(script), "add element inet space_%s " CHAIN_FMT "_pins { %s timeout %us }\n",
		 d->net_tag, slot, a, seconds);
	return net_nft(NULL, script, false, e);
}

void net_sweep(struct daemon *d)
{
	struct if_nameindex *all = if_nameindex();
	char prefix[16];
	snprintf(prefix, sizeof(prefix), "sp%s", d->net_tag);
	for (struct if_nameindex *i = all; i && i->if_index; i++) {
		const char *rest = i->if_name + strlen(prefix);
		if (strncmp(i->if_name, prefix, strlen(prefix)) != 0 || !*rest || strspn(rest, "0123456789") != strlen(rest))
			continue;
		int slot = atoi(rest);
		bool held = false;
		for (struct sandbox *s = d->sandboxes; s && !held; s = s->next)
			held = s->network && s->conf.net_slot == slot;
		if (held)
			continue;
		struct err e = { 0 };
		if (net_in_ns(NULL, net_del_step, i->if_name, "remove a link", false, &e) == 0)
			log_info("removed %s, the network of no sandbox", i->if_name);
		else
			log_warn("cannot remove %s: %s", i->if_name, e.msg);
	}
	if (all)
		if_freenameindex(all);
}

int net_bytes(const struct sandbox *sb, uint64_t *out, uint64_t *in)
{
	char name[IF_NAMESIZE + 2], line[512];
	host_if(sb, name, sizeof(name) - 1);
	strcat(name, ":");
	FILE *f = fopen("/proc/thread-self/net/dev", "re");
	if (!f)
		return -errno;
	int rc = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " ");
		if (strncmp(p, name, strlen(name)) != 0)
			continue;
		/* receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes ...
		 * what the host side receives is what the sandbox sends */
		uint64_t rx, tx, skip;
		if (sscanf(p + strlen(name), "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			   " %" SCNu64 " %" SCNu64 " %" SCNu64, &rx, &skip, &skip, &skip, &skip, &skip, &skip, &skip,
			   &tx) == 9) {
			*out = rx;
			*in = tx;
			rc = 0;
		}
		break;
	}
	fclose(f);
	return rc;
}

/*
 * daemon/net/net.h - the network of sandboxes on this host (docs/network.md).
 *
 * Every sandbox with a network has two or three network namespaces of its own, made and
 * removed by spaced, and a slot: a number that gives it a /30 of NET_TRANSIT_BASE.
 *
 *   host (spaced's namespace)      sp<tag><slot> 10.213.x.1/30 (veth)
 *     `- edge (<dir>/net/edge)     up0         10.213.x.2/30   (its peer)
 *                                  gw0         169.254.0.22/30 (veth to the sandbox, or the
 *                                                               microVM's tap)
 *          `- inner (<dir>/net/inner, gVisor only): eth0 169.254.0.21/30, runsc's interface
 *
 * Inside, every sandbox has the same address (NET_SANDBOX_ADDR, gateway NET_GATEWAY_ADDR), so
 * forks and sandboxes restored from one image all hold a configuration that works; the edge
 * translates it to the slot's address (SNAT out, DNAT in), as clones of one microVM image
 * are networked. The egress policy (policy.h) is enforced in spaced's own namespace, in
 * table `inet space_<tag>`, on traffic arriving from sp<tag><slot>: nothing in the sandbox can
 * reach those rules. The tag (four hex digits of the state dir's name) and the transit range
 * (spaced --net-transit) keep two spaceds apart in one namespace. The namespaces are files under the sandbox's dir (bind mounts), so they live
 * while the sandbox does, whether it runs or not.
 *
 * spaced does the work in-process, rtnetlink (link.h) and libnftables; every call blocks, so
 * use them from job threads, without d->lock unless said. Errors fill *e.
 */
#ifndef SPACE_DAEMON_NET_H
#define SPACE_DAEMON_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"
#include "proto/agent.h"

#define NET_TRANSIT_DEFAULT "10.213.0.0/16" /* the slots' /30s, unless spaced --net-transit */
#define NET_TRANSIT_MIN_PREFIX 14       /* the widest range taken: 65536 slots */
#define NET_TRANSIT_MAX_PREFIX 26       /* the narrowest: 16 slots */
#define NET_SLOTS 65536                 /* sandboxes with a network at once under one spaced */
#define NET_SANDBOX_ADDR SP_NET_ADDR    /* every sandbox's own address, /30 */
#define NET_GATEWAY_ADDR SP_NET_GATEWAY /* its gateway, the edge's end */
#define NET_PREFIX 30
#define NET_GUEST_MAC "02:00:a9:fe:00:15" /* a microVM's interface (the same in every one) */
#define NET_FLOWS_MAX 4096              /* connections a sandbox may hold open at once (tracked at
                                           its edge: the host's tracking table is shared by all) */

/* The host side, once at start (before any sandbox is adopted): turns forwarding on in
 * spaced's namespace and makes table `inet space_<tag>` afresh, with the ranges
 * d->cfg.net_permits lets sandboxes reach. */
int net_init(struct daemon *d, struct err *e);

/* Checks a --net-transit range (an IPv4 CIDR, NET_TRANSIT_MIN_PREFIX..MAX_PREFIX) into out in
 * normal form: 0, or -EINVAL. */
int net_transit_parse(const char *in, char *out, size_t n);

/* Whether every sandbox of d with a network has it in d->cfg.net_transit: 0, or -EINVAL with e
 * naming one that does not (a spaced restarted with another --net-transit would give out
 * addresses of that sandbox's range again: it refuses to start instead). [L] */
int net_transit_check(struct daemon *d, struct err *e);

/* A slot no sandbox of d holds, or -ENOSPC. [L] */
int net_slot_pick(struct daemon *d);

/*
 * Makes sb's namespaces, links, addresses and rules (inner: the gVisor kind's extra namespace
 * holding the sandbox's interface), or finds them made and refreshes what a runtime may have
 * taken away (runsc removes the address of the interface it takes over). Idempotent: call
 * before every start and restore.
 */
int net_ensure(struct daemon *d, struct sandbox *sb, bool inner, struct err *e);

/* Applies sb->network (its policy) to new connections at once. */
int net_apply(struct daemon *d, struct sandbox *sb, struct err *e);

/* Applies policy (normal form) to sb's new connections at once; sb->network is not read. */
int net_apply_policy(struct daemon *d, const struct sandbox *sb, const json_t *policy, struct err *e);

/*
 * With on, holds new connections off at sb's edge: none comes in, and one the sandbox starts
 * is refused at once (a reset), while those open go on; without, lets them through again. So
 * the connections a checkpoint cannot keep can end, and no new one start, before it.
 */
int net_hold(struct daemon *d, struct sandbox *sb, bool on, struct err *e);

/*
 * The TCP connections of sb that a runtime which cannot keep them must wait for: any its edge's
 * connection tracking holds that a reset did not end (the sandbox's own socket table does not
 * list time-wait, and the tracking's lasts 61 s, just past gVisor's 60). Returns how many, the
 * first described in first, or -errno.
 */
int net_open_flows(const struct sandbox *sb, char *first, size_t n);

/* Whether one line of /proc/net/nf_conntrack is such a connection (net_open_flows). */
bool net_flow_open(const char *line);

/* Removes the interfaces of this spaced (its tag) that no sandbox of d holds: what a spaced
 * stopped between making a sandbox's network and recording the sandbox leaves. [L] */
void net_sweep(struct daemon *d);

/* With make, a network namespace at <dir>/net/edge holding only a tap gw0 that leads nowhere
 * (a booted image's guest is built beside it, net_tap_open opens it); without, removes it. */
int net_scratch(const char *dir, bool make, struct err *e);

/* Makes addr (network order) reachable for sandbox id's policy for `seconds` (its pins: what
 * its resolver answered for a name it may reach). 0, or -errno with e (404: no such sandbox).
 * [takes d->lock] */
int net_pin(struct daemon *d, const char *id, uint32_t addr, uint32_t seconds, struct err *e);

/*
 * Failing closed. What a sandbox sends is forwarded only once table inet space_<tag> has marked
 * it (NET_MARK; routing rules at NET_RULE_PRIO refuse it unmarked), so a table removed by
 * anyone (`nft flush ruleset`, a restart of nftables.service) leaves sandboxes reaching
 * nothing beyond their host, not everything. A thread of net_watch_start checks every
 * NET_WATCH_MS that the table is there (net_intact) and puts it back (net_restore): the
 * table, the rules and every sandbox's policy; the pins of the answers before are lost (a
 * sandbox's next question pins again).
 */
#define NET_MARK 0x10000000  /* the bit of a packet's mark that says "a sandbox's, checked" */
#define NET_RULE_PRIO 100    /* the routing rules' priority (and the next one) */
#define NET_WATCH_MS 1000    /* how often the table is looked for */

bool net_intact(struct daemon *d);
int net_restore(struct daemon *d, struct err *e); /* [takes d->lock] */
int net_watch_start(struct daemon *d);            /* 0 or -errno */
void net_watch_stop(struct daemon *d);

/* Removes all of sb's network; what is already gone is fine. */
int net_remove(struct daemon *d, struct sandbox *sb, struct err *e);

/* Path of sb's inner namespace (runsc's), into out. */
void net_inner_path(const struct sandbox *sb, char *out, size_t n);

/* A descriptor of sb's inner network namespace (O_CLOEXEC), or -errno. */
int net_inner_open(const struct sandbox *sb);

/* Opens sb's tap (a microVM's netdev, in its edge namespace): a descriptor for QEMU, or -errno. */
int net_tap_open(const struct sandbox *sb, struct err *e);

/* sb's address as the host reaches it (the edge's end of its slot), into out. */
void net_host_reach(const struct sandbox *sb, char *out, size_t n);

/* Bytes sb has sent out and received, from its host-side interface's counters. */
int net_bytes(const struct sandbox *sb, uint64_t *out, uint64_t *in);

#endif

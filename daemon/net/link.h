/*
 * daemon/net/link.h - links, addresses and routes of one network namespace, over rtnetlink
 * from inside spaced (libmnl): what a sandbox's network needs of `ip`, without a program
 * started per step.
 *
 * A struct link_nl talks to the namespace the calling thread was in when link_open made it;
 * names are looked up there too, so a caller opens, works and closes while its thread is in
 * that namespace (net.c's enter/leave). Every change is acknowledged before the call returns.
 * Adding an address or a route replaces one that is there: each step can be done twice.
 * The calls return 0 or -errno.
 */
#ifndef SPACE_DAEMON_NET_LINK_H
#define SPACE_DAEMON_NET_LINK_H

#include <stdbool.h>
#include <stdint.h>

struct mnl_socket;

struct link_nl {
	struct mnl_socket *sock;
	uint32_t seq;
	uint32_t portid;
};

int link_open(struct link_nl *nl);
void link_close(struct link_nl *nl);

/* A veth pair: name here, peer in the namespace peer_ns (an open namespace file). */
int link_veth(struct link_nl *nl, const char *name, const char *peer, int peer_ns);

/* A persistent tap (no packet information, with virtio-net headers), in the calling thread's
 * namespace, for a microVM's QEMU to open later. */
int link_tap(const char *name);

int link_up(struct link_nl *nl, const char *name);
int link_del(struct link_nl *nl, const char *name);

/* addr/prefix (dotted IPv4) on the link name. */
int link_addr(struct link_nl *nl, const char *name, const char *addr, int prefix);

/* The default route via the gateway, out of dev. */
int link_default_route(struct link_nl *nl, const char *dev, const char *via);

/* A routing rule (`ip rule`) at priority prio for IPv4 packets from from/from_len: those
 * routed on this host's behalf alone with iif "lo", those whose mark has no bit of mask set
 * with mask (mark 0), any otherwise. A prohibited packet is refused (ICMP "administratively
 * prohibited" to a sender elsewhere), others look the main table up. A rule already there is
 * fine. */
struct link_rule {
	uint32_t prio;
	const char *from;
	int from_len;
	const char *iif; /* or NULL */
	uint32_t mask;   /* or 0 */
	bool prohibit;
};
int link_rule_add(struct link_nl *nl, const struct link_rule *r);

#endif

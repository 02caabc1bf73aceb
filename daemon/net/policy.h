/*
 * daemon/net/policy.h - a sandbox's egress policy: what it may reach beyond itself.
 *
 * A policy is a JSON object, the same in the API, the store and inspect:
 *
 *   {"egress": "none" | "open" | "allow", "allow": [CIDR...], "deny": [CIDR...]}
 *
 * none reaches nothing; open reaches the public internet; allow reaches only what "allow"
 * lists. "deny" is taken away from open and allow alike. Whatever the mode, the addresses of
 * NET_BLOCKED (the host, other sandboxes, loopback, link-local and the metadata address,
 * private and shared ranges, multicast) stay unreachable unless the operator permits a range
 * (spaced --egress-permit), and an allow entry inside them does not open them. Entries are
 * IPv4 addresses or CIDR blocks, or host names ("example.com", "*.example.com" for every name
 * under it), enforced through spaced's resolver (dns.h): a name refused is answered REFUSED,
 * and the addresses the resolver answers for a name allowed are pinned, reachable for as long
 * as the answer lives. Sandboxes have no IPv6 route. Nothing here touches the host: net.c
 * renders the policy with net_policy_rules and applies it.
 */
#ifndef SPACE_DAEMON_NET_POLICY_H
#define SPACE_DAEMON_NET_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/host/err.h"

enum net_egress { NET_EGRESS_NONE, NET_EGRESS_OPEN, NET_EGRESS_ALLOW };

#define NET_RULES_MAX 64 /* entries in allow and deny together */
#define NET_NAME_MAX 253 /* characters of a host name entry */

/* What stays unreachable in every mode: nftables interval syntax, comma separated. */
#define NET_BLOCKED                                                                                         \
	"0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.0.0.0/24, " \
	"192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/4, 240.0.0.0/4"

/* "none", "open", "allow"; the mode named s into *out: 0, or -EINVAL. */
const char *net_egress_name(enum net_egress m);
int net_egress_parse(const char *s, enum net_egress *out);

/*
 * The policy `in` asks for, checked and in normal form (each CIDR with its host bits clear,
 * duplicates dropped; a mode other than allow with allow entries is refused), as a new object;
 * fields `in` leaves out come from `base` (the current policy, or NULL: egress dflt and empty
 * lists). NULL with *e filled (400) when it is not a policy.
 */
json_t *net_policy_parse(const json_t *in, const json_t *base, enum net_egress dflt, struct err *e);

/* The mode of a policy in normal form. */
enum net_egress net_policy_egress(const json_t *policy);

/*
 * Renders the rules of chain `chain` of table `inet <table>` for policy into out (nft -f syntax:
 * flushes the chain and adds each rule), given the sets @blocked and @permitted that net_init
 * makes there. Returns the length, or -ENOSPC.
 */
int net_policy_rules(const json_t *policy, const char *table, const char *chain, char *out, size_t n);

/* A host name entry ("Example.COM." or "*.example.com") into normal form (lower case, no
 * final dot); 0, or -EINVAL for what is not one (an address is not a name). */
int net_name_normal(const char *in, char *out, size_t n);

/* Whether an entry in normal form is a host name (else an address or block). */
bool net_is_name(const char *entry);

/* What spaced's resolver does with a question for name (lower case) under policy. */
enum net_name_verdict {
	NET_NAME_REFUSE,  /* answered REFUSED: egress none, a name denied, or not allowed */
	NET_NAME_RESOLVE, /* asked upstream and answered as is (egress open) */
	NET_NAME_PIN,     /* asked upstream; the addresses of the answer become reachable (allow) */
};
enum net_name_verdict net_policy_name(const json_t *policy, const char *name);

/* A CIDR (a.b.c.d or a.b.c.d/len) into normal form in out; 0 or -EINVAL. */
int net_cidr_normal(const char *in, char *out, size_t n);

#endif

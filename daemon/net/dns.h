/*
 * daemon/net/dns.h - spaced's resolver, the DNS server every sandbox with a network has
 * (docs/network.md).
 *
 * Every DNS query a sandbox sends over UDP or TCP, to whatever address on port 53, its edge
 * sends to spaced's namespace, port NET_DNS_PORT of the sandbox's host end; the resolver
 * tells the sandbox by the source address (its slot's) and decides by its policy
 * (net_policy_name): REFUSED, or the question sent to the upstream resolver and its answer
 * sent back; for a name allowed by name, the answer's IPv4 addresses are pinned in the
 * sandbox's set for their TTL (at least NET_DNS_PIN_MIN_S, at most NET_DNS_PIN_MAX_S), which
 * is what makes them reachable. One thread, one epoll set; a thread per TCP connection.
 * Each sandbox has its share of questions waiting and of connections; none is shared.
 *
 * The wire format's parsing is pure (dns_wire.c) for the unit test and the fuzz target.
 */
#ifndef SPACE_DAEMON_DNS_H
#define SPACE_DAEMON_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

#define NET_DNS_PORT 10053          /* where the resolver listens in spaced's namespace */
#define NET_DNS_MSG_MAX 1232        /* bytes of a query or answer over UDP (EDNS's safe size) */
#define NET_DNS_PENDING_MAX 64      /* questions of one sandbox waiting upstream (its share, a
                                       socket each); more: REFUSED */
#define NET_DNS_TIMEOUT_MS 5000     /* for the upstream's answer */
#define NET_DNS_PIN_MIN_S 5         /* an answer's addresses stay reachable at least this long */
#define NET_DNS_PIN_MAX_S 86400
#define NET_DNS_TCP_PER_SANDBOX 4   /* connections over TCP of one sandbox at once (its share,
                                       a thread each); more are closed at once */
#define NET_DNS_TCP_MSG_MS 5000     /* for a whole question over TCP to come, from when the
                                       resolver waits for it (then the connection is closed) */
#define NET_DNS_TCP_MSG_MAX 65535   /* a message over TCP (its length is two bytes) */

/* Starts the resolver (its upstream: d->cfg.dns_upstream, else the first nameserver of
 * /etc/resolv.conf). 0 or -errno (logged). */
int dns_start(struct daemon *d);
void dns_stop(struct daemon *d);

/* ---- the wire (dns_wire.c) ---- */

/* The question of a query msg[0..n): its name in lower case, dotted, no final dot (into name),
 * its type; 0, or -EINVAL for what is not a standard query with one question. */
int dns_question(const uint8_t *msg, size_t n, char *name, size_t nname, uint16_t *qtype);

/* Calls each(address in network order, ttl, ctx) for every IN A record of the answer section
 * of msg[0..n); 0, or -EINVAL when the message is malformed (nothing past n is read). */
int dns_answers_a(const uint8_t *msg, size_t n, void (*each)(uint32_t addr, uint32_t ttl, void *ctx), void *ctx);

/* A REFUSED answer to the query q[0..n) (its header and question, nothing else) into out;
 * its length, or 0 when q has no whole question. */
size_t dns_refused(const uint8_t *q, size_t n, uint8_t *out, size_t nout);

#endif

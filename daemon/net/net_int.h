/*
 * daemon/net/net_int.h - what net.c and net_ns.c share: the namespaces' paths and the ways
 * of acting inside one (net_ns.c). The module's interface is net.h.
 */
#ifndef SPACE_DAEMON_NET_INT_H
#define SPACE_DAEMON_NET_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

struct link_nl;

/* The path of sb's namespace `leaf` ("edge", "inner"), under its dir. */
void net_ns_path(const struct sandbox *sb, const char *leaf, char *out, size_t n);

/* Whether a network namespace is bound at path. */
bool net_is_ns(const char *path);

/* A new, empty network namespace bound at path (kept however many processes use it). */
int net_make_ns(const char *path);

/* Unbinds the namespace at path and removes the file (said in the log when it cannot). */
void net_drop_ns(const char *path);

/* One namespace's steps, over netlink (link.h): fn runs with nl made in the namespace at path
 * (NULL: spaced's) and this thread inside it. A failure fills e with what, the namespace and
 * the kernel's reason, unless quiet. */
typedef int link_steps(struct link_nl *nl, const void *arg);

int net_in_ns(const char *path, link_steps *fn, const void *arg, const char *what, bool quiet, struct err *e);

/* A link_steps that removes the link named name. */
int net_del_step(struct link_nl *nl, const void *name);

/* Runs an nft script (one transaction: all of it or nothing) in the namespace at path (NULL:
 * spaced's), through libnftables in this thread, whose netlink socket is made in that
 * namespace. With quiet, a failure is not filled into e. */
int net_nft(const char *path, const char *script, bool quiet, struct err *e);

/* 1 when chain of table inet `table` is there in spaced's namespace, 0 when it (or the table)
 * is not, -errno when nftables cannot be asked. One netlink question for that chain alone: the
 * watch asks it every NET_WATCH_MS, where an net_nft() run would read the whole ruleset. */
int nft_chain_exists(const char *table, const char *chain);

/* Writes value into each sysctl file of rel (NULL-ended, under /proc/sys/) of the namespace at
 * path. 0 or -errno. */
int net_sysctls(const char *path, const char *const *rel, const char *value);

#endif

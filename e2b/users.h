/*
 * e2b/users.h - whom a sandbox-plane call acts as (users.c, docs/e2b.md "The default user").
 *
 * A call that names a user (the `username` argument of /files, or Authorization: Basic on the
 * RPCs) acts as that user. One that names none acts as envd's default user, `user` (home and
 * working folder /home/user), in a sandbox that has that account; in one that has not (a
 * template made from an image without it) as root in /work, space's own default. Whether a
 * sandbox has it is asked of spaced once and remembered for the sandbox's life.
 */
#ifndef SPACE_E2B_USERS_H
#define SPACE_E2B_USERS_H

#include <pthread.h>
#include <stdbool.h>

#include "e2b/gateway.h"

#define GW_DEFAULT_USER "user" /* envd's default user, as E2B's base template has it */
#define GW_USERS_KNOWN 1024    /* sandboxes whose answer the front remembers; the oldest goes first */

struct gw_users_entry {
	char sbid[16];
	bool has;                  /* the sandbox has GW_DEFAULT_USER */
};

/* What the front knows of sandboxes' accounts, under one lock. */
struct gw_users {
	pthread_mutex_t lock;
	struct gw_users_entry known[GW_USERS_KNOWN]; /* [lock] a ring */
	unsigned next;                               /* [lock] the slot the next answer takes */
};

void users_init(struct gw_users *u);

/* The user a call on sandbox sbid (checked) acts as, into dst (n bytes, at least
 * GW_USER_MAX + 1): the one it names, else GW_DEFAULT_USER when the sandbox has that account.
 * NULL when it names none and the sandbox has no such account: spaced's default, root in /work. */
const char *users_of(struct req *r, const char *sbid, char *dst, size_t n);

#endif

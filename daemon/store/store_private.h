/*
 * daemon/store/store_private.h - what the store's files share (store.c, store_volume.c):
 * the connection and the one way they run a statement.
 */
#ifndef SPACE_DAEMON_STORE_PRIVATE_H
#define SPACE_DAEMON_STORE_PRIVATE_H

#include <sqlite3.h>

#include "daemon/daemon.h"

struct store {
	sqlite3 *db;
};

/* Runs sql with text/int parameters given as a printf-like type string: 's' const char *
 * (NULL binds NULL), 'i' int64_t, 'd' double. 0, -EEXIST for a row whose key is taken, or
 * -EIO. */
int store_exec(struct store *st, const char *sql, const char *types, ...);

#endif

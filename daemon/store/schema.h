/*
 * daemon/store/schema.h - the database's schema, in numbered steps.
 *
 * A database records in PRAGMA user_version how many steps it has had. Opening
 * one applies the steps it lacks, each in a transaction of its own with its
 * new number, so a crash leaves it at one step or the next. A database of a
 * newer spaced (a number past SCHEMA_VERSION) is refused, and so is one made
 * before steps were numbered (user_version 0 with a table of ours in it: a
 * spaced from before any release); either is left as it is.
 */
#ifndef SPACE_DAEMON_STORE_SCHEMA_H
#define SPACE_DAEMON_STORE_SCHEMA_H

#include <sqlite3.h>

#define SCHEMA_VERSION 30    /* the steps this spaced knows */

/* Brings db to SCHEMA_VERSION. Returns 0, -EPROTO for a database of a newer spaced (*found:
 * its number), -EMEDIUMTYPE for one from before numbered steps, or -EIO (a step failed; the
 * database is left at the step before it). */
int schema_migrate(sqlite3 *db, int *found);
/* The same, up to step target (0..SCHEMA_VERSION) only: a database as the spaced of that step
 * left it (a database already past target is left as it is). -EINVAL for a target out of range. */
int schema_migrate_to(sqlite3 *db, int target, int *found);

#endif

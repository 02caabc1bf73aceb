/*
 * daemon/store/schema.c - the schema's steps and how a database gets them (see schema.h).
 */
#include "daemon/store/schema.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Step N is steps[N - 1]. Never change a step that has shipped: add one. Step 1 makes only the
 * tables that are not there: a database from before numbering may hold some of them. */
static const char *const steps[SCHEMA_VERSION] = {
	"CREATE TABLE IF NOT EXISTS sandboxes("
	" id TEXT PRIMARY KEY, state TEXT NOT NULL, reason TEXT, template TEXT NOT NULL,"
	" cpus INTEGER NOT NULL, memory_mb INTEGER NOT NULL, timeout REAL NOT NULL,"
	" env TEXT NOT NULL, metadata TEXT NOT NULL, created_ms INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS snapshots("
	" id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, name TEXT, template TEXT NOT NULL,"
	" cpus INTEGER NOT NULL, memory_mb INTEGER NOT NULL, env TEXT NOT NULL, metadata TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, name TEXT, created_ms INTEGER);"
	"CREATE TABLE IF NOT EXISTS templates(name TEXT PRIMARY KEY, key TEXT NOT NULL,"
	" path TEXT NOT NULL, created_ms INTEGER NOT NULL);",
	"ALTER TABLE sandboxes ADD COLUMN lifetime REAL NOT NULL DEFAULT 0",
	"ALTER TABLE sandboxes ADD COLUMN timeout_kill INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE sandboxes ADD COLUMN keepalive INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE sandboxes ADD COLUMN remaining_ms INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE sandboxes ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
	"ALTER TABLE snapshots ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
	"ALTER TABLE tokens ADD COLUMN tenant TEXT NOT NULL DEFAULT ''",
	"ALTER TABLE sandboxes ADD COLUMN disk_mb INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE snapshots ADD COLUMN disk_mb INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE snapshots ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
	"ALTER TABLE templates ADD COLUMN source TEXT NOT NULL DEFAULT ''",
	"ALTER TABLE templates ADD COLUMN config TEXT NOT NULL DEFAULT '{}'",
	"ALTER TABLE templates ADD COLUMN info TEXT NOT NULL DEFAULT '{}'",
	"ALTER TABLE sandboxes ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",
	/* every sandbox and snapshot made before there was a choice ran under gVisor */
	"ALTER TABLE sandboxes ADD COLUMN isolation TEXT NOT NULL DEFAULT 'gvisor'",
	"ALTER TABLE snapshots ADD COLUMN isolation TEXT NOT NULL DEFAULT 'gvisor'",
	/* 0 in a row from before: its lifetime ended lifetime seconds after its creation */
	"ALTER TABLE sandboxes ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0",
	/* NULL: made before sandboxes had a network */
	"ALTER TABLE sandboxes ADD COLUMN network TEXT",
	"ALTER TABLE snapshots ADD COLUMN network TEXT",
	"ALTER TABLE sandboxes ADD COLUMN access_token TEXT NOT NULL DEFAULT ''",
	"ALTER TABLE sandboxes ADD COLUMN public_ports INTEGER NOT NULL DEFAULT 0",
	/* -1: made before sandboxes had their own choice; read as on, a create's default */
	"ALTER TABLE sandboxes ADD COLUMN auto_resume INTEGER NOT NULL DEFAULT -1",
	/* 25: the last step a database from before numbering may hold */
	/* A token from before tenants has the tenant its creation would give it today (its name,
	 * else "default"): an empty tenant is the administrator's, which no token may be. */
	"UPDATE tokens SET tenant = CASE WHEN length(coalesce(name, '')) BETWEEN 1 AND 63 "
	"THEN name ELSE 'default' END WHERE tenant = ''",
	/* '': made before ports had a token of their own; adoption makes one */
	"ALTER TABLE sandboxes ADD COLUMN traffic_token TEXT NOT NULL DEFAULT ''",
	/* the hashes of administrators' tokens (spaced token create --admin), which may read GET
	 * /metrics: a table of its own, which a step run again (a database from before numbering)
	 * finds there */
	"CREATE TABLE IF NOT EXISTS admin_tokens(hash TEXT PRIMARY KEY)",
	/* volumes: storage that outlives sandboxes, named within their tenant; its bytes are
	 * <state>/volumes/<owner>-<name>/disk.img (driver/disk.h) */
	"CREATE TABLE IF NOT EXISTS volumes(name TEXT NOT NULL, tenant TEXT NOT NULL, size_mb INTEGER NOT NULL,"
	" labels TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY(tenant, name))",
	/* the volumes a sandbox mounts, a JSON array of {name, path, read_only} */
	"ALTER TABLE sandboxes ADD COLUMN volumes TEXT NOT NULL DEFAULT '[]'",
};

static int version(sqlite3 *db)
{
	sqlite3_stmt *s;
	int v = -1;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

static bool has_tables(sqlite3 *db)
{
	sqlite3_stmt *s;
	bool yes = false;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sandboxes'", -1, &s,
			       NULL) != SQLITE_OK)
		return false;
	yes = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return yes;
}

/* Runs step n and records its number, in one transaction. */
static int apply(sqlite3 *db, int n)
{
	char sql[64];
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", n);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	int rc = sqlite3_exec(db, steps[n - 1], NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : -EIO;
}

int schema_migrate(sqlite3 *db, int *found)
{
	return schema_migrate_to(db, SCHEMA_VERSION, found);
}

int schema_migrate_to(sqlite3 *db, int target, int *found)
{
	int v = version(db);
	*found = v;
	if (v < 0)
		return -EIO;
	if (v > SCHEMA_VERSION)
		return -EPROTO;
	if (target < 0 || target > SCHEMA_VERSION)
		return -EINVAL;
	if (v == 0 && has_tables(db)) /* from before numbering: not read, left as it is */
		return -EMEDIUMTYPE;
	int rc = 0;
	for (v++; rc == 0 && v <= target; v++)
		rc = apply(db, v);
	return rc;
}

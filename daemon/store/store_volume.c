/*
 * daemon/store/store_volume.c - the records of volumes (see store.h, store_private.h).
 */
#include "daemon/store/store.h"
#include "daemon/store/store_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int store_put_volume(struct store *st, const char *name, const char *tenant, int size_mb, const char *labels)
{
	return store_exec(st, "INSERT INTO volumes(name, tenant, size_mb, labels, created_ms) VALUES(?,?,?,?,?)",
			  "ssisi", name, tenant, (int64_t)size_mb, labels, wall_ms());
}

int store_delete_volume(struct store *st, const char *tenant, const char *name)
{
	return store_exec(st, "DELETE FROM volumes WHERE tenant = ? AND name = ?", "ss", tenant, name);
}

/* One row of SELECT name, tenant, size_mb, labels, created_ms as the API shows it. */
static json_t *volume_row(sqlite3_stmt *stmt)
{
	char when[32];
	time_t t = (time_t)(sqlite3_column_int64(stmt, 4) / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *labels = json_loads((const char *)sqlite3_column_text(stmt, 3), 0, NULL);
	if (!json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	return json_pack("{s:s, s:s, s:i, s:o, s:s}", "name", sqlite3_column_text(stmt, 0), "tenant",
			 sqlite3_column_text(stmt, 1), "size_mb", sqlite3_column_int(stmt, 2), "labels", labels,
			 "created_at", when);
}

#define VOLUME_COLUMNS "name, tenant, size_mb, labels, created_ms"

json_t *store_get_volume(struct store *st, const char *tenant, const char *name)
{
	sqlite3_stmt *stmt;
	json_t *out = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT " VOLUME_COLUMNS " FROM volumes WHERE tenant = ? AND name = ?", -1, &stmt,
			       NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, tenant, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 2, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		out = volume_row(stmt);
	sqlite3_finalize(stmt);
	return out;
}

json_t *store_list_volumes(struct store *st, const char *tenant)
{
	sqlite3_stmt *stmt;
	json_t *arr = json_array();
	const char *sql = tenant ? "SELECT " VOLUME_COLUMNS " FROM volumes WHERE tenant = ? ORDER BY name"
				 : "SELECT " VOLUME_COLUMNS " FROM volumes ORDER BY tenant, name";
	if (sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL) != SQLITE_OK)
		return arr;
	if (tenant)
		sqlite3_bind_text(stmt, 1, tenant, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(stmt) == SQLITE_ROW)
		json_array_append_new(arr, volume_row(stmt));
	sqlite3_finalize(stmt);
	return arr;
}

int store_tenant_volumes(struct store *st, const char *tenant)
{
	sqlite3_stmt *stmt;
	if (sqlite3_prepare_v2(st->db, "SELECT count(*) FROM volumes WHERE tenant = ?", -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(stmt, 1, tenant, -1, SQLITE_TRANSIENT);
	int n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -EIO;
	sqlite3_finalize(stmt);
	return n;
}

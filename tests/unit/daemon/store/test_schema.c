/*
 * tests/unit/daemon/store/test_schema.c - the database's schema (daemon/store/schema.c): a new
 * database has every step; one of each earlier version gets the steps it lacks and keeps its
 * rows; one a newer spaced wrote, and one from before the steps were numbered, are refused and
 * left as they were. Each test runs in its own temporary directory under /tmp.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "daemon/store/schema.h"
#include "daemon/store/store.h"
#include "tests/unit/daemon/store/store_check.h"

/* The two tables of the first spaced, as it made them. */
#define FIRST_TABLES \
	"CREATE TABLE sandboxes(id TEXT PRIMARY KEY, state TEXT NOT NULL, reason TEXT," \
	" template TEXT NOT NULL, cpus INTEGER NOT NULL, memory_mb INTEGER NOT NULL, timeout REAL NOT NULL," \
	" env TEXT NOT NULL, metadata TEXT NOT NULL, created_ms INTEGER NOT NULL);" \
	"CREATE TABLE snapshots(id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, name TEXT," \
	" template TEXT NOT NULL, cpus INTEGER NOT NULL, memory_mb INTEGER NOT NULL, env TEXT NOT NULL," \
	" metadata TEXT NOT NULL, created_ms INTEGER NOT NULL);"

/* PRAGMA user_version of the fixture's database, read by a connection of its own. */
static int user_version(struct fixture *fx)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int v = -1;
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

static void test_a_new_database_has_every_step(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(user_version(fx), SCHEMA_VERSION);
	store_close(fx->st);
	assert_int_equal(store_open(fx->path, &fx->st), 0); /* opening again changes nothing */
	assert_int_equal(user_version(fx), SCHEMA_VERSION);
}

/* A database as a spaced from before numbered steps left it (its tables, a sandbox in them,
 * user_version 0) is refused, and left as it was. */
static void test_a_database_from_before_numbering_is_refused_and_left(void **state)
{
	struct fixture *fx = *state;
	store_close(fx->st);
	fx->st = NULL;
	unlink(fx->path);
	raw_sql(fx, FIRST_TABLES
		    "INSERT INTO sandboxes VALUES('0123456789ab', 'suspended', NULL, 'default', 1, 512, 300,"
		    " '{}', '{}', 1000);");
	assert_int_equal(store_open(fx->path, &fx->st), -EMEDIUMTYPE);
	assert_null(fx->st);
	assert_int_equal(user_version(fx), 0);
	sqlite3 *db;
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id FROM sandboxes", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW); /* its row is still there */
	sqlite3_finalize(s);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT isolation FROM sandboxes", -1, &s, NULL), SQLITE_ERROR);
	sqlite3_close(db);
}

/* The schema as sqlite keeps it: every table's and index's statement, in name order. */
static char *schema_text(sqlite3 *db)
{
	sqlite3_stmt *s;
	size_t n = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &n);
	assert_non_null(f);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name", -1,
					    &s, NULL), SQLITE_OK);
	while (sqlite3_step(s) == SQLITE_ROW)
		fprintf(f, "%s;\n", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	fclose(f);
	return out;
}

/* A database of every earlier version, with a token and a sandbox in it as that version wrote
 * them, gets the steps it lacks: it ends at SCHEMA_VERSION with the schema of a new database and
 * its rows kept. */
static void test_a_database_of_each_earlier_version_gets_the_steps_it_lacks(void **state)
{
	struct fixture *fx = *state;
	sqlite3 *fresh;
	int found;
	assert_int_equal(sqlite3_open(":memory:", &fresh), SQLITE_OK);
	assert_int_equal(schema_migrate(fresh, &found), 0);
	char *want = schema_text(fresh);
	sqlite3_close(fresh);
	for (int v = 1; v < SCHEMA_VERSION; v++) {
		sqlite3 *db;
		assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
		assert_int_equal(schema_migrate_to(db, v, &found), 0);
		assert_int_equal(found, 0);
		assert_int_equal(sqlite3_exec(db,
					      "INSERT INTO tokens(hash, name, created_ms) VALUES('cc', 'carol', 5);"
					      "INSERT INTO sandboxes(id, state, template, cpus, memory_mb, timeout, env,"
					      " metadata, created_ms) VALUES('0123456789ab', 'running', 'default', 3, 640,"
					      " 30, '{}', '{}', 7)",
					      NULL, NULL, NULL),
				 SQLITE_OK);
		assert_int_equal(schema_migrate(db, &found), 0);
		assert_int_equal(found, v);
		char *got = schema_text(db);
		assert_string_equal(got, want);
		free(got);
		sqlite3_stmt *s;
		assert_int_equal(sqlite3_prepare_v2(db,
						    "SELECT cpus, memory_mb, (SELECT name FROM tokens), (SELECT tenant FROM tokens)"
						    " FROM sandboxes",
						    -1, &s, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(s), SQLITE_ROW);
		assert_int_equal(sqlite3_column_int(s, 0), 3);
		assert_int_equal(sqlite3_column_int(s, 1), 640);
		assert_string_equal((const char *)sqlite3_column_text(s, 2), "carol");
		/* a token from before tenants (step 24) is given the tenant its creation gives it
		 * today, its name; one stored after it keeps what it was stored with */
		assert_string_equal((const char *)sqlite3_column_text(s, 3), v < 24 ? "carol" : "");
		sqlite3_finalize(s);
		sqlite3_close(db);
	}
	free(want);
	(void)fx;
}

static void test_a_database_of_a_newer_spaced_is_refused(void **state)
{
	struct fixture *fx = *state;
	store_close(fx->st);
	fx->st = NULL;
	char sql[64];
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", SCHEMA_VERSION + 1);
	raw_sql(fx, sql);
	assert_int_equal(store_open(fx->path, &fx->st), -EPROTO);
	assert_null(fx->st);
	assert_int_equal(user_version(fx), SCHEMA_VERSION + 1); /* left as it was */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_new_database_has_every_step),
		T(test_a_database_from_before_numbering_is_refused_and_left),
		T(test_a_database_of_each_earlier_version_gets_the_steps_it_lacks),
		T(test_a_database_of_a_newer_spaced_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/daemon/store/store_check.c - what the store's tests share (store_check.h): a
 * database of its own in a temporary directory for each test, SQL run behind the store's
 * back, and the lists of sandboxes it loads.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "daemon/store/schema.h"
#include "daemon/store/store.h"
#include "tests/unit/daemon/store/store_check.h"

int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/space-test-store-XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/space.db", fx->dir);
	if (store_open(fx->path, &fx->st) < 0) {
		rmdir(fx->dir);
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

/* Removes the directory and the files SQLite made in it (the database, its WAL and shm). */
int teardown(void **state)
{
	struct fixture *fx = *state;
	store_close(fx->st);
	DIR *d = opendir(fx->dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			unlinkat(dirfd(d), e->d_name, 0);
		}
		closedir(d);
	}
	int rc = rmdir(fx->dir);
	free(fx);
	return rc;
}

void sandbox_list_free(struct sandbox *sb)
{
	while (sb) {
		struct sandbox *next = sb->next;
		json_decref(sb->conf.env);
		json_decref(sb->conf.metadata);
		free(sb);
		sb = next;
	}
}

size_t sandbox_count(const struct sandbox *sb)
{
	size_t n = 0;
	for (; sb; sb = sb->next)
		n++;
	return n;
}

/* Runs sql on the database behind the store's back, as another program (or an older spaced) would. */
void raw_sql(struct fixture *fx, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/*
 * tests/unit/daemon/store/store_check.h - what the store's tests share: each test file links
 * store_check.c (tests/unit/unit.mk).
 */
#ifndef SPACE_TESTS_STORE_CHECK_H
#define SPACE_TESTS_STORE_CHECK_H

#include <stddef.h>

#include "daemon/store/store.h"

struct fixture {
	char dir[64];
	char path[128]; /* <dir>/space.db */
	struct store *st;
};

/* cmocka's setup: a struct fixture in *state, its store open on a new database in a new
 * temporary directory. */
int setup(void **state);
/* cmocka's teardown: closes the store and removes the directory and the files SQLite made. */
int teardown(void **state);

/* Runs sql on the database behind the store's back, as another program (or an older spaced) would. */
void raw_sql(struct fixture *fx, const char *sql);

/* Frees a list store_load_sandboxes made. */
void sandbox_list_free(struct sandbox *sb);
/* The sandboxes in a list. */
size_t sandbox_count(const struct sandbox *sb);

#endif

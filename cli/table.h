/*
 * cli/table.h - aligned text tables for `space ls`, `space ps` and
 * `space template ls`.
 *
 * A table owns copies of its cells. Columns are as wide as their widest cell
 * (in bytes) and separated by three spaces; the last column is not padded.
 * Order of calls: table_init, table_add for each row, table_print, table_free.
 */
#ifndef SPACE_CLI_TABLE_H
#define SPACE_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

struct table {
	size_t ncols;
	size_t nrows; /* including the header row */
	size_t cap;   /* rows allocated */
	char **cells; /* nrows * ncols strings */
};

/* The header row has ncols cells (at most 16). Returns 0, -EINVAL or -ENOMEM. */
int table_init(struct table *t, size_t ncols, const char *const *header);
/* Copies ncols cells (NULL prints as "-"). Returns 0 or -ENOMEM. */
int table_add(struct table *t, const char *const *row);
void table_print(const struct table *t, FILE *out);
void table_free(struct table *t);

#endif

/*
 * cli/table.c - aligned text tables: rows of copied strings, printed with
 * each column padded to its widest cell. Used by every listing command so
 * that they all look alike.
 */
#include "table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_GAP 3
#define TABLE_MAX_COLS 16

int table_init(struct table *t, size_t ncols, const char *const *header)
{
	memset(t, 0, sizeof(*t));
	if (ncols == 0 || ncols > TABLE_MAX_COLS)
		return -EINVAL;
	t->ncols = ncols;
	return table_add(t, header);
}

int table_add(struct table *t, const char *const *row)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **cells = realloc(t->cells, cap * t->ncols * sizeof(*cells));
		if (!cells)
			return -ENOMEM;
		t->cells = cells;
		t->cap = cap;
	}
	char **dst = t->cells + t->nrows * t->ncols;
	for (size_t i = 0; i < t->ncols; i++) {
		dst[i] = strdup(row[i] ? row[i] : "-");
		if (!dst[i]) {
			while (i-- > 0)
				free(dst[i]);
			return -ENOMEM;
		}
	}
	t->nrows++;
	return 0;
}

void table_print(const struct table *t, FILE *out)
{
	size_t width[TABLE_MAX_COLS];
	size_t ncols = t->ncols;

	for (size_t c = 0; c < ncols; c++) {
		width[c] = 0;
		for (size_t r = 0; r < t->nrows; r++) {
			size_t w = strlen(t->cells[r * t->ncols + c]);
			if (w > width[c])
				width[c] = w;
		}
	}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			if (c + 1 == ncols)
				fprintf(out, "%s\n", cell);
			else
				fprintf(out, "%-*s", (int)(width[c] + TABLE_GAP), cell);
		}
	}
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

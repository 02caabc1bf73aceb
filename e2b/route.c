/*
 * e2b/route.c - the E2B front's route tables matched (route.h): a pattern is walked beside
 * the path, literal text byte for byte, a parameter as the segment (or, "{name*}", the rest)
 * the path has there.
 */
#include "e2b/route.h"

#include <string.h>

/* Takes the parameter at *u (a segment, or the rest when rest) into a's buf at *used: false
 * when it is empty (a segment), longer than max or does not fit. */
static bool take(const char **u, bool rest, size_t max, struct route_args *a, size_t *used, size_t k)
{
	size_t len = rest ? strlen(*u) : strcspn(*u, "/");
	if ((!rest && len == 0) || (!rest && max && len > max) || *used + len + 1 > sizeof(a->buf))
		return false;
	memcpy(a->buf + *used, *u, len);
	a->buf[*used + len] = '\0';
	a->param[k] = a->buf + *used;
	*used += len + 1;
	*u += len;
	return true;
}

bool route_match(const char *pattern, size_t max, const char *path, struct route_args *a)
{
	const char *p = pattern, *u = path;
	size_t used = 0, k = 0;
	if (strlen(path) >= ROUTE_PATH_MAX)
		return false;
	while (*p) {
		if (*p != '{') {
			if (*p++ != *u++)
				return false;
			continue;
		}
		const char *close = strchr(p, '}');
		if (!close || k == ROUTE_PARAMS_MAX)
			return false; /* a pattern the table should not hold: it matches nothing */
		bool rest = close[-1] == '*';
		if ((rest && close[1]) || !take(&u, rest, max, a, &used, k++))
			return false;
		p = close + 1;
	}
	for (; k < ROUTE_PARAMS_MAX; k++)
		a->param[k] = NULL;
	return *u == '\0';
}

const struct route *route_find(const struct route *table, size_t n, const char *method, const char *path,
			       struct route_args *a)
{
	for (size_t i = 0; i < n; i++) {
		if (table[i].method && strcmp(table[i].method, method) != 0)
			continue;
		if (route_match(table[i].pattern, table[i].max, path, a))
			return &table[i];
	}
	return NULL;
}

/*
 * e2b/query.c - what E2B's list of sandboxes takes in its query (query.h): the metadata
 * filter, decoded with libmicrohttpd's percent-decoding.
 */
#include "e2b/query.h"

#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

void query_unescape(char *s, bool plus)
{
	for (char *p = s; plus && (p = strchr(p, '+')); p++)
		*p = ' ';
	MHD_http_unescape(s);
}

json_t *query_metadata(const char *q)
{
	json_t *f = json_object();
	char *copy = strdup(q ? q : ""), *save = NULL;
	if (!f || !copy) {
		json_decref(f);
		free(copy);
		return NULL;
	}
	for (char *pair = strtok_r(copy, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		if (!eq) {
			json_decref(f);
			f = NULL;
			break;
		}
		*eq = '\0';
		query_unescape(pair, true);
		query_unescape(eq + 1, true);
		query_unescape(pair, false);
		query_unescape(eq + 1, false);
		json_object_set_new(f, pair, json_string(eq + 1));
	}
	free(copy);
	return f;
}

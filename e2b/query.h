/*
 * e2b/query.h - what E2B's list of sandboxes takes in its query (query.c).
 */
#ifndef SPACE_E2B_QUERY_H
#define SPACE_E2B_QUERY_H

#include <stdbool.h>

#include <jansson.h>

/* The metadata filter of a list, from its "metadata" argument q (libmicrohttpd's, decoded
 * once): "k=v&k2=v2", each key and value percent-encoded once more, as the SDKs send it; each
 * is decoded twice more, the first time as a form ('+' is a space), and an escape that is not
 * '%' and two hex digits is kept as it is. An object of key: value ({} for q NULL); NULL when
 * a pair has no '='. */
json_t *query_metadata(const char *q);
/* Percent-decodes s in place (libmicrohttpd's MHD_http_unescape: a bad escape is kept), first
 * turning each '+' of s into a space when plus (a form's encoding). */
void query_unescape(char *s, bool plus);

#endif

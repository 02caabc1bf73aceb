/*
 * tests/fuzz/fuzz_api_route.c - the API's routing and path checks
 * (daemon/api.c: api_match, api_check_path) over arbitrary URLs and paths.
 *
 * Input: byte 0 picks the method (GET, POST, PUT, DELETE, or the bytes of
 * the first line as a method), then the URL up to the first newline, then a
 * path (NUL bytes included) for api_check_path.
 *
 * Checked: api_match either finds a route whose method is the one asked for,
 * or refuses with 404/405; a captured sandbox id is 1..SANDBOX_ID_LEN bytes
 * without '/', a captured pid is 1..SP_CHAN_REQ-1; api_check_path accepts
 * exactly the absolute paths of at most API_MAX_PATH bytes without NUL.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/api/http.h"
#include "daemon/core/sandbox.h"

static const char *const methods[] = { "GET", "POST", "PUT", "DELETE" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *nl = memchr(data + 1, '\n', size - 1);
	size_t ulen = nl ? (size_t)(nl - data - 1) : size - 1;
	char *url = malloc(ulen + 1);
	const uint8_t *p = nl ? nl + 1 : data + size;
	size_t plen = (size_t)(data + size - p);
	char *path = malloc(plen + 1);
	struct op *op = calloc(1, sizeof(*op));
	if (!url || !path || !op)
		goto out;
	memcpy(url, data + 1, ulen);
	url[ulen] = '\0';
	memcpy(path, p, plen);
	path[plen] = '\0';
	const char *method = data[0] < 4 * 60 ? methods[data[0] % 4] : "PATCH";

	const struct route *r = api_match(op, method, url);
	if (r) {
		assert(op->err.kind == ERR_NONE);
		assert(strcmp(r->method, method) == 0);
		assert(r->handler != NULL);
		if (strstr(r->pattern, ":id")) {
			size_t n = strlen(op->sbid);
			assert(n >= 1 && n <= SANDBOX_ID_LEN && !strchr(op->sbid, '/'));
		}
		if (strstr(r->pattern, ":pid"))
			assert(op->pid >= 1 && op->pid < SP_CHAN_REQ);
	} else {
		assert(http_status(op->err.kind) == 404 || http_status(op->err.kind) == 405);
		assert(op->err.msg[0] != '\0');
	}

	memset(&op->err, 0, sizeof(op->err));
	int rc = api_check_path(op, path, plen, "path");
	bool valid = plen >= 1 && plen <= API_MAX_PATH && path[0] == '/' && strlen(path) == plen;
	assert((rc == 0) == valid);
	assert(rc == 0 ? op->err.kind == ERR_NONE : http_status(op->err.kind) == 400);
	memset(&op->err, 0, sizeof(op->err));
	assert(api_check_path(op, NULL, 0, "path") < 0 && http_status(op->err.kind) == 400);
out:
	free(url);
	free(path);
	free(op);
	return 0;
}

/*
 * e2b/signed.c - E2B's signed file URLs (docs/e2b.md, "Signed URLs"): sandbox.uploadUrl(path)
 * and downloadUrl(path) are /files URLs that a plain client uses without headers. They name no
 * sandbox (E2B_SANDBOX_URL is one address for all), so the front finds it by the signature,
 * which only its access token makes: "v1_" and base64(sha256("<path>:<operation>:<user>:
 * <access token>[:<expiration>]")) without its padding, operation "read" for GET and "write"
 * for POST, user the URL's `username` ("" for none), as E2B's SDKs compute it. A signature
 * that no sandbox made, or one whose signature_expiration is past, is 401 on the request's
 * head: nothing is read or written, and an upload's body is never taken.
 */
#include "e2b/signed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "lib/codec.h"

/* E2B's signature of raw into dst (at least SIGNED_MAX bytes): 0, or -ENOMEM. */
static int sign(const char *raw, char *dst)
{
	unsigned char md[32];
	unsigned int len = 0;
	if (!EVP_Digest(raw, strlen(raw), md, &len, EVP_sha256(), NULL) || len != sizeof(md))
		return -ENOMEM;
	memcpy(dst, "v1_", 3);
	size_t n = codec_b64_encode(dst + 3, md, sizeof(md));
	while (n > 0 && dst[3 + n - 1] == '=')
		n--;
	dst[3 + n] = '\0';
	return 0;
}

/* Whether sandbox sb's access token signs the request's path, operation, user and expiration
 * (exp, or NULL) as sig. */
static bool signed_by(const json_t *sb, const char *path, const char *op, const char *user, const char *exp,
		      const char *sig)
{
	const char *token = json_string_value(json_object_get(sb, "access_token"));
	if (!token)
		return false;
	char want[SIGNED_MAX];
	char *raw = NULL;
	bool ok = (exp ? asprintf(&raw, "%s:%s:%s:%s:%s", path, op, user, token, exp)
		       : asprintf(&raw, "%s:%s:%s:%s", path, op, user, token)) >= 0 &&
		  sign(raw, want) == 0 && envd_same_secret(want, sig);
	free(raw);
	return ok;
}

bool signed_is(struct req *r)
{
	return strcmp(r->url, "/files") == 0 && gw_arg(r, "signature") != NULL;
}

bool signed_admit(struct req *r, enum MHD_Result *rc)
{
	const char *sig = gw_arg(r, "signature"), *exp = gw_arg(r, "signature_expiration");
	const char *path = gw_arg(r, "path") ?: "", *user = gw_arg(r, "username") ?: "";
	const char *op = strcmp(r->method, "GET") == 0 ? "read" : strcmp(r->method, "POST") == 0 ? "write" : NULL;
	if (!op) {
		*rc = gw_error(r, 405, "a signed URL is for GET (download) or POST (upload)");
		return false;
	}
	if (exp) {
		char *end;
		long long at = strtoll(exp, &end, 10);
		if (!*exp || *end || at < 0) {
			*rc = gw_error(r, 401, "signature_expiration must be a Unix time in seconds");
			return false;
		}
		if (at < (long long)time(NULL)) {
			*rc = gw_error(r, 401, "the signature expired");
			return false;
		}
	}
	json_t *all = NULL, *sb;
	struct client_err e = { 0 };
	if (client_request(&r->gw->up, "GET", "/v1/sandboxes", NULL, &all, &e) < 0) {
		*rc = gw_error(r, 502, "%s", e.message[0] ? e.message : "spaced did not answer");
		return false;
	}
	const char *found = NULL;
	size_t i;
	json_array_foreach(json_object_get(all, "sandboxes"), i, sb)
		if (!found && signed_by(sb, path, op, user, exp, sig))
			found = json_string_value(json_object_get(sb, "id"));
	if (found)
		snprintf(r->signed_sbid, sizeof(r->signed_sbid), "%s", found);
	json_decref(all);
	if (!found) {
		*rc = gw_error(r, 401, "the signature is not valid for this path, operation and user");
		return false;
	}
	return envd_admit(r, r->signed_sbid, rc);
}

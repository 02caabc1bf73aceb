/*
 * e2b/ports.c - a sandbox-plane request for a port of the sandbox other than envd's
 * (E2b-Sandbox-Port: 49999, the Code Interpreter SDKs' server, or any other): carried to that
 * port inside the sandbox through spaced's port proxy (docs/network.md, "The proxy"), as
 * getHost(port) traffic is. The proxy decides who may use the port (its access token, in the
 * E2b-Traffic-Access-Token header the SDKs send when the sandbox's ports are not public),
 * resumes a paused sandbox created with autoResume, and answers for a sandbox that is not there
 * exactly as for one that is, so this front adds no check of its own.
 *
 * The request (its body is whole: at most GW_MAX_BODY) goes to the proxy over HTTP/1.1 with
 * libcurl, Host "<port>-<id>.<domain>", its headers but the planes' own (E2b-Sandbox-*,
 * X-Access-Token, envd's token, which the server inside has no use for); the answer's status,
 * content type and body come back as they arrive (a code cell's output streams). A client that
 * leaves ends the request to the proxy, and so the connection to the server inside (within a
 * second when the server is silent).
 */
#include "e2b/ports.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "e2b/stream.h"

#define PORTS_CONNECT_TIMEOUT_S 10L /* making the connection to the proxy */

struct fwd {
	CURL *curl;
	struct curl_slist *headers;
	struct curl_slist *connect_to; /* curl keeps it by reference, as the headers */
	char *url;
	char *body;
	size_t len;
	struct gw_stream *s;
	bool headed;
	bool bad;   /* a header could not be kept */
	char sbid[16];
};

static void fwd_free(void *arg)
{
	struct fwd *f = arg;
	curl_slist_free_all(f->headers);
	curl_slist_free_all(f->connect_to);
	if (f->curl)
		curl_easy_cleanup(f->curl);
	free(f->url);
	free(f->body);
	free(f);
}

/* Gives the answer's head once curl has read the final one (not a 1xx). */
static void head(struct fwd *f)
{
	long code = 0;
	struct curl_header *h = NULL;
	if (f->headed || curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code < 200)
		return;
	f->headed = true;
	bool typed = curl_easy_header(f->curl, "Content-Type", 0, CURLH_HEADER, -1, &h) == CURLHE_OK;
	gw_stream_head(f->s, (unsigned)code, typed ? h->value : "application/octet-stream");
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	if (n * size == 2 && p[0] == '\r' && p[1] == '\n') /* the end of a head */
		head(arg);
	return size * n;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct fwd *f = arg;
	head(f);
	return gw_stream_write(f->s, p, size * n) < 0 ? 0 : size * n; /* 0: the client left, stop */
}

/* Asked at least once a second by curl: a client that left ends the transfer. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	struct fwd *f = arg;
	return gw_stream_gone(f->s) ? 1 : 0;
}

static void forward(struct gw_stream *s, void *arg)
{
	struct fwd *f = arg;
	f->s = s;
	CURLcode rc = curl_easy_perform(f->curl);
	if (f->headed) {
		if (rc != CURLE_OK)
			gw_stream_fail(s); /* the body broke off: the client's read fails too */
		return;
	}
	/* nothing came back: the proxy cannot be reached, as a sandbox that is gone */
	char msg[400];
	snprintf(msg, sizeof(msg), "the sandbox's port cannot be reached: %s", curl_easy_strerror(rc));
	json_t *body = json_pack("{s:i, s:s, s:s}", "code", 502, "message", msg, "sandboxId", f->sbid);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	gw_stream_head(s, 502, "application/json");
	if (text)
		gw_stream_write(s, text, strlen(text));
	free(text);
}

/* Headers that are the connection's, the front's or the sandbox plane's, never passed on. */
static bool kept(const char *name)
{
	static const char *const dropped[] = { "Host", "Connection", "Content-Length", "Transfer-Encoding",
					       "Keep-Alive", "Expect", "Upgrade", "TE", "Trailer",
					       "Proxy-Connection", "E2b-Sandbox-Id", "E2b-Sandbox-Port",
					       "X-Access-Token", NULL };
	for (const char *const *d = dropped; *d; d++)
		if (strcasecmp(name, *d) == 0)
			return false;
	return true;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
	(void)kind;
	struct fwd *f = cls;
	if (!kept(name))
		return MHD_YES;
	char *line = NULL;
	struct curl_slist *l = NULL;
	if (asprintf(&line, "%s: %s", name, value ? value : "") >= 0)
		l = curl_slist_append(f->headers, line);
	free(line);
	if (l)
		f->headers = l;
	f->bad |= !l;
	return l ? MHD_YES : MHD_NO;
}

struct query {
	CURL *curl;
	struct buf out;
	bool bad;
};

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
	(void)kind;
	struct query *q = cls;
	char *k = curl_easy_escape(q->curl, name, 0), *v = value ? curl_easy_escape(q->curl, value, 0) : NULL;
	q->bad |= !k || (value && !v) || buf_put(&q->out, q->out.len ? "&" : "?", 1) < 0 ||
		  buf_put(&q->out, k, strlen(k)) < 0 || (v && (buf_put(&q->out, "=", 1) < 0 ||
							     buf_put(&q->out, v, strlen(v)) < 0));
	curl_free(k);
	curl_free(v);
	return q->bad ? MHD_NO : MHD_YES;
}

/* The request's path, which libmicrohttpd hands over decoded, percent-encoded again into out
 * (a path's own characters kept, every other byte as %XX): "/a%3Fb" stays a path, not "/a?b". */
static int encode_path(const char *path, struct buf *out)
{
	static const char keep[] = "-._~/!$&'()*+,;=:@";
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		char esc[4];
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     strchr(keep, *p);
		snprintf(esc, sizeof(esc), "%%%02X", *p);
		if (buf_put(out, plain ? (const char *)p : esc, plain ? 1 : 3) < 0)
			return -ENOMEM;
	}
	return 0;
}

bool ports_other(struct req *r)
{
	const char *port = gw_header(r, "E2b-Sandbox-Port");
	return port && strcmp(port, GW_ENVD_PORT) != 0;
}

/* The request to the proxy for r, or NULL with *why said. */
static struct fwd *prepare(struct req *r, const char *sbid, long port, const char **why)
{
	struct fwd *f = calloc(1, sizeof(*f));
	struct query q = { 0 };
	struct buf path = { 0 };
	char connect_to[300];
	*why = "out of memory";
	if (!f || !(f->curl = curl_easy_init()))
		goto fail;
	q.curl = f->curl;
	snprintf(f->sbid, sizeof(f->sbid), "%s", sbid);
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &q);
	if (q.bad || buf_put(&q.out, "", 1) < 0 || encode_path(r->url, &path) < 0 || buf_put(&path, "", 1) < 0 ||
	    asprintf(&f->url, "http://%ld-%s.%s%s%s", port, sbid, r->gw->domain, (char *)path.data,
		     (char *)q.out.data) < 0) {
		f->url = NULL;
		goto fail;
	}
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header, f);
	struct curl_slist *expect = f->bad ? NULL : curl_slist_append(f->headers, "Expect:");
	if (!expect)
		goto fail;
	f->headers = expect;
	if (r->body.len && !(f->body = malloc(r->body.len)))
		goto fail;
	if (r->body.len)
		memcpy(f->body, r->body.data, r->body.len);
	f->len = r->body.len;
	/* whatever the host name, the connection goes to the proxy's address */
	snprintf(connect_to, sizeof(connect_to), "::%s", r->gw->proxy);
	if (!(f->connect_to = curl_slist_append(NULL, connect_to)))
		goto fail;
	CURL *c = f->curl;
	curl_easy_setopt(c, CURLOPT_URL, f->url);
	curl_easy_setopt(c, CURLOPT_CONNECT_TO, f->connect_to);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, f->headers);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, PORTS_CONNECT_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, f);
	if (f->len || strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0 ||
	    strcmp(r->method, "PATCH") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, f->body ? f->body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)f->len);
	} else if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	}
	buf_free(&q.out);
	buf_free(&path);
	return f;
fail:
	buf_free(&q.out);
	buf_free(&path);
	if (f)
		fwd_free(f);
	return NULL;
}

enum MHD_Result ports_handle(struct req *r, const char *sbid)
{
	const char *p = gw_header(r, "E2b-Sandbox-Port");
	char *end;
	long port = strtol(p, &end, 10);
	const char *why = NULL;
	if (*end || port < 1 || port > 65535)
		why = "E2b-Sandbox-Port is not a TCP port";
	else if (strlen(sbid) == 0 || strlen(sbid) > 12 || strspn(sbid, "0123456789abcdef") != strlen(sbid))
		why = "sandbox is not running";
	else if (!r->gw->proxy[0] || !r->gw->domain[0])
		why = "spaced runs no port proxy (--proxy-listen): only the sandbox's own port (49983) is served";
	struct fwd *f = why ? NULL : prepare(r, sbid, port, &why);
	if (!f)
		return gw_json(r, 502, json_pack("{s:i, s:s, s:s}", "code", 502, "message", why, "sandboxId", sbid));
	return gw_stream_start_head(r, forward, f, fwd_free);
}

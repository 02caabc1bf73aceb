/*
 * lib/client/client.c - the HTTP client of the spaced API: every byte between spaced and
 * `space`, space-build or space-e2b goes through here.
 *
 * One curl easy handle per request, so a struct client can be shared by the
 * stdin-forwarding thread and the main thread. Plain requests use
 * curl_easy_perform; streams run their own multi loop so that a signal
 * self-pipe can wake them (the caller's tick then forwards the signal with a
 * separate request - never from a signal handler). Replies that are JSON are
 * buffered up to CLIENT_MAX_REPLY; file bodies and NDJSON streams are not
 * buffered beyond one event. Every failure ends up in a struct client_err:
 * the API's {"error": {"code", "message"}}, "unreachable" when the connect
 * itself failed, or a transport message. The only header looked at is
 * Space-Resumed, and only for c->on_resumed.
 */
#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/buf.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "dev"
#endif

/* One request in flight, with everything that must be freed after it. */
struct xfer {
	struct client *c;
	const char *path;  /* the caller's, for c->on_resumed */
	CURL *h;
	struct curl_slist *hdrs;
	struct buf reply;  /* JSON reply, or the body of an error answer */
	int status_known;  /* the write callbacks looked at the status */
	int ok;            /* ... and it was 2xx */
	int fd;            /* upload source / download target */
	int fd_errno;      /* a read/write of fd failed with this */
	int cancelled;     /* c->cancel aborted the transfer */
	long long count;   /* bytes written to fd */
	char errbuf[CURL_ERROR_SIZE];
};

struct stream_ctx {
	struct xfer *x;
	const struct client_stream_ops *ops;
	struct client_err *err;
	struct buf line;
	int stop;   /* the callback said it has all it needs */
	int opened; /* ops->opened was called */
	int cb_err; /* negative: the callback or the parser aborted */
};

__attribute__((format(printf, 5, 6)))
static void err_set(struct client_err *err, enum client_err_kind kind, int status, const char *code,
		    const char *fmt, ...)
{
	va_list ap;

	err->kind = kind;
	err->status = status;
	err->os_errno = 0;
	snprintf(err->code, sizeof(err->code), "%s", code ? code : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

/* Appends to b unless that makes it hold more than max bytes. */
static int buf_put_max(struct buf *b, const void *p, size_t n, size_t max)
{
	if (buf_avail(b) > max || n > max - buf_avail(b))
		return -E2BIG;
	return buf_put(b, p, n);
}

int client_init(struct client *c, const char *host, const char *token, const char *ca,
		struct client_err *err)
{
	const char *sock = NULL, *rest = NULL;

	memset(c, 0, sizeof(*c));
	if (!host || !*host)
		host = CLIENT_DEFAULT_HOST;
	if (!strncmp(host, "unix://", 7) || host[0] == '/')
		sock = host[0] == '/' ? host : host + 7;
	else if (!strncmp(host, "http://", 7) || !strncmp(host, "https://", 8) || !strncmp(host, "tcp://", 6))
		rest = strstr(host, "://") + 3;
	if (sock ? sock[0] != '/' || !sock[1] : !rest || !rest[0] || rest[0] == '/') {
		err_set(err, CLIENT_ERR_LOCAL, 0, "",
			"SPACE_HOST '%s': expected unix:///PATH, http://HOST:PORT or https://HOST:PORT", host);
		return -EINVAL;
	}
	bool https = !strncmp(host, "https://", 8);
	if (ca && *ca && !sock && !https) {
		err_set(err, CLIENT_ERR_LOCAL, 0, "",
			"SPACE_CA is set but SPACE_HOST '%s' is not https://: refusing to talk plain HTTP", host);
		return -EINVAL;
	}
	if (ca && *ca && https && access(ca, R_OK) < 0) {
		int e = errno;
		err_set(err, CLIENT_ERR_LOCAL, 0, "", "SPACE_CA '%s': %s", ca, strerror(e));
		err->os_errno = e;
		return -EINVAL;
	}
	c->host = strdup(host);
	if (ca && *ca && https)
		c->ca_file = strdup(ca);
	if (sock) {
		c->socket_path = strdup(sock);
		c->base_url = strdup("http://localhost");
	} else {
		int n = (int)strlen(rest);
		while (n > 0 && rest[n - 1] == '/')
			n--;
		if (asprintf(&c->base_url, "%s://%.*s", https ? "https" : "http", n, rest) < 0)
			c->base_url = NULL;
	}
	if (token && *token && asprintf(&c->auth, "Authorization: Bearer %s", token) < 0)
		c->auth = NULL;
	if (!c->host || !c->base_url || (sock && !c->socket_path) || (token && *token && !c->auth) ||
	    (ca && *ca && https && !c->ca_file)) {
		client_fini(c);
		err_set(err, CLIENT_ERR_LOCAL, 0, "", "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void client_fini(struct client *c)
{
	free(c->host);
	free(c->base_url);
	free(c->socket_path);
	free(c->auth);
	free(c->ca_file);
	memset(c, 0, sizeof(*c));
}

char *client_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	if (!e)
		return NULL;
	char *copy = strdup(e);
	curl_free(e);
	return copy;
}

/* Looks at the status once, from inside a write callback. */
static int xfer_ok(struct xfer *x)
{
	if (!x->status_known) {
		long status = 0;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
		x->ok = status >= 200 && status < 300;
		x->status_known = 1;
	}
	return x->ok;
}

static size_t on_reply(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	return buf_put_max(&x->reply, p, size * n, CLIENT_MAX_REPLY) ? 0 : size * n;
}

/* Tells c->on_resumed about a "Space-Resumed: true" header. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	static const char name[] = "space-resumed:";
	struct xfer *x = arg;
	size_t len = size * n, i = sizeof(name) - 1;

	if (len < i || strncasecmp(p, name, i))
		return len;
	while (i < len && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (len - i >= 4 && !strncasecmp(p + i, "true", 4))
		x->c->on_resumed(x->path);
	return len;
}

static int xfer_setup(struct xfer *x, struct client *c, const char *method, const char *path,
		      const char *content_type, struct client_err *err)
{
	char *url = NULL;

	memset(x, 0, sizeof(*x));
	x->c = c;
	x->path = path;
	x->fd = -1;
	x->h = curl_easy_init();
	if (!x->h || asprintf(&url, "%s%s", c->base_url, path) < 0)
		goto nomem;
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	free(url);
	if (c->socket_path)
		curl_easy_setopt(x->h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
	/* https: spaced's certificate and name are always verified (libcurl's defaults, said) */
	curl_easy_setopt(x->h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(x->h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file)
		curl_easy_setopt(x->h, CURLOPT_CAINFO, c->ca_file);
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT, CLIENT_CONNECT_TIMEOUT_S);
	curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->h, CURLOPT_USERAGENT, "space/" SPACE_VERSION);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	if (c->on_resumed) {
		curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	}
	if (strcmp(method, "GET"))
		curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, method);
	if (c->auth && !(x->hdrs = curl_slist_append(x->hdrs, c->auth)))
		goto nomem;
	if (content_type) {
		char h[128];
		snprintf(h, sizeof(h), "Content-Type: %s", content_type);
		struct curl_slist *l = curl_slist_append(x->hdrs, h);
		if (!l)
			goto nomem;
		x->hdrs = l;
	}
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
	return 0;
nomem:
	err_set(err, CLIENT_ERR_LOCAL, 0, "", "out of memory");
	return -ENOMEM;
}

static void xfer_cleanup(struct xfer *x)
{
	if (x->h)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->hdrs);
	buf_free(&x->reply);
	memset(x, 0, sizeof(*x));
}

/* Turns a failed transfer into err. */
static int xfer_curl_error(struct xfer *x, CURLcode rc, struct client_err *err)
{
	if (x->cancelled)
		return -ECANCELED;

	long oserr = 0;
	const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);

	curl_easy_getinfo(x->h, CURLINFO_OS_ERRNO, &oserr);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	    rc == CURLE_OPERATION_TIMEDOUT) {
		double connected = 0;
		curl_easy_getinfo(x->h, CURLINFO_CONNECT_TIME, &connected);
		if (rc != CURLE_OPERATION_TIMEDOUT || connected == 0) {
			err_set(err, CLIENT_ERR_UNREACHABLE, 0, "", "%s",
				oserr ? strerror((int)oserr) : why);
			err->os_errno = (int)oserr;
			return -ECONNREFUSED;
		}
	}
	if (x->fd_errno) {
		err_set(err, CLIENT_ERR_LOCAL, 0, "", "%s", strerror(x->fd_errno));
		err->os_errno = x->fd_errno;
		return -x->fd_errno;
	}
	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
		err_set(err, CLIENT_ERR_TRANSPORT, 0, "", "cannot verify the certificate of spaced at %s: %s (%s)",
			x->c->host, why, x->c->ca_file ? "is SPACE_CA the CA that signed it?"
						       : "set SPACE_CA to the CA bundle that signed it");
		return -EIO;
	}
	if (rc == CURLE_SSL_CONNECT_ERROR) {
		err_set(err, CLIENT_ERR_TRANSPORT, 0, "", "TLS with spaced at %s failed: %s (does it listen with --tls-cert?)",
			x->c->host, why);
		return -EIO;
	}
	if (rc == CURLE_OUT_OF_MEMORY) {
		err_set(err, CLIENT_ERR_LOCAL, 0, "", "out of memory");
		return -ENOMEM;
	}
	if (rc == CURLE_WRITE_ERROR && buf_avail(&x->reply) >= CLIENT_MAX_REPLY - 65536) {
		err_set(err, CLIENT_ERR_TRANSPORT, 0, "", "reply from spaced at %s is over %u bytes",
			x->c->host, CLIENT_MAX_REPLY);
		return -EIO;
	}
	err_set(err, CLIENT_ERR_TRANSPORT, 0, "", "talking to spaced at %s failed: %s", x->c->host, why);
	return -EIO;
}

/* Turns a non-2xx answer, whose body is in x->reply, into err. */
static int xfer_api_error(struct xfer *x, long status, struct client_err *err)
{
	json_t *j = buf_avail(&x->reply) ?
		json_loadb((const char *)buf_head(&x->reply), buf_avail(&x->reply), 0, NULL) : NULL;
	json_t *e = json_object_get(j, "error");
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));

	if (code && msg)
		err_set(err, CLIENT_ERR_API, (int)status, code, "%s", msg);
	else
		err_set(err, CLIENT_ERR_API, (int)status, "", "unexpected answer from spaced: HTTP %ld", status);
	json_decref(j);
	return -EREMOTEIO;
}

/* After the transfer: 0 for 2xx, else err filled. */
static int xfer_result(struct xfer *x, CURLcode rc, struct client_err *err)
{
	long status = 0;

	if (rc != CURLE_OK)
		return xfer_curl_error(x, rc, err);
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300)
		return xfer_api_error(x, status, err);
	return 0;
}

static int xfer_json_reply(struct xfer *x, json_t **reply, struct client_err *err)
{
	if (!reply)
		return 0;
	*reply = NULL;
	if (buf_avail(&x->reply) == 0)
		return 0;
	json_error_t je;
	*reply = json_loadb((const char *)buf_head(&x->reply), buf_avail(&x->reply), 0, &je);
	if (!*reply) {
		err_set(err, CLIENT_ERR_TRANSPORT, 0, "", "malformed JSON from spaced at %s: %s",
			x->c->host, je.text);
		return -EIO;
	}
	return 0;
}

/* One request with an optional body of len bytes; the reply parsed as JSON. */
static int request(struct client *c, const char *method, const char *path, const char *type,
		   const void *data, size_t len, json_t **reply, struct client_err *err)
{
	struct xfer x;
	int r;

	if (reply)
		*reply = NULL;
	r = xfer_setup(&x, c, method, path, data ? type : NULL, err);
	if (r)
		goto out;
	if (data) {
		curl_easy_setopt(x.h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(x.h, CURLOPT_POSTFIELDS, data);
	}
	r = xfer_result(&x, curl_easy_perform(x.h), err);
	if (!r)
		r = xfer_json_reply(&x, reply, err);
out:
	xfer_cleanup(&x);
	return r;
}

int client_request_raw(struct client *c, const char *method, const char *path,
		       const void *data, size_t len, json_t **reply, struct client_err *err)
{
	return request(c, method, path, "application/octet-stream", data, len, reply, err);
}

int client_request(struct client *c, const char *method, const char *path, json_t *body,
		   json_t **reply, struct client_err *err)
{
	char *text = NULL;
	int r;

	if (body && !(text = json_dumps(body, JSON_COMPACT))) {
		err_set(err, CLIENT_ERR_LOCAL, 0, "", "out of memory");
		return -ENOMEM;
	}
	r = request(c, method, path, "application/json", text, text ? strlen(text) : 0, reply, err);
	free(text);
	return r;
}

/* Hands one complete line (without its newline) to the event callback. */
static int stream_line(struct stream_ctx *s, const char *p, size_t n)
{
	json_error_t je;

	while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (n == 0)
		return 0;
	json_t *ev = json_loadb(p, n, 0, &je);
	if (!json_is_object(ev)) {
		json_decref(ev);
		err_set(s->err, CLIENT_ERR_TRANSPORT, 0, "", "malformed event from spaced at %s: %s",
			s->x->c->host, ev ? "not an object" : je.text);
		s->cb_err = -EPROTO;
		return -1;
	}
	int r = s->ops->event(ev, s->ops->arg);
	json_decref(ev);
	if (r < 0) {
		s->cb_err = r;
		return -1;
	}
	if (r > 0) {
		s->stop = 1;
		return -1;
	}
	return 0;
}

/* Calls ops->opened once the answer is known to be 2xx, before any event; its result, or 0. */
static int stream_opened(struct stream_ctx *s)
{
	long status = 0;
	if (!s->ops->opened || s->opened || curl_easy_getinfo(s->x->h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
	    status < 200 || status >= 300)
		return 0;
	s->opened = 1;
	return s->ops->opened(s->ops->arg);
}

static size_t on_stream(char *p, size_t size, size_t n, void *arg)
{
	struct stream_ctx *s = arg;
	size_t len = size * n;
	const char *nl;

	if (!xfer_ok(s->x))
		return on_reply(p, size, n, s->x);
	if (s->stop || s->cb_err)
		return 0;
	int r = stream_opened(s);
	if (r < 0) {
		s->cb_err = r;
		return 0;
	}
	if (buf_put_max(&s->line, p, len, CLIENT_MAX_EVENT)) {
		err_set(s->err, CLIENT_ERR_TRANSPORT, 0, "", "an event from spaced is over %u bytes",
			CLIENT_MAX_EVENT);
		s->cb_err = -EPROTO;
		return 0;
	}
	while ((nl = memchr(buf_head(&s->line), '\n', buf_avail(&s->line)))) {
		size_t l = (size_t)(nl - (const char *)buf_head(&s->line));
		if (stream_line(s, (const char *)buf_head(&s->line), l))
			return 0;
		buf_consume(&s->line, l + 1);
	}
	return len;
}

/* Runs s's transfer to completion in a multi loop that ops->wake_fd can wake up. */
static CURLcode stream_loop(struct stream_ctx *s, int *tick_err)
{
	struct xfer *x = s->x;
	const struct client_stream_ops *ops = s->ops;
	CURLcode rc = CURLE_OK;
	CURLM *m = curl_multi_init();
	int running = 1;

	if (!m)
		return CURLE_OUT_OF_MEMORY;
	if (curl_multi_add_handle(m, x->h) != CURLM_OK) {
		curl_multi_cleanup(m);
		return CURLE_OUT_OF_MEMORY;
	}
	for (;;) {
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
		if ((*tick_err = stream_opened(s)) < 0)
			break;
		if (!running)
			break;
		struct curl_waitfd wfd = { .fd = ops->wake_fd, .events = CURL_WAIT_POLLIN };
		if (curl_multi_poll(m, &wfd, ops->wake_fd >= 0 ? 1 : 0, 1000, NULL) != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
		if (ops->tick && (*tick_err = ops->tick(ops->arg)) < 0)
			break;
	}
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == x->h)
			rc = msg->data.result;
	curl_multi_remove_handle(m, x->h);
	curl_multi_cleanup(m);
	return rc;
}

static size_t on_upload_read(char *p, size_t size, size_t n, void *arg);

/* Runs the prepared transfer x as a stream of events to ops. */
static int stream_run(struct xfer *x, const struct client_stream_ops *ops, struct client_err *err)
{
	struct stream_ctx s = { .ops = ops, .err = err, .x = x };
	int r, tick_err = 0;

	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, &s);
	CURLcode rc = stream_loop(&s, &tick_err);
	if (tick_err < 0)
		r = tick_err;
	else if (s.cb_err)
		r = s.cb_err;
	else if (s.stop)
		r = 0;
	else if (!(r = xfer_result(x, rc, err)) && buf_avail(&s.line) &&
		 stream_line(&s, (const char *)buf_head(&s.line), buf_avail(&s.line)))
		r = s.cb_err;
	buf_free(&s.line);
	return r;
}

int client_stream(struct client *c, const char *method, const char *path, json_t *body,
		  const struct client_stream_ops *ops, struct client_err *err)
{
	struct xfer x;
	char *text = NULL;
	int r = xfer_setup(&x, c, method, path, body ? "application/json" : NULL, err);

	if (!r && body && !(text = json_dumps(body, JSON_COMPACT))) {
		err_set(err, CLIENT_ERR_LOCAL, 0, "", "out of memory");
		r = -ENOMEM;
	}
	if (!r && text) {
		curl_easy_setopt(x.h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
		curl_easy_setopt(x.h, CURLOPT_POSTFIELDS, text);
	}
	if (!r)
		r = stream_run(&x, ops, err);
	xfer_cleanup(&x);
	free(text);
	return r;
}

int client_stream_upload(struct client *c, const char *method, const char *path, const char *content_type, int fd,
			 const struct client_stream_ops *ops, struct client_err *err)
{
	struct xfer x;
	int r = xfer_setup(&x, c, method, path, content_type, err);

	if (!r) {
		x.fd = fd;
		curl_easy_setopt(x.h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(x.h, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(x.h, CURLOPT_READFUNCTION, on_upload_read);
		curl_easy_setopt(x.h, CURLOPT_READDATA, &x);
		curl_easy_setopt(x.h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)-1);
		r = stream_run(&x, ops, err);
		if (r == -EIO && x.fd_errno)
			err_set(err, CLIENT_ERR_LOCAL, 0, "", "cannot read what is sent: %s", strerror(x.fd_errno));
	}
	xfer_cleanup(&x);
	return r;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = arg;

	if (x->c->progress) {
		if (ultotal > 0 || ulnow > 0)
			x->c->progress(ulnow, ultotal > 0 ? ultotal : -1);
		else
			x->c->progress(dlnow, dltotal > 0 ? dltotal : -1);
	}
	if (x->c->cancel && x->c->cancel())
		x->cancelled = 1;
	return x->cancelled;
}

/* Lets c->cancel abort a long transfer, and c->progress follow it. */
static void xfer_cancellable(struct xfer *x)
{
	if (!x->c->cancel && !x->c->progress)
		return;
	curl_easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(x->h, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
}

static size_t on_upload_read(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;

	for (;;) {
		ssize_t r = read(x->fd, p, size * n);
		if (r >= 0)
			return (size_t)r;
		if (errno == EINTR && x->c->cancel && x->c->cancel()) {
			x->cancelled = 1;
			return CURL_READFUNC_ABORT;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			struct pollfd pfd = { .fd = x->fd, .events = POLLIN };
			poll(&pfd, 1, -1);
			continue;
		}
		x->fd_errno = errno;
		return CURL_READFUNC_ABORT;
	}
}

int client_upload(struct client *c, const char *path, int fd, long long size,
		  json_t **reply, struct client_err *err)
{
	return client_send_file(c, "PUT", path, fd, size, reply, err);
}

int client_send_file(struct client *c, const char *method, const char *path, int fd, long long size,
		     json_t **reply, struct client_err *err)
{
	struct xfer x;
	int r;

	if (reply)
		*reply = NULL;
	r = xfer_setup(&x, c, method, path, "application/octet-stream", err);
	if (r)
		goto out;
	x.fd = fd;
	curl_easy_setopt(x.h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(x.h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(x.h, CURLOPT_READFUNCTION, on_upload_read);
	curl_easy_setopt(x.h, CURLOPT_READDATA, &x);
	curl_easy_setopt(x.h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
	xfer_cancellable(&x);
	r = xfer_result(&x, curl_easy_perform(x.h), err);
	if (!r)
		r = xfer_json_reply(&x, reply, err);
out:
	xfer_cleanup(&x);
	return r;
}

static size_t on_download(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n, done = 0;

	if (!xfer_ok(x))
		return on_reply(p, size, n, x);
	while (done < len) {
		ssize_t w = write(x->fd, p + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = x->fd, .events = POLLOUT };
			poll(&pfd, 1, -1);
			continue;
		}
		if (w < 0) {
			x->fd_errno = errno;
			return 0;
		}
		done += (size_t)w;
	}
	x->count += (long long)len;
	return len;
}

int client_download(struct client *c, const char *path, int fd, long long *written,
		    struct client_err *err)
{
	struct xfer x;
	int r;

	*written = 0;
	r = xfer_setup(&x, c, "GET", path, NULL, err);
	if (r)
		goto out;
	x.fd = fd;
	curl_easy_setopt(x.h, CURLOPT_WRITEFUNCTION, on_download);
	curl_easy_setopt(x.h, CURLOPT_WRITEDATA, &x);
	xfer_cancellable(&x);
	r = xfer_result(&x, curl_easy_perform(x.h), err);
	*written = x.count;
out:
	xfer_cleanup(&x);
	return r;
}

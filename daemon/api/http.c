/*
 * daemon/api/http.c - the HTTP edge: libmicrohttpd listeners, authentication,
 * request bodies, and turning an op's answer into a response.
 *
 * One MHD daemon per listener (the Unix socket, and TCP with --listen), each
 * with its own internal polling thread; suspend/resume keeps those threads
 * from ever waiting on a sandbox. The error body is made in one place
 * (respond_error) from the op's struct err. The web console's static files (ui.h) are
 * served here too, before any token is asked for.
 */
#include "daemon/api/http.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/api/ui.h"
#include "lib/host/hash.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/store/store.h"

/* Connections on one listener, and on TCP from one address: one tenant's streams and other
 * requests at once (TENANT_MAX_STREAMS + TENANT_MAX_REQUESTS) from a single client host. A
 * connection waiting on a process costs spaced a descriptor, no thread, and its memory pool
 * (HTTP_MAX_HEADER_BYTES, which libmicrohttpd fills: 64.4 KiB resident per stream measured by
 * bench/streams.py, 0.5 KiB for a connection that sent nothing), so 256 MiB at most. */
#define HTTP_MAX_CONNECTIONS 4096
#define HTTP_MAX_PER_IP (TENANT_MAX_STREAMS + TENANT_MAX_REQUESTS)
#define HTTP_IDLE_TIMEOUT_S 60    /* a connection that sends nothing for this long is closed */
#define HTTP_MAX_HEADER_BYTES (64 * 1024) /* per connection, headers included */
#define HTTP_LOG_BURST 5          /* libmicrohttpd messages logged per window; the rest are counted */
#define HTTP_LOG_WINDOW_MS 60000
#define STREAM_BLOCK (64 * 1024)

struct listener {
	struct daemon *d;
	bool tcp;
	char nul_uri;               /* its address marks a request whose URL encodes a NUL byte */
	char ui;                    /* ... and one for the web console's files (ui.h) */
	int64_t log_window_ms;      /* when the current window of libmicrohttpd messages began */
	int log_count;              /* messages in it */
};

/*
 * libmicrohttpd's messages (a connection refused over a limit, a client gone) into spaced's
 * log, at most HTTP_LOG_BURST a minute: a client hammering a limit cannot flood the log.
 * Called from the listener's thread only.
 */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct listener *l = cls;
	int64_t now = mono_ms();
	if (now - l->log_window_ms >= HTTP_LOG_WINDOW_MS) {
		if (l->log_count > HTTP_LOG_BURST)
			log_warn("http: %d more messages in the last minute were not logged", l->log_count - HTTP_LOG_BURST);
		l->log_window_ms = now;
		l->log_count = 0;
	}
	if (l->log_count++ >= HTTP_LOG_BURST)
		return;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_warn("http: %s", line);
}

/* Sees each request's URL before it is decoded: "%00" would cut the decoded path or query value
 * short, so such a request is marked and refused rather than served for a shorter path. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)conn;
	struct listener *l = cls;
	return strstr(uri, "%00") ? &l->nul_uri : NULL;
}

static struct listener unix_listener, tcp_listener;

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
			       const char *value, size_t value_size)
{
	json_t *q = cls;
	json_t *v = json_stringn_nocheck(value ? value : "", value ? value_size : 0);
	/* Repeated keys (label=...) collect into an array under "key[]". */
	char multi[256];
	snprintf(multi, sizeof(multi), "%.*s[]", (int)(key_size < 200 ? key_size : 200), key);
	json_t *arr = json_object_get(q, multi);
	if (!arr) {
		arr = json_array();
		json_object_set_new(q, multi, arr);
	}
	json_array_append(arr, v);
	json_object_set_new(q, key, v);
	return MHD_YES;
}

/* Whether token is one of spaced's; its tenant into tenant[0..n). */
static bool token_tenant(struct daemon *d, const char *token, char *tenant, size_t n)
{
	char hex[65];
	if (hash_sha256_hex(token, strlen(token), hex) < 0)
		return false;
	int rc = store_token_tenant(d->store, hex, tenant, n);
	if (rc == -ENAMETOOLONG)
		log_warn("a token was refused: its tenant's name is over %d bytes (make a new token)", TENANT_NAME_MAX);
	return rc == 1;
}

static bool authorized(struct daemon *d, struct MHD_Connection *conn, char *tenant, size_t n)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	return h && strncmp(h, "Bearer ", 7) == 0 && token_tenant(d, h + 7, tenant, n);
}

/* Counts a request of tenant, one that waits on a process (`waits`: a stream) or another;
 * false when it has as many of that kind in flight as it may. [L] */
static bool tenant_admit(struct daemon *d, const char *tenant, bool waits)
{
	struct tenant_load *t = d->loads;
	while (t && strcmp(t->tenant, tenant) != 0)
		t = t->next;
	if (!t) {
		if (!(t = calloc(1, sizeof(*t))))
			return false;
		snprintf(t->tenant, sizeof(t->tenant), "%s", tenant);
		t->next = d->loads;
		d->loads = t;
	}
	int *n = waits ? &t->streams : &t->requests;
	if (*n >= (waits ? TENANT_MAX_STREAMS : TENANT_MAX_REQUESTS))
		return false; /* a record just made holds nothing yet: the next release frees it */
	(*n)++;
	return true;
}

/* The request of tenant has ended. [L] */
static void tenant_release(struct daemon *d, const char *tenant, bool waits)
{
	for (struct tenant_load **pp = &d->loads; *pp; pp = &(*pp)->next) {
		struct tenant_load *t = *pp;
		if (strcmp(t->tenant, tenant) != 0)
			continue;
		(*(waits ? &t->streams : &t->requests))--;
		if (t->requests <= 0 && t->streams <= 0) {
			*pp = t->next;
			free(t);
		}
		return;
	}
}

static struct MHD_Response *json_response(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct MHD_Response *r;
	if (s) {
		size_t n = strlen(s);
		s[n] = '\n';
		r = MHD_create_response_from_buffer(n + 1, s, MHD_RESPMEM_MUST_FREE);
	} else {
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (s || j)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return r;
}

/* The body of every error: {"error": {"code", "message"[, "state"]}}. */
static struct MHD_Response *error_response(const struct err *e)
{
	json_t *j = json_pack("{s:{s:s, s:s}}", "error", "code", err_code(e->kind), "message", e->msg);
	if (e->state[0])
		json_object_set_new(json_object_get(j, "error"), "state", json_string(e->state));
	struct MHD_Response *r = json_response(j);
	json_decref(j);
	return r;
}

static enum MHD_Result respond_error(struct MHD_Connection *conn, const struct err *e)
{
	struct MHD_Response *r = error_response(e);
	enum MHD_Result rc = MHD_queue_response(conn, http_status(e->kind), r);
	MHD_destroy_response(r);
	return rc;
}

/* What everything /ui serves carries: its sources, and no guessing of types. */
static void ui_headers(struct MHD_Response *r)
{
	MHD_add_response_header(r, "Content-Security-Policy", UI_CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
}

/* GET (or HEAD) of a file of the web console: no token, no op, no lock. */
static enum MHD_Result respond_ui(struct daemon *d, struct MHD_Connection *conn, const char *method,
				  const char *url)
{
	struct err e = { 0 };
	struct ui_file f = { .fd = -1 };
	struct MHD_Response *r = NULL;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		err_set(&e, ERR_METHOD, EINVAL, "%s is not allowed on %s", method, url);
	else if (ui_open(d->cfg.ui_dir, url, &f, &e) == 0 && !(r = MHD_create_response_from_fd64(f.size, f.fd)))
		close(f.fd); /* a response takes the descriptor, and closes it, once it is made */
	if (!r && !e.kind)
		err_set(&e, ERR_INTERNAL, ENOMEM, "out of memory");
	if (!r) {
		r = error_response(&e);
	} else {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, f.content_type);
	}
	ui_headers(r);
	enum MHD_Result rc = MHD_queue_response(conn, http_status(e.kind), r);
	MHD_destroy_response(r);
	return rc;
}

/* Feeds an op's stream to the client, suspending while it is empty. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct op *op = cls;
	struct daemon *d = op->d;
	ssize_t n;
	daemon_lock(d);
	if (buf_avail(&op->out) > 0) {
		uint32_t credit = 0;
		n = (ssize_t)op_take(op, (uint8_t *)buf, max, &credit);
		op_return_credit(op, credit);
	} else if (op->gone) {
		n = MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (op->eof) {
		n = op->failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		op_suspend(op);
		n = 0;
	}
	daemon_unlock(d);
	return n;
}

static enum MHD_Result respond(struct op *op)
{
	struct MHD_Connection *conn = op->conn;
	if (op->err.kind)
		return respond_error(conn, &op->err);
	struct MHD_Response *r;
	if (op->responding) {
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_reader, op, NULL);
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					op->kind == OP_READ ? "application/octet-stream" : "application/x-ndjson");
		MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	} else if (op->content_type) {
		r = api_text_response(op);
	} else {
		r = json_response(op->json);
	}
	if (op->resumed)
		MHD_add_response_header(r, "Space-Resumed", "true");
	enum MHD_Result rc = MHD_queue_response(conn, op->answer == ANSWER_CREATED ? 201 : op->answer == ANSWER_EMPTY ? 204 : 200, r);
	MHD_destroy_response(r);
	return rc;
}

static void conn_suspend(void *conn)
{
	MHD_suspend_connection(conn);
}

static void conn_resume(void *conn)
{
	MHD_resume_connection(conn);
}

static int conn_fd(void *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* A request run again once its sandbox resumed or its template was built. [L] */
static void retry(struct op *op)
{
	int rc = op->route->handler(op);
	if (op->deferred)
		return; /* it waits again, for the next resume or hello */
	if (op->route->upload && rc == API_DONE && !op->err.kind && !op->done)
		op_wake(op); /* go on with the body */
	else if (rc == API_DONE)
		op_finish(op);
}

/* How the core reaches a request that came through the API. */
static const struct op_front http_front = {
	.suspend = conn_suspend,
	.resume = conn_resume,
	.fd = conn_fd,
	.retry = retry,
};

static struct op *new_op(struct listener *l, struct MHD_Connection *conn, const char *method, const char *url,
			 bool nul_uri)
{
	struct op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->d = l->d;
	op->front = &http_front;
	op->conn = conn;
	op->tcp = l->tcp;
	op->arrived_ns = api_metrics_now_ns();
	op->query = json_object();
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, add_arg, op->query);
	if (l->tcp && !authorized(l->d, conn, op->tenant, sizeof(op->tenant))) {
		err_set(&op->err, ERR_UNAUTHORIZED, EACCES, "a valid bearer token is required");
		return op;
	}
	/* the administrator acting for a tenant (the E2B front, which holds that tenant's key) */
	const char *as = l->tcp ? NULL : MHD_lookup_connection_value(conn, MHD_HEADER_KIND, SPACE_TENANT_TOKEN);
	if (as && !token_tenant(l->d, as, op->tenant, sizeof(op->tenant))) {
		err_set(&op->err, ERR_UNAUTHORIZED, EACCES, "the %s header holds no valid token", SPACE_TENANT_TOKEN);
		return op;
	}
	op->tcp = l->tcp || as;
	if (nul_uri) {
		err_set(&op->err, ERR_INVALID, EINVAL, "the URL encodes a NUL byte (%%00)");
		return op;
	}
	op->route = api_match(op, method, url);
	if (op->tcp && op->route) {
		bool waits = api_route_waits(op->route);
		daemon_lock(l->d);
		op->counted = tenant_admit(l->d, op->tenant, waits);
		daemon_unlock(l->d);
		if (!op->counted && waits)
			err_set(&op->err, ERR_TOO_MANY,
				EAGAIN, "tenant %s has %d requests waiting on processes (exec, output, wait) in flight; "
				"wait for one to end", op->tenant, TENANT_MAX_STREAMS);
		else if (!op->counted)
			err_set(&op->err, ERR_TOO_MANY, EAGAIN, "tenant %s has %d requests in flight; wait for one to end",
				op->tenant, TENANT_MAX_REQUESTS);
	}
	return op;
}

/* Bytes of op's request body: streamed to its route's upload (started by its handler), or kept
 * (at most API_MAX_BODY) for the handler, which runs once the body is whole. */
static enum MHD_Result take_body(struct op *op, const char *upload, size_t *upload_size)
{
	if (op->err.kind || op->done) {
		*upload_size = 0; /* the answer is known: the rest of the body is discarded */
		return MHD_YES;
	}
	if (op->route->upload) {
		daemon_lock(op->d);
		int rc = API_DONE;
		if (!op->started) {
			op->started = true;
			rc = op->route->handler(op);
			if (op->deferred)
				rc = API_PENDING;
		}
		if (rc == API_DONE && !op->err.kind && !op->done)
			rc = op->route->upload(op, upload, upload_size);
		if (op->err.kind || op->done)
			*upload_size = 0;
		else if (rc == API_PENDING || op->deferred)
			op_suspend(op);
		daemon_unlock(op->d);
		return MHD_YES;
	}
	if (buf_avail(&op->body) + *upload_size > API_MAX_BODY)
		err_set(&op->err, ERR_TOO_LARGE, E2BIG, "the request body is over %d bytes", API_MAX_BODY);
	else
		buf_put(&op->body, upload, *upload_size);
	*upload_size = 0;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct listener *l = cls;
	struct daemon *d = l->d;
	struct op *op = *con_cls;

	if (!op && ui_path(url)) {
		*con_cls = &l->ui;
		return MHD_YES;
	}
	if (*con_cls == &l->ui) {
		if (!*upload_size)
			return respond_ui(d, conn, method, url);
		*upload_size = 0; /* a body sent with it is not read */
		return MHD_YES;
	}
	if (!op || *con_cls == &l->nul_uri) {
		op = new_op(l, conn, method, url, op != NULL);
		if (!op)
			return MHD_NO;
		*con_cls = op;
		return MHD_YES;
	}
	daemon_lock(d);
	bool gone = op->gone;
	daemon_unlock(d);
	if (gone)
		return MHD_NO; /* its client left while it waited: end it, freeing what it held */

	if (*upload_size)
		return take_body(op, upload, upload_size);

	daemon_lock(d);
	int rc = API_DONE;
	if (!op->err.kind && !op->started) {
		op->started = true;
		rc = op->route->handler(op);
		if (op->deferred)
			rc = API_PENDING;
		if (rc == API_DONE && op->route->upload && !op->err.kind && !op->done) {
			size_t zero = 0;
			rc = op->route->upload(op, NULL, &zero);
		}
	} else if (!op->err.kind && op->route && op->route->upload && !op->done && !op->responding) {
		size_t zero = 0;
		rc = op->route->upload(op, NULL, &zero);
	} else if (!op->err.kind && !op->done && !op->responding) {
		rc = API_PENDING;
	}
	if (op->deferred)
		rc = API_PENDING;
	if (rc == API_PENDING && !op->err.kind && !op->done && !op->responding) {
		op_suspend(op);
		daemon_unlock(d);
		return MHD_YES;
	}
	daemon_unlock(d);
	return respond(op);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct listener *l = cls;
	struct op *op = *con_cls;
	*con_cls = NULL;
	if (!op || (void *)op == &l->nul_uri || (void *)op == &l->ui)
		return;
	daemon_lock(l->d);
	/* An upload or download the client abandoned: tell the agent to drop it. */
	if (op->sb && (op->kind == OP_WRITE || op->kind == OP_READ) && op->tag && !op->eof && !op->done)
		chan_send(&op->sb->chan, SP_H_ABORT, op->tag, NULL, 0, NULL, 0);
	/* A watch still linked is one its client closed: the agent frees it (and its place). */
	if (op->sb && op->kind == OP_WATCH && op->tag)
		chan_send(&op->sb->chan, SP_H_ABORT, op->tag, NULL, 0, NULL, 0);
	if (op->on_close)
		op->on_close(op);
	op_unlink(op);
	op_release_capture(op);
	if (op->counted)
		tenant_release(l->d, op->tenant, api_route_waits(op->route));
	daemon_unlock(l->d);
	api_metrics_done(op);
	op_free(op);
}

static int unix_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	/* root:space 0660 where a "space" group exists, else root-only 0660. */
	struct group *g = getgrnam("space");
	if (g && chown(path, 0, g->gr_gid) < 0)
		log_warn("cannot give %s to group space: %s", path, strerror(errno));
	chmod(path, 0660);
	return fd;
}

static int tcp_socket(const char *addr)
{
	char host[128];
	snprintf(host, sizeof(host), "%s", addr);
	char *colon = strrchr(host, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res;
	if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res) != 0)
		return -EINVAL;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return e;
	}
	freeaddrinfo(res);
	return fd;
}

/* Reads the PEM file at path, at most HTTP_TLS_MAX_PEM bytes, into a malloc'd string *out;
 * a secret one readable by others is warned of. */
static int read_pem(const char *path, const char *what, bool secret, char **out, struct err *e)
{
	int rc = 0;
	char *text = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, ERR_INVALID, errno, "%s %s: %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = err_set(e, ERR_INVALID, errno, "%s %s: %s", what, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > HTTP_TLS_MAX_PEM) {
		rc = err_set(e, ERR_INVALID, EINVAL, "%s %s: not a file of 1 to %d bytes", what, path,
			     HTTP_TLS_MAX_PEM);
		goto out;
	}
	if (!(text = malloc((size_t)st.st_size + 1))) {
		rc = err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = err_set(e, ERR_INVALID, errno, "%s %s: %s", what, path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	text[got] = '\0';
	if (secret && (st.st_mode & 077))
		log_warn("%s %s can be read by others than its owner (mode %04o)", what, path, st.st_mode & 07777);
	*out = text;
	text = NULL;
out:
	free(text);
	close(fd);
	return rc;
}

int http_tls_load(struct daemon *d, struct err *e)
{
	bool cert = d->cfg.tls_cert_path[0], key = d->cfg.tls_key_path[0];
	if (!cert && !key)
		return 0;
	if (cert != key)
		return err_set(e, ERR_INVALID, EINVAL, "%s is given without %s: TLS needs both",
			       cert ? "--tls-cert" : "--tls-key", cert ? "--tls-key" : "--tls-cert");
	if (!d->cfg.listen_addr[0])
		return err_set(e, ERR_INVALID, EINVAL,
			       "--tls-cert and --tls-key are for the TCP listener: give --listen HOST:PORT too");
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return err_set(e, ERR_INTERNAL, ENOTSUP, "this libmicrohttpd was built without TLS");
	int rc = read_pem(d->cfg.tls_cert_path, "--tls-cert", false, &d->tls_cert, e);
	if (rc == 0)
		rc = read_pem(d->cfg.tls_key_path, "--tls-key", true, &d->tls_key, e);
	if (rc == 0 && !strstr(d->tls_cert, "-----BEGIN CERTIFICATE-----"))
		rc = err_set(e, ERR_INVALID, EINVAL, "--tls-cert %s holds no PEM certificate",
			     d->cfg.tls_cert_path);
	else if (rc == 0 && strstr(d->tls_key, "ENCRYPTED PRIVATE KEY-----"))
		rc = err_set(e, ERR_INVALID, EINVAL, "--tls-key %s is encrypted: give it unencrypted",
			     d->cfg.tls_key_path);
	else if (rc == 0 && !strstr(d->tls_key, "PRIVATE KEY-----"))
		rc = err_set(e, ERR_INVALID, EINVAL, "--tls-key %s holds no PEM private key",
			     d->cfg.tls_key_path);
	return rc;
}

/* Idle connections are closed after HTTP_IDLE_TIMEOUT_S (suspended ones, which wait for a
 * sandbox, never time out); on TCP one address may hold at most HTTP_MAX_PER_IP, so idle
 * strangers cannot take every slot before a token is even checked. The TCP listener speaks
 * TLS (libmicrohttpd's own, GnuTLS) when a certificate and key were loaded. */
static struct MHD_Daemon *start_mhd(struct listener *l, int fd)
{
	bool tls = l->tcp && l->d->tls_cert;
	struct MHD_OptionItem tls_opts[] = {
		{ tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, l->d->tls_cert },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, l->d->tls_key },
		{ MHD_OPTION_END, 0, NULL },
	};
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
					MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0),
				0, NULL, NULL, on_request, l, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, l,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned)HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)HTTP_MAX_HEADER_BYTES, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)HTTP_IDLE_TIMEOUT_S, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				(unsigned)(l->tcp ? HTTP_MAX_PER_IP : 0), MHD_OPTION_URI_LOG_CALLBACK, on_uri, l,
				MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
}

int http_start(struct daemon *d)
{
	unix_listener = (struct listener){ .d = d, .tcp = false };
	int fd = unix_socket(d->cfg.socket_path);
	if (fd < 0) {
		log_error("cannot listen on %s: %s", d->cfg.socket_path, strerror(-fd));
		return fd;
	}
	d->mhd_unix = start_mhd(&unix_listener, fd);
	if (!d->mhd_unix)
		return -EIO;
	if (d->cfg.listen_addr[0]) {
		tcp_listener = (struct listener){ .d = d, .tcp = true };
		int tfd = tcp_socket(d->cfg.listen_addr);
		if (tfd < 0) {
			log_error("cannot listen on %s: %s", d->cfg.listen_addr, strerror(-tfd));
			return tfd;
		}
		d->mhd_tcp = start_mhd(&tcp_listener, tfd);
		if (!d->mhd_tcp && d->tls_cert) {
			log_error("cannot start TLS on %s: is %s a certificate and %s its key? (see above)",
				  d->cfg.listen_addr, d->cfg.tls_cert_path, d->cfg.tls_key_path);
			return -EINVAL;
		}
		if (!d->mhd_tcp)
			return -EIO;
	}
	return d->cfg.e2b_listen[0] ? e2b_start(d) : 0;
}

/* Starts space-e2b on d->e2b_fd; 0 or -errno. */
static int e2b_spawn(struct daemon *d)
{
	/* the E2B SDKs' getHost(port) is "<port>-<id>.<sandboxDomain>": with the port proxy,
	 * "<its domain>:<its port>" makes that the proxy's address of the port (net/proxy.h) */
	char domain[200] = "";
	const char *proxy_port = strrchr(d->cfg.proxy_listen, ':');
	if (proxy_port)
		snprintf(domain, sizeof(domain), "%s%s", d->cfg.proxy_domain, proxy_port);
	/* and the proxy's address, where the front carries the sandbox plane's requests for a port
	 * other than envd's (e2b/ports.h); without a proxy, the NULL ends the list before either */
	char *argv[] = { d->cfg.e2b_path, "--listen-fd", "3", "--name", d->cfg.e2b_listen, "--socket", d->cfg.socket_path,
			 domain[0] ? "--sandbox-domain" : NULL, domain, "--proxy-address", d->cfg.proxy_listen, NULL };
	pid_t pid = spawn_start_keep(argv, &d->e2b_fd, 1, STDERR_FILENO, STDERR_FILENO);
	if (pid < 0) {
		log_error("cannot start %s: %s", d->cfg.e2b_path, strerror((int)-pid));
		return (int)pid;
	}
	d->e2b_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	d->e2b_started_ms = mono_ms();
	log_info("the E2B front (pid %d) serves on %s", (int)pid, d->cfg.e2b_listen);
	return 0;
}

int e2b_start(struct daemon *d)
{
	d->e2b_pidfd = -1;
	d->e2b_fd = tcp_socket(d->cfg.e2b_listen);
	if (d->e2b_fd < 0) {
		log_error("cannot listen on %s: %s", d->cfg.e2b_listen, strerror(-d->e2b_fd));
		return d->e2b_fd;
	}
	return e2b_spawn(d);
}

void e2b_tick(struct daemon *d)
{
	if (d->e2b_pidfd < 0 || !d->cfg.e2b_listen[0])
		return;
	struct pollfd p = { .fd = d->e2b_pidfd, .events = POLLIN };
	if (poll(&p, 1, 0) != 1)
		return; /* it runs */
	/* it ended, which it does only when something went wrong: start it again, at most once
	 * every E2B_RESTART_MS, on the same socket (connections made meanwhile wait in its queue) */
	if (mono_ms() - d->e2b_started_ms < E2B_RESTART_MS)
		return;
	close(d->e2b_pidfd);
	d->e2b_pidfd = -1;
	log_warn("the E2B front ended; starting it again");
	e2b_spawn(d);
}

void http_stop(struct daemon *d)
{
	/* Suspended connections would make MHD_stop_daemon unsafe; quiesce only. */
	if (d->mhd_unix)
		MHD_quiesce_daemon(d->mhd_unix);
	if (d->mhd_tcp)
		MHD_quiesce_daemon(d->mhd_tcp);
	unlink(d->cfg.socket_path);
}

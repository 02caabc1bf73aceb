/*
 * e2b/gateway.h - space-e2b, the E2B front (docs/e2b.md): E2B's two planes, served at the root
 * of one TCP listener, turned into requests to spaced's own API on its Unix socket.
 *
 * A request with an E2b-Sandbox-Id header belongs to the sandbox plane (envd.c: health, files,
 * the Process and Filesystem services over Connect), as does a signed /files URL (signed.h,
 * whose signature names its sandbox), every other to the control plane
 * (control.c: create, list, get, kill, timeout, pause, connect; snapshots.c: fork and snapshots;
 * templates.c: template look-ups; builds.c: template builds). The control plane's
 * X-API-KEY is a space token (e2b_<rest> is read as sp_<rest>); spaced is asked with it in
 * Space-Tenant-Token, so tenants apply as they do everywhere. The sandbox plane's
 * X-Access-Token is the sandbox's own access token, handed out as envdAccessToken.
 *
 * Threads: libmicrohttpd gives each connection a thread, which may block on spaced; a stream
 * (a command's output, a download) is carried by a worker thread writing into a pipe that the
 * connection's thread reads, so a slow reader slows spaced's stream, never fills memory.
 */
#ifndef SPACE_E2B_GATEWAY_H
#define SPACE_E2B_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>
#include <microhttpd.h>

#include "lib/client/client.h"
#include "lib/buf.h"
#include "e2b/route.h"

#define GW_ENVD_VERSION "0.5.7"      /* what the SDKs are told (docs/e2b.md: their version gates) */
#define GW_ENVD_PORT "49983"         /* envd's port: the sandbox plane's own (other ports: ports.h) */
#define GW_DEFAULT_TIMEOUT_S 300     /* a sandbox's deadline when a create or connect gives none */
#define GW_MAX_BODY (1 << 20)        /* a REST or unary RPC body */
#define GW_KEEPALIVE_S 50            /* a silent command stream gets a keepalive this often */
/* Connections the front holds at once, and from one address: E2B's SDKs keep up to 200 to a
 * sandbox's plane and one per running command (each holds a thread here, and a stream worker
 * beside it); one address may hold a quarter of them, so that a few cannot take them all. An
 * authenticated connection (admit.c) is closed after GW_IDLE_S idle; a command's stream is never
 * idle that long (keepalives). One not yet authenticated is closed after GW_UNAUTH_IDLE_S idle,
 * and the front takes at most GW_MAX_UNAUTH_PER_IP of them from one address, GW_MAX_UNAUTH in
 * all. */
#define GW_MAX_CONNECTIONS 1024
#define GW_MAX_PER_IP 256
#define GW_IDLE_S 600
#define GW_MAX_UNAUTH 256
#define GW_MAX_UNAUTH_PER_IP 32
#define GW_UNAUTH_IDLE_S 10
/* libmicrohttpd's messages (a connection over a limit) logged in a minute, at most: a peer
 * hammering a limit cannot flood spaced's log. */
#define GW_LOG_BURST 5
#define GW_LOG_WINDOW_MS 60000
#define GW_THREAD_STACK (512 * 1024) /* a connection's or a stream worker's thread */

struct gw_watchers;
struct gw_builds;
struct gw_users;
struct gw_conn;

/* The connections the front holds (admit.c). */
struct gw_admit {
	pthread_mutex_t lock;
	struct gw_conn *conns;       /* [lock] every connection, newest first */
	unsigned unauth;             /* [lock] those not yet authenticated */
};

struct gw {
	struct client up;            /* spaced's Unix socket, as the administrator */
	struct gw_watchers *watchers; /* the polling watchers (watch.h) */
	struct gw_builds *builds;    /* template builds and their uploads (builds.h) */
	struct gw_users *users;      /* which sandboxes have envd's default user (users.h) */
	/* The sandboxes' "domain" (the SDKs' sandboxDomain, from which getHost(port) makes
	 * "<port>-<id>.<domain>"): spaced's port proxy as "<its domain>:<its port>", or "" (null)
	 * when spaced runs none. */
	char domain[256];
	struct gw_admit admit;
	pthread_mutex_t log_lock;    /* libmicrohttpd's messages, GW_LOG_BURST a minute (main.c) */
	int64_t log_window_ms;       /* [log_lock] when the current minute began */
	int log_count;               /* [log_lock] messages in it */
	/* The address spaced's port proxy listens on (HOST:PORT), where requests for the sandboxes'
	 * other ports go (ports.h), or "" when spaced runs none. */
	char proxy[256];
};

/* One request, the connection's own (libmicrohttpd's *req_cls). */
struct req {
	struct gw *gw;
	struct MHD_Connection *conn;
	char method[16];
	char url[ROUTE_PATH_MAX];    /* the path, cut to ROUTE_PATH_MAX - 1 bytes */
	struct buf body;
	bool too_large;
	bool answered;               /* refused on its head: its body, if any, is not read */
	bool running;                /* the sandbox of a sandbox-plane request is running (envd.c) */
	char signed_sbid[16];        /* a signed /files request's sandbox, its signature checked (signed.h) */
	void *upload;                /* a multipart upload under way (files.c) */
	void (*upload_free)(void *upload);
};

/* A header of the request, or NULL. */
const char *gw_header(struct req *r, const char *name);
/* A query argument of the request, or NULL. */
const char *gw_arg(struct req *r, const char *name);

/* Bytes of an E2B user's name, at most (spaced takes as many for files and commands). */
#define GW_USER_MAX 255
/* The E2B user a sandbox-plane request names, into dst (n bytes), or NULL for none: the
 * `username` query argument of /files, else Authorization: Basic base64("<user>:"). */
const char *gw_user(struct req *r, char *dst, size_t n);

/* Answers with body as JSON (stolen; NULL: no body). MHD_YES or MHD_NO. */
enum MHD_Result gw_json(struct req *r, unsigned status, json_t *body);
/* Answers 200 with a page of a list (page stolen) and, when more follow, their cursor next in
 * X-Next-Token (NULL: none), as E2B's paginators read it. */
enum MHD_Result gw_json_paged(struct req *r, json_t *page, const char *next);
/* Answers an E2B error: {"code": status, "message"}. */
enum MHD_Result gw_error(struct req *r, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Answers spaced's error as E2B's (status kept; 5xx other than 502/503/507 as 500). */
enum MHD_Result gw_error_from(struct req *r, const struct client_err *e);
/* Answers a unary Connect error: the code's HTTP status, {"code", "message"}. */
enum MHD_Result gw_connect_error(struct req *r, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A copy of gw->up that asks spaced as the tenant of key (an E2B key or a space token), in
 * hdr (room for the header line); NULL without a key. */
struct client *gw_as_tenant(struct gw *gw, const char *key, struct client *c, char *hdr, size_t n);

/* Milliseconds of CLOCK_MONOTONIC, for deadlines. */
int64_t gw_mono_ms(void);
/* A call's Connect-Timeout-Ms in seconds (rounded up), or 0 when absent or 0. */
long gw_timeout_s(struct req *r);

/* Answers r by the first of the n routes of table that takes it (route.h), with a (its
 * plane's context set; its parameters are filled here); a path none takes is 404 "no route". */
enum MHD_Result gw_route(struct req *r, const struct route *table, size_t n, struct route_args *a);
/* The answer to a request no route takes: 404 "no route METHOD PATH". */
enum MHD_Result gw_no_route(struct req *r);
/* A unary Connect call's message (r's body, one JSON object), or NULL with the
 * invalid_argument answer queued in *rc. */
json_t *gw_unary(struct req *r, enum MHD_Result *rc);

/* "/v1/sandboxes/<id><rest>" into dst; false when it does not fit or id is not a sandbox id. */
bool gw_sandbox_path(char *dst, size_t n, const char *id, const char *rest);

/* Connections (admit.c): admit_init before the daemon starts; admit_policy and admit_notify are
 * libmicrohttpd's accept policy and connection notifier (cls: the struct gw); admit_authenticated
 * marks r's connection as having shown a credential (idempotent). */
void admit_init(struct gw_admit *a);
enum MHD_Result admit_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void admit_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		  enum MHD_ConnectionNotificationCode code);
void admit_authenticated(struct req *r);

/* The checks of a request's head, before any of its body is read: true when it may go on
 * (and its connection is authenticated, but for the control plane's /health); false with the
 * refusal queued in *rc. Control plane: a valid X-API-KEY (asked of spaced); sandbox plane:
 * the sandbox's access token, a sandbox that is not there answered as one whose token is wrong. */
bool control_admit(struct req *r, enum MHD_Result *rc);
bool envd_admit(struct req *r, const char *sbid, enum MHD_Result *rc);
/* Whether secrets a and b (NUL-terminated) are the same, in a time that does not depend on
 * where they differ. */
bool envd_same_secret(const char *a, const char *b);

/* The control plane (control.c) and the sandbox plane (envd.c). */
enum MHD_Result control_handle(struct req *r);
/*
 * The control plane's handlers other than control.c's, routed by its table (route.h: a->c asks
 * spaced as the request's tenant, a->param[0] is the path's id).
 * getMetrics: the samples of sandbox id (metrics.c); and the newest sample of each of
 * the sandboxes in ?sandbox_ids= (comma-separated, at most GW_METRICS_IDS_MAX). */
enum MHD_Result metrics_one(struct req *r, const struct route_args *a);
enum MHD_Result metrics_many(struct req *r, const struct route_args *a);
#define GW_METRICS_IDS_MAX 100
/* Fork and snapshots (snapshots.c): sandbox.fork(), createSnapshot, listSnapshots
 * (a page of at most GW_SNAPSHOTS_PAGE_MAX, GW_SNAPSHOTS_PAGE unless ?limit= says), and
 * deleteSnapshot. A fork's deadline is its "timeout", GW_FORK_TIMEOUT_S when it gives none, as
 * E2B's API. snapshots_is_id: whether s is a snapshot's id (a create's templateID may be one). */
#define GW_FORK_TIMEOUT_S 15
#define GW_SNAPSHOTS_PAGE 100
#define GW_SNAPSHOTS_PAGE_MAX 1000
enum MHD_Result snapshots_fork(struct req *r, const struct route_args *a);
enum MHD_Result snapshots_take(struct req *r, const struct route_args *a);
enum MHD_Result snapshots_list(struct req *r, const struct route_args *a);
enum MHD_Result snapshots_delete(struct req *r, const struct route_args *a);
bool snapshots_is_id(const char *s);
/* Templates (templates.c): aliasExists (GET /templates/aliases/{alias}) and getTags
 * (GET /templates/{id}/tags) from spaced's templates and the tenant's snapshots, leaving out
 * those another key built through E2B; assigning or removing tags is refused (403: spaced gives
 * a template no second name). */
#define GW_TEMPLATE_ID_MAX 256 /* bytes of a template's, alias's or snapshot's id in a path, with its NUL */
enum MHD_Result templates_alias(struct req *r, const struct route_args *a);
enum MHD_Result templates_tags(struct req *r, const struct route_args *a);
enum MHD_Result envd_handle(struct req *r, const char *sbid);
/* A chunk of a sandbox-plane request's body, before it is whole: true when it was taken (a
 * streamed upload), false when it is to be kept in r->body. */
bool envd_upload(struct req *r, const char *sbid, const char *data, size_t n);

#endif

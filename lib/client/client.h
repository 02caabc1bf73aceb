/*
 * lib/client/client.h - the HTTP client for the spaced API (docs/api.md), of the three
 * programs that speak to spaced: the CLI, space-build and space-e2b. It needs libcurl, so it
 * is an archive of its own (libspace-client.a) that the agent, which links lib/ statically,
 * never links.
 *
 * Wraps libcurl: where the daemon is (SPACE_HOST), who we are (SPACE_TOKEN) and
 * whom we trust to have signed its certificate over https (SPACE_CA),
 * JSON requests, NDJSON streams delivered one event at a time, and file
 * uploads/downloads streamed through a file descriptor (a file is never held
 * whole in memory). Nothing here prints: failures are described in a
 * caller-owned struct client_err and the caller reports them once.
 *
 * Call curl_global_init() before client_init(). A struct client is read-only
 * after client_init(), so several threads may issue requests through it at
 * once (each request uses its own curl handle).
 */
#ifndef SPACE_LIB_CLIENT_H
#define SPACE_LIB_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#define CLIENT_DEFAULT_HOST "unix:///run/space/space.sock"
#define CLIENT_MAX_REPLY (16u << 20)     /* largest JSON reply we buffer */
#define CLIENT_MAX_EVENT (16u << 20)     /* largest NDJSON line we accept */
#define CLIENT_CONNECT_TIMEOUT_S 10L

enum client_err_kind {
	CLIENT_ERR_NONE = 0,
	CLIENT_ERR_API,         /* the daemon answered with an error (status, code, message) */
	CLIENT_ERR_UNREACHABLE, /* could not connect: daemon not running, socket missing */
	CLIENT_ERR_TRANSPORT,   /* connected, then the exchange failed or made no sense */
	CLIENT_ERR_LOCAL,       /* a local failure: file, memory */
};

struct client_err {
	enum client_err_kind kind;
	int status;         /* HTTP status for CLIENT_ERR_API; 0 for an error event in a stream */
	int os_errno;       /* for CLIENT_ERR_UNREACHABLE / CLIENT_ERR_LOCAL, when known */
	char code[64];      /* API error code, e.g. "not_found"; may be empty */
	char message[512];  /* for a person, without trailing newline */
};

/* Asked during uploads and downloads (on every wake-up, at least once a second). */
typedef int (*client_cancel_fn)(void);
/*
 * Told how far an upload or download has come, about once a second and more often while bytes
 * flow (libcurl's progress calls): done bytes of total (-1 when not known yet). The answer of an
 * error counts too. It must not make requests.
 */
typedef void (*client_progress_fn)(long long done, long long total);
/*
 * Told, as soon as the answer's headers arrive and in the thread of the
 * request, that spaced resumed a paused or suspended sandbox to serve the
 * request to path (the answer carries "Space-Resumed: true").
 */
typedef void (*client_resumed_fn)(const char *path);

struct client {
	char *host;        /* SPACE_HOST as given, for messages */
	char *base_url;    /* "http://localhost" for a Unix socket, else "http://HOST:PORT" */
	char *socket_path; /* NULL for TCP */
	char *auth;        /* "Authorization: Bearer ..." or NULL */
	char *ca_file;     /* SPACE_CA: the CA bundle that verifies https, NULL: the system's */
	/* Optional, set before any transfer: nonzero aborts an upload or download with -ECANCELED. */
	client_cancel_fn cancel;
	/* Optional, set before any transfer: see client_progress_fn. */
	client_progress_fn progress;
	/* Optional, set before any request: see client_resumed_fn. */
	client_resumed_fn on_resumed;
};

/*
 * Per-event callback of a stream. Returns 0 to go on, 1 to stop reading
 * (the stream is complete as far as the caller is concerned), or a negative
 * errno to abort (the caller has filled whatever it reports).
 */
typedef int (*client_event_fn)(json_t *event, void *arg);
/*
 * Called after every wake-up of a stream: data, wake_fd readable, or about
 * once a second. Returns 0 to go on or a negative errno to abort the stream.
 * It may issue other requests through the same struct client.
 */
typedef int (*client_tick_fn)(void *arg);

struct client_stream_ops {
	client_event_fn event;
	client_tick_fn tick; /* may be NULL */
	/* may be NULL: called once, before any event, when spaced's answer is 2xx (its status line
	 * arrived: spaced did what opening the stream does, e.g. attach its reader); returns as tick */
	client_tick_fn opened;
	int wake_fd;         /* extra fd that wakes the stream loop (e.g. a signal self-pipe), or -1 */
	void *arg;
};

/*
 * Parses host (NULL: CLIENT_DEFAULT_HOST) - unix:///PATH, http://HOST:PORT,
 * https://HOST:PORT or tcp://HOST:PORT - and keeps token (NULL or empty: no
 * Authorization header) and ca (NULL or empty: the system's CA bundle). https
 * always verifies spaced's certificate and name; a ca with a plain http host is
 * refused rather than ignored. Returns 0, -EINVAL (err says why) or -ENOMEM.
 */
int client_init(struct client *c, const char *host, const char *token, const char *ca,
		struct client_err *err);
void client_fini(struct client *c);

/* Returns a malloc'd URL-encoding of s (free() it), or NULL without memory. */
char *client_escape(const char *s);

/*
 * Sends method path (e.g. "/v1/sandboxes") with body (NULL: no body) as JSON.
 * On a 2xx answer returns 0 and, if reply is not NULL, stores the parsed JSON
 * reply there (NULL for an empty body; the caller json_decref()s it).
 * Otherwise returns -EREMOTEIO (API error), -ECONNREFUSED (unreachable),
 * -EIO (transport) or -ENOMEM, with err filled.
 */
int client_request(struct client *c, const char *method, const char *path, json_t *body,
		   json_t **reply, struct client_err *err);

/* Like client_request, with len raw bytes as an application/octet-stream body. */
int client_request_raw(struct client *c, const char *method, const char *path,
		       const void *data, size_t len, json_t **reply, struct client_err *err);

/*
 * Sends the request and hands every NDJSON event of a 2xx answer to
 * ops->event, in order, as it arrives. Returns 0 when the stream ended or the
 * callback returned 1; the callback's negative value when it aborted; -EINTR
 * style negatives from ops->tick; or the errors of client_request.
 */
int client_stream(struct client *c, const char *method, const char *path, json_t *body,
		  const struct client_stream_ops *ops, struct client_err *err);

/*
 * client_stream with the bytes read from fd until end of file (a pipe will do) as the body,
 * sent chunked as content_type while the answer's events arrive.
 */
int client_stream_upload(struct client *c, const char *method, const char *path, const char *content_type, int fd,
			 const struct client_stream_ops *ops, struct client_err *err);
/*
 * PUT path with the bytes read from fd until end of file as the body.
 * size is the number of bytes when known (a regular file), or -1 (chunked).
 * The fd is read in small pieces as the upload goes. Returns as client_request,
 * or -ECANCELED (err not filled) when c->cancel said so.
 */
int client_upload(struct client *c, const char *path, int fd, long long size,
		  json_t **reply, struct client_err *err);

/* client_upload with another method (POST). */
int client_send_file(struct client *c, const char *method, const char *path, int fd, long long size,
		     json_t **reply, struct client_err *err);
/*
 * GET path and write the body of a 2xx answer to fd as it arrives; an error
 * answer is never written to fd. *written counts the bytes written.
 * Returns as client_request; a failed write is -errno with CLIENT_ERR_LOCAL;
 * -ECANCELED (err not filled) when c->cancel said so.
 */
int client_download(struct client *c, const char *path, int fd, long long *written,
		    struct client_err *err);

#endif

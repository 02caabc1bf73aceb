/*
 * e2b/watch.c - E2B's folder watching (watch.h) on spaced's GET .../files/watch stream.
 *
 * WatchDir is one of spaced's watch streams carried as a Connect stream: {"start": {}} once
 * spaced says the sandbox watches, a FilesystemEvent per change, a keepalive when silent for
 * GW_KEEPALIVE_S, and the end when the client leaves (then spaced's stream is closed, which
 * frees the watch), the folder goes, or the call's Connect-Timeout-Ms passes
 * (deadline_exceeded, as envd ends it). spaced's "lost" event has no E2B kind: it is not sent.
 *
 * A polling watcher is the same stream held by a thread of its own, its events kept (at most
 * GW_WATCHER_EVENTS) until GetWatcherEvents takes them; RemoveWatcher stops the thread.
 */
#include "e2b/watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "e2b/connect.h"
#include "e2b/files.h"
#include "e2b/stream.h"

#define WATCH_URL_MAX 9200
#define WATCHER_START_S 60 /* how long CreateWatcher waits for spaced to start watching */

/* E2B's FilesystemEvent of one of spaced's watch events (new reference), or NULL for one E2B
 * has no kind for. */
static json_t *fs_event(const json_t *ev)
{
	static const char *const kinds[][2] = {
		{ "create", "EVENT_TYPE_CREATE" }, { "write", "EVENT_TYPE_WRITE" },   { "remove", "EVENT_TYPE_REMOVE" },
		{ "rename", "EVENT_TYPE_RENAME" }, { "chmod", "EVENT_TYPE_CHMOD" },
	};
	const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
	const char *name = json_string_value(json_object_get(ev, "name"));
	for (size_t i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(type, kinds[i][0]) == 0)
			return json_pack("{s:s, s:s}", "name", name, "type", kinds[i][1]);
	return NULL;
}

/* spaced's watch route for E2B's {path, recursive} on sbid into dst; false when the path is
 * missing or too long. */
static bool watch_url(struct req *r, char *dst, const char *sbid, const json_t *msg)
{
	char abs[4200], rest[WATCH_URL_MAX - 100];
	if (!files_abs_path(r, sbid, json_string_value(json_object_get(msg, "path")), abs, sizeof(abs)))
		return false;
	char *esc = client_escape(abs);
	bool ok = esc && (size_t)snprintf(rest, sizeof(rest), "/files/watch?path=%s&recursive=%d", esc,
					  json_is_true(json_object_get(msg, "recursive"))) < sizeof(rest) &&
		  gw_sandbox_path(dst, WATCH_URL_MAX, sbid, rest);
	free(esc);
	return ok;
}

/* The Connect code of spaced's refusal e of a watch. */
static const char *refusal_code(const struct client_err *e)
{
	if (e->kind != CLIENT_ERR_API)
		return "unavailable";
	return e->status == 404 ? "not_found" : connect_code_of(e->code, e->status);
}

/* How a watch stream ended, from its error event; 1 (the stream is done) for client_stream. */
static int ended_by(const json_t *ev, const char **code, char *msg, size_t n)
{
	const json_t *e = json_object_get(ev, "error");
	*code = connect_code_of(json_string_value(json_object_get(e, "code")), 0);
	snprintf(msg, n, "%s", json_string_value(json_object_get(e, "message")) ?: "the watch failed");
	return 1;
}

/* ---- WatchDir: a Connect stream ---- */

struct wdir {
	struct gw *gw;
	char url[WATCH_URL_MAX];
	int64_t deadline;     /* mono ms when the stream ends (0: never) */
	struct gw_stream *s;
	int64_t last;         /* when the last envelope went */
	const char *code;     /* the end of the stream: an error code, or NULL */
	char msg[300];
};

static int wdir_send(struct wdir *c, json_t *msg)
{
	struct buf b = { 0 };
	int rc = msg && connect_put(&b, 0, msg) == 0 ? gw_stream_write(c->s, buf_head(&b), buf_avail(&b)) : -ENOMEM;
	json_decref(msg);
	buf_free(&b);
	c->last = gw_mono_ms();
	return rc == -EPIPE ? -EPIPE : 0;
}

static int wdir_event(json_t *ev, void *arg)
{
	struct wdir *c = arg;
	const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
	if (strcmp(type, "start") == 0)
		return wdir_send(c, json_pack("{s:{}}", "start"));
	if (strcmp(type, "error") == 0)
		return ended_by(ev, &c->code, c->msg, sizeof(c->msg));
	if (strcmp(type, "end") == 0)
		return 1;
	json_t *fe = fs_event(ev);
	return fe ? wdir_send(c, json_pack("{s:o}", "filesystem", fe)) : 0;
}

static int wdir_tick(void *arg)
{
	struct wdir *c = arg;
	int64_t now = gw_mono_ms();
	if (gw_stream_gone(c->s))
		return -EPIPE;
	if (c->deadline && now >= c->deadline) {
		c->code = "deadline_exceeded";
		snprintf(c->msg, sizeof(c->msg), "the watch reached its timeout");
		return -ETIMEDOUT;
	}
	if (now - c->last >= GW_KEEPALIVE_S * 1000)
		return wdir_send(c, json_pack("{s:{}}", "keepalive"));
	return 0;
}

static void wdir_run(struct gw_stream *s, void *arg)
{
	struct wdir *c = arg;
	c->s = s;
	c->last = gw_mono_ms();
	struct client_err e = { 0 };
	if (!c->code) {
		struct client_stream_ops ops = { .event = wdir_event, .tick = wdir_tick, .wake_fd = -1, .arg = c };
		int rc = client_stream(&c->gw->up, "GET", c->url, NULL, &ops, &e);
		if (rc == -EPIPE)
			return; /* the client left */
		if (rc < 0 && !c->code) {
			c->code = refusal_code(&e);
			snprintf(c->msg, sizeof(c->msg), "%s", e.message[0] ? e.message : "the watch ended early");
		}
	}
	struct buf b = { 0 };
	if (connect_end(&b, c->code, c->msg) == 0)
		gw_stream_write(s, buf_head(&b), buf_avail(&b));
	buf_free(&b);
}

enum MHD_Result watch_dir(struct req *r, const struct route_args *a)
{
	const char *sbid = a->sbid;
	struct wdir *c = calloc(1, sizeof(*c));
	if (!c)
		return MHD_NO;
	c->gw = r->gw;
	long t = gw_timeout_s(r);
	c->deadline = t > 0 ? gw_mono_ms() + t * 1000 : 0;
	json_t *msg = connect_request(buf_head(&r->body), buf_avail(&r->body), c->msg, sizeof(c->msg));
	if (!msg) {
		c->code = "invalid_argument"; /* a stream's errors go in its end, under 200 */
	} else if (!watch_url(r, c->url, sbid, msg)) {
		c->code = "invalid_argument";
		snprintf(c->msg, sizeof(c->msg), "a path is required (at most 4096 bytes)");
	}
	json_decref(msg);
	return gw_stream_start(r, "application/connect+json", wdir_run, c, free);
}

/* ---- polling watchers ---- */

struct gw_watcher {
	struct gw_watcher *next;     /* in all->list, while listed [lock] */
	struct gw_watchers *all;
	struct gw *gw;
	char id[33];
	char sbid[16];
	char url[WATCH_URL_MAX];
	int refs;                    /* the list's and the thread's [lock] */
	json_t *events;              /* FilesystemEvents not yet taken [lock] */
	bool started, ended, stop;   /* [lock] */
	int64_t ended_ms;
	const char *code;            /* how it ended: an error code, or NULL [lock] */
	char msg[300];
};

void watchers_init(struct gw_watchers *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->list = NULL;
}

/* Drops a reference to w. [lock] */
static void unref(struct gw_watcher *w)
{
	if (--w->refs > 0)
		return;
	json_decref(w->events);
	free(w);
}

/* Takes w off the list and drops the list's reference. [lock] */
static void unlist(struct gw_watcher *w)
{
	for (struct gw_watcher **pp = &w->all->list; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			w->stop = true;
			unref(w);
			return;
		}
}

static int watcher_event(json_t *ev, void *arg)
{
	struct gw_watcher *w = arg;
	const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
	int rc = 0;
	pthread_mutex_lock(&w->all->lock);
	if (strcmp(type, "start") == 0) {
		w->started = true;
		pthread_cond_broadcast(&w->all->cond);
	} else if (strcmp(type, "error") == 0) {
		rc = ended_by(ev, &w->code, w->msg, sizeof(w->msg));
	} else if (strcmp(type, "end") == 0) {
		rc = 1;
	} else if (json_array_size(w->events) < GW_WATCHER_EVENTS) {
		json_t *fe = fs_event(ev);
		if (fe)
			json_array_append_new(w->events, fe);
	}
	pthread_mutex_unlock(&w->all->lock);
	return rc;
}

static int watcher_tick(void *arg)
{
	struct gw_watcher *w = arg;
	pthread_mutex_lock(&w->all->lock);
	bool stop = w->stop;
	pthread_mutex_unlock(&w->all->lock);
	return stop ? -ECANCELED : 0;
}

static void *watcher_run(void *arg)
{
	struct gw_watcher *w = arg;
	struct gw_watchers *all = w->all; /* the unref below may free w */
	struct client_err e = { 0 };
	struct client_stream_ops ops = { .event = watcher_event, .tick = watcher_tick, .wake_fd = -1, .arg = w };
	int rc = client_stream(&w->gw->up, "GET", w->url, NULL, &ops, &e);
	pthread_mutex_lock(&all->lock);
	if (rc < 0 && !w->code && !w->stop) {
		w->code = refusal_code(&e);
		snprintf(w->msg, sizeof(w->msg), "%s", e.message[0] ? e.message : "the watch ended early");
	}
	w->ended = true;
	w->ended_ms = gw_mono_ms();
	pthread_cond_broadcast(&all->cond);
	unref(w);
	pthread_mutex_unlock(&all->lock);
	return NULL;
}

/* Forgets ended watchers nobody asked about for GW_WATCHER_KEEP_S; counts sbid's. [lock] */
static int prune_and_count(struct gw_watchers *all, const char *sbid)
{
	int n = 0;
	int64_t now = gw_mono_ms();
	for (struct gw_watcher *w = all->list, *next; w; w = next) {
		next = w->next;
		if (w->ended && now - w->ended_ms >= GW_WATCHER_KEEP_S * 1000)
			unlist(w);
		else if (strcmp(w->sbid, sbid) == 0)
			n++;
	}
	return n;
}

static enum MHD_Result create(struct req *r, const char *sbid, const json_t *msg)
{
	struct gw_watchers *all = r->gw->watchers;
	struct gw_watcher *w = calloc(1, sizeof(*w));
	uint8_t rnd[16];
	if (!w || !(w->events = json_array()) || getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		if (w)
			json_decref(w->events);
		free(w);
		return gw_connect_error(r, "internal", "out of memory or randomness");
	}
	if (!watch_url(r, w->url, sbid, msg)) {
		json_decref(w->events);
		free(w);
		return gw_connect_error(r, "invalid_argument", "a path is required (at most 4096 bytes)");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(w->id + 2 * i, 3, "%02x", rnd[i]);
	snprintf(w->sbid, sizeof(w->sbid), "%s", sbid);
	w->all = all;
	w->gw = r->gw;
	w->refs = 2;
	pthread_mutex_lock(&all->lock);
	if (prune_and_count(all, sbid) >= GW_MAX_WATCHERS) {
		pthread_mutex_unlock(&all->lock);
		json_decref(w->events);
		free(w);
		return gw_connect_error(r, "resource_exhausted", "a sandbox has at most %d watchers; remove one first",
					GW_MAX_WATCHERS);
	}
	w->next = all->list;
	all->list = w;
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, GW_THREAD_STACK);
	if (pthread_create(&t, &attr, watcher_run, w) != 0) {
		w->refs--; /* no thread holds it */
		w->ended = true;
		w->code = "internal";
		snprintf(w->msg, sizeof(w->msg), "cannot start a watcher");
	}
	pthread_attr_destroy(&attr);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WATCHER_START_S;
	while (!w->started && !w->ended && pthread_cond_timedwait(&all->cond, &all->lock, &until) == 0)
		;
	enum MHD_Result rc;
	if (w->started) {
		rc = gw_json(r, 200, json_pack("{s:s}", "watcherId", w->id));
	} else {
		const char *code = w->code ?: "deadline_exceeded";
		char why[300];
		snprintf(why, sizeof(why), "%s", w->code ? w->msg : "the sandbox did not start watching in time");
		unlist(w);
		pthread_mutex_unlock(&all->lock);
		return gw_connect_error(r, code, "%s", why);
	}
	pthread_mutex_unlock(&all->lock);
	return rc;
}

/* GetWatcherEvents (or RemoveWatcher, when remove) of watcher msg.watcherId of sandbox sbid. */
static enum MHD_Result ask(struct req *r, const char *sbid, bool remove, const json_t *msg)
{
	struct gw_watchers *all = r->gw->watchers;
	const char *id = json_string_value(connect_field(msg, "watcherId", "watcher_id")) ?: "";
	pthread_mutex_lock(&all->lock);
	struct gw_watcher *w = all->list;
	while (w && (strcmp(w->id, id) != 0 || strcmp(w->sbid, sbid) != 0))
		w = w->next;
	json_t *events = NULL;
	const char *code = NULL;
	char why[300] = "";
	if (!w) {
		code = "not_found";
		snprintf(why, sizeof(why), "no watcher %.40s in this sandbox", id);
	} else if (remove) {
		unlist(w);
	} else if (json_array_size(w->events) == 0 && w->ended && w->code) {
		code = w->code; /* it failed, and everything it saw was taken: say why, once */
		snprintf(why, sizeof(why), "%s", w->msg);
		unlist(w);
	} else {
		events = w->events;
		w->events = json_array();
		if (w->ended && !w->code && json_array_size(events) == 0)
			unlist(w); /* its folder went: the next ask finds it gone */
	}
	pthread_mutex_unlock(&all->lock);
	if (code)
		return gw_connect_error(r, code, "%s", why);
	return gw_json(r, 200, events ? json_pack("{s:o}", "events", events) : json_object());
}

/* The watchers' calls: their message, then what each does with it. */
enum watcher_call { WATCHER_CREATE, WATCHER_EVENTS, WATCHER_REMOVE };

static enum MHD_Result unary(struct req *r, const struct route_args *a, enum watcher_call what)
{
	enum MHD_Result rc;
	json_t *msg = gw_unary(r, &rc);
	if (!msg)
		return rc;
	rc = what == WATCHER_CREATE ? create(r, a->sbid, msg) : ask(r, a->sbid, what == WATCHER_REMOVE, msg);
	json_decref(msg);
	return rc;
}

enum MHD_Result watchers_create(struct req *r, const struct route_args *a)
{
	return unary(r, a, WATCHER_CREATE);
}

enum MHD_Result watchers_events(struct req *r, const struct route_args *a)
{
	return unary(r, a, WATCHER_EVENTS);
}

enum MHD_Result watchers_remove(struct req *r, const struct route_args *a)
{
	return unary(r, a, WATCHER_REMOVE);
}

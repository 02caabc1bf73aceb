/*
 * e2b/watch.h - E2B's folder watching on spaced's watch stream (watch.c, docs/e2b.md):
 * filesystem.Filesystem/WatchDir as a Connect server stream, and the polling watchers
 * (CreateWatcher, GetWatcherEvents, RemoveWatcher), each a thread that holds one of spaced's
 * watch streams and keeps its events until they are asked for.
 */
#ifndef SPACE_E2B_WATCH_H
#define SPACE_E2B_WATCH_H

#include <pthread.h>

#include "e2b/gateway.h"

#define GW_MAX_WATCHERS 8          /* polling watchers of one sandbox at once (resource_exhausted) */
#define GW_WATCHER_EVENTS 1024     /* events one watcher keeps until asked for; later ones are dropped */
#define GW_WATCHER_KEEP_S 600      /* an ended watcher nobody asks about is forgotten after this */

struct gw_watcher;

/* The polling watchers of the front, under one lock. */
struct gw_watchers {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gw_watcher *list;
};

void watchers_init(struct gw_watchers *w);

/* POST /filesystem.Filesystem/<method> on sandbox a->sbid (checked), routed by envd.c's table.
 * WatchDir: the body is the request's one envelope; answers with a stream. CreateWatcher,
 * GetWatcherEvents, RemoveWatcher: unary calls. */
enum MHD_Result watch_dir(struct req *r, const struct route_args *a);
enum MHD_Result watchers_create(struct req *r, const struct route_args *a);
enum MHD_Result watchers_events(struct req *r, const struct route_args *a);
enum MHD_Result watchers_remove(struct req *r, const struct route_args *a);

#endif

/*
 * e2b/builds.h - E2B's template build API on spaced's template builds (docs/e2b.md, "Building
 * templates"): the SDK's Template.build / buildInBackground / getBuildStatus.
 *
 *   POST /v3/templates                              ask for a build of {name, tags}: 202 its ids
 *   GET  /templates/{id}/files/{hash}               whether a COPY step's files are here, else
 *                                                   where to upload them: {present, url, headers}
 *   PUT  /templates/{id}/files/{hash}               that upload (a tar, gzip'd or not), streamed
 *                                                   to a file of the front's (builds_upload)
 *   POST /v2/templates/{id}/builds/{build}          the steps: the build starts (202)
 *   GET  /templates/{id}/builds/{build}/status      its state and its log from ?logsOffset=
 *
 * A build is spaced's POST /v1/templates, made as the administrator (templates are the
 * operator's in space's API) with the context recipe.h makes, once per name it records; its
 * events become the build's log. Everything is the key's: a build, an upload, a template built
 * through E2B (LABEL e2b.owner: the key's owner id) are another key's 404, and a name held by
 * the operator's or another key's template is refused (403). Builds live in the front's
 * memory: at most GW_BUILDS_MAX, GW_BUILDS_PER_KEY of one key not ended; the one that ended
 * first (or was asked for GW_BUILD_ASKED_S ago and never started) is forgotten for a new one.
 *
 * Threads: a build runs in a thread of its own (buildrun.h); gw_builds.lock guards the table
 * and every build's state and log.
 */
#ifndef SPACE_E2B_BUILDS_H
#define SPACE_E2B_BUILDS_H

#include <pthread.h>
#include <stdbool.h>

#include "e2b/gateway.h"

#define GW_BUILDS_MAX 64              /* builds the front keeps (running ones and finished) */
#define GW_BUILDS_PER_KEY 16          /* of them, asked for or running, of one key */
#define GW_BUILD_ASKED_S 3600         /* a build asked for and not started is forgotten after this */
#define GW_BUILD_LOG_MAX 10000        /* log entries of one build; later ones are dropped, and said so */
#define GW_BUILD_LINE_MAX 4096        /* bytes of one log entry's message; longer lines are cut */
#define GW_BUILD_REASON_LINES 20      /* the failed step's last log lines in its error */
#define GW_BUILD_UPLOAD_MAX (1L << 30) /* bytes of one upload of a COPY step's files */
#define GW_BUILD_NAME_MAX 63         /* bytes of a template's name with its tag (docs/templates.md) */
#define GW_BUILD_OWNER_LEN 16         /* hex digits of an owner id: SHA-256 of the key as a token */

struct gw_build;

struct gw_builds {
	pthread_mutex_t lock;
	struct gw_build *all[GW_BUILDS_MAX]; /* [lock] NULL: free */
	char dir[256];                /* the uploads: <dir>/<owner>-<hash>, the front's own folder */
};

/* Makes the uploads' folder (mode 0700). 0 or a negative errno. */
int builds_init(struct gw_builds *b);
/* Removes the uploads and their folder (after the listener stopped). */
void builds_fini(struct gw_builds *b);

/* The owner id of key (an E2B key or a space token: e2b_<rest> is sp_<rest>) into out. */
void builds_owner(const char *key, char out[GW_BUILD_OWNER_LEN + 1]);
/* Whether template t (as spaced lists it) may be seen by owner: one not built through E2B, or
 * built by that owner. */
bool builds_visible(const json_t *t, const char *owner);

/* Whether template name may be used by r's key (asked as c): true unless it is a template
 * another key built through E2B; one spaced does not have is left to spaced. */
bool builds_may_use(struct req *r, struct client *c, const char *name);

/* The routes above, the control plane's (control.c): POST /v3/templates (builds_request),
 * GET and PUT /templates/{tpl}/files/{hash} (a template name of more than GW_BUILD_NAME_MAX
 * bytes is no route), POST /v2/templates/{tpl}/builds/{build} (builds_trigger) and
 * GET /templates/{tpl}/builds/{build}/status. */
enum MHD_Result builds_request(struct req *r, const struct route_args *a);
enum MHD_Result builds_file_link(struct req *r, const struct route_args *a);
enum MHD_Result builds_upload_end(struct req *r, const struct route_args *a);
enum MHD_Result builds_trigger(struct req *r, const struct route_args *a);
enum MHD_Result builds_status(struct req *r, const struct route_args *a);
/* A chunk of a control-plane request's body before it is whole: true when it was taken (an
 * upload's, written to its file), false when it is to be kept in r->body. */
bool builds_upload(struct req *r, const char *data, size_t n);

#endif

/*
 * daemon/core/build.h - template builds (POST /v1/templates).
 *
 * The request's body, the build context as a tar stream, goes to a file in a folder of the
 * build's own (<state>/builds/<id>/); once it is whole, a job starts space-build (builder/)
 * on it, as spaced's client on the Unix socket, and hands what it prints, one JSON event per
 * line, to the client as the answer's stream. A client that leaves cancels the build: the
 * builder is told (SIGTERM), removes its step's sandbox and records nothing. The folder goes
 * when the builder ends. Order: build_begin (handler), build_upload for each piece of the
 * body, build_start at its end. [L] throughout.
 */
#ifndef SPACE_DAEMON_CORE_BUILD_H
#define SPACE_DAEMON_CORE_BUILD_H

#include <stddef.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define BUILD_MAX_RUNNING 4                    /* builds in flight on one spaced */
#define BUILD_UPLOAD_MAX (2ull << 30)          /* bytes of a build context as sent */
#define BUILD_LOG_BUFFER (1024 * 1024)         /* a build's output held for a slow client; the
						* builder (and the RUN command) waits beyond it */
#define BUILD_FILE_MAX 1024                    /* bytes of the Dockerfile's path in the context */

struct op;

/* Opens a build of template name for op: file is the Dockerfile's path in the context, args
 * an array of "NAME=VALUE" build arguments (borrowed), packages NULL or "PKG[,PKG...]" (Debian
 * packages the base, the default template, gets first: docs/templates.md). Returns 0 or -errno with *e set
 * (400 bad name, 429 too many builds). */
int build_begin(struct daemon *d, struct op *op, const char *name, const char *file, json_t *args,
		const char *packages, struct err *e);

/* Opens an import of an image as template name for op, as spaced --template NAME=IMAGE
 * imports one (template.h): source "oci-archive" or "docker-archive" (the request's body is
 * the archive) or "docker://REFERENCE" (no body); or "packages:PKG[,PKG...]", the default
 * template's packages and these, made as spaced --template NAME=PKG,... makes them (a build's
 * --packages). It goes on as a build does (build_upload, build_start); op is answered with the
 * template (201) once it is recorded. */
#define BUILD_PACKAGES_SOURCE "packages:"
int build_import(struct daemon *d, struct op *op, const char *name, const char *source, struct err *e);

/* Appends a piece of the context. Returns 0 or -errno with op->err set (413 over
 * BUILD_UPLOAD_MAX). */
int build_upload(struct op *op, const char *data, size_t n);

/* The context is whole: starts the builder, whose events become op's stream. 0 or -errno. */
int build_start(struct op *op);

/* The metadata key of a build step's sandbox (its value: the template's name). */
#define BUILD_SANDBOX_KEY "space.build"

/* Cancels the builds and imports of template name that run or wait (DELETE
 * /v1/templates/:name/build): each is told as when its client leaves (SIGTERM: the builder
 * removes its step's sandbox and records nothing), and its client's stream ends with the
 * builder's "cancelled" error; one whose context is still coming in fails (409 cancelled) at
 * its next piece. 0, or
 * -ENOENT with e (404) when none runs. */
int build_cancel(struct daemon *d, const char *name, struct err *e);

/* At start, before the API: a build does not outlive its spaced. Removes what builds left
 * (<state>/builds) and deletes the sandboxes of their steps. Blocks; takes d->lock. */
void build_sweep(struct daemon *d);

/* Once a second, from the I/O thread: a build whose client left is let go (then cancelled). */
void build_tick(struct daemon *d);

/* Records template name from a build (PUT /v1/templates/:tpl, the builder's last call, on the
 * Unix socket): body {"key": its entry in <cache>/templates, "source", "config"}. A job marks
 * the entry used, records the template and answers op with it; the files of a template it
 * replaces go unless a sandbox or snapshot starts from it. 0 or -errno with *e set. */
int build_record(struct daemon *d, struct op *op, const char *name, json_t *body, struct err *e);

#endif

/*
 * builder/build.h - space-build, the program that builds a template from a Dockerfile.
 *
 * spaced starts one space-build per build (POST /v1/templates) with the build's context
 * unpacked in a folder, and streams what it prints to the client: one JSON event per line
 * (docs/templates.md). space-build is spaced's client on its Unix socket: a RUN step runs in
 * a sandbox made through the API, under the isolation of any sandbox, and the finished
 * template is recorded through it. It does the file work itself, on the host: each step that
 * changes files is a root filesystem of its own in the machine's cache,
 * <cache>/build/<key>/rootfs, made as hard links of the step before plus what the step
 * changed (a file is replaced, never written in place, so the links share nothing that
 * changes). key hashes the step's canonical text, the files COPY reads and the key of the
 * step before, so an unchanged step is found, not run again.
 *
 * Order: build_* in main.c: parse, base, each step (step_run in step.c), commit. What the
 * steps and the phases share (events, failures) is build.c's.
 */
#ifndef SPACE_BUILDER_BUILD_H
#define SPACE_BUILDER_BUILD_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <jansson.h>

#include "lib/client/client.h"
#include "lib/host/names.h"
#include "lib/host/dockerfile.h"

#define BUILD_RUN_TIMEOUT_S (3600)     /* one RUN step's command, at most */
#define BUILD_COPY_FILES_MAX 100000    /* files one COPY reads from the context */
#define BUILD_MSG_MAX 1024
#define BUILD_IMAGE_PREFIX "image-"    /* the template an image named in FROM is imported as */
#define BUILD_PACKAGES_PREFIX "packages-" /* the default template with a build's --packages */

struct build {
	struct client client;
	const char *cache_dir, *state_dir, *name;
	const char *packages;             /* --packages PKG[,PKG...]: added to the default base, or NULL */
	int context;                      /* the build context's folder (O_DIRECTORY) */
	struct dockerfile *df;
	json_t *base_config;              /* the base template's defaults: env, workdir, user */
	json_t *layers;                   /* where the files came from: the base, then each step
					   * that changed them (docs/templates.md) */
	char base_key[80];                /* the base template's cache key; "" for scratch */
	char key[TEMPLATE_BUILD_KEY_LEN + 1]; /* the files as the last step left them */
	char from[96];                    /* the template a RUN step's sandbox starts from:
					   * the base's name, or "build/<key>" */
	char rootfs[PATH_MAX];            /* the folder holding those files */
	bool changed;                     /* a step changed files: rootfs is a build step's */
	size_t step;                      /* 1-based, of df->n_steps */
	volatile sig_atomic_t *cancelled; /* set by SIGTERM or SIGINT: stop, leave nothing running */
	char msg[BUILD_MSG_MAX];          /* why the build failed */
	int exit_code;                    /* a failed RUN's exit code, -1 if none */
};

/* Says why the build fails (b->msg) and returns -err. */
int build_fail(struct build *b, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prints one event (a JSON object, consumed) as a line and flushes; a client that left
 * cancels the build. */
void build_emit(struct build *b, json_t *event);

/* Runs step s (RUN, COPY, ADD or WORKDIR), or finds it in the cache; b->key, b->from and
 * b->rootfs then name the files it left. Returns 0, or -errno with b->msg said. */
int step_files(struct build *b, const struct dockerfile_step *s);

/* Prints step s as it begins ("[n/m] RUN ..."), found in the cache or not. */
void build_step_event(struct build *b, const struct dockerfile_step *s, bool cached);

/* Makes folder dir (which must not exist) holding rootfs/: hard links of b->rootfs's files.
 * Returns 0, or -errno with b->msg said. */
int step_link(struct build *b, const char *dir);

/* Resolves "user[:group]" (names or numbers) against the passwd and group files of the root
 * filesystem at rootfs into *uid, *gid. Returns 0 or -errno with b->msg said. */
int step_user(struct build *b, const char *rootfs, const char *spec, long long *uid, long long *gid);

#endif

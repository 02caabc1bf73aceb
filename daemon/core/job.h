/*
 * daemon/core/job.h - slow sandbox work off the request path.
 *
 * A job is one detached thread running one function (create, delete, pause,
 * suspend...). It runs without d->lock and takes it only to publish its
 * outcome. d->jobs counts the jobs in flight.
 */
#ifndef SPACE_DAEMON_JOB_H
#define SPACE_DAEMON_JOB_H

#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"
#include "daemon/store/store.h"

struct op;
struct volume_work;

struct job {
	void (*fn)(struct job *j);
	struct daemon *d;
	struct sandbox *sb;
	struct op *op;          /* the request answered when the job ends, may be NULL */
	enum sb_state via;      /* the transitional state the job moves through */
	enum sb_state from;     /* the state it moves from, and goes back to if it fails */
	struct sb_record first; /* the transition's own state, taken with the lock held when the job
				 * was started and written as it begins (seq 0: none) */
	/* What fn needs, by kind of job; JSON in it is the job's own, which frees it. */
	union {
		struct {
			char rootfs[600];   /* the folder sandbox_new made for it */
			char snapshot[600]; /* the snapshot it starts from, "" for none */
			int pool;           /* a warm pool's fill: the pool's index */
		} create;
		struct {
			json_t *settings;   /* a warm pool's sandbox claimed: {"env", "network"} */
		} claim;
		struct {
			json_t *policy;     /* a network policy to apply */
		} network;
		struct {
			char name[600];     /* "" for none */
			char id[600];
			char dir[600];      /* its folder, for a removal */
		} snapshot;
		struct {
			int count;          /* the forks to make */
		} fork;
		struct {
			char name[600];     /* a template built or imported, and its key */
			char key[600];
			json_t *body;       /* what the builder said of it (source, config, layers) */
		} record;
		struct {
			long long keep;     /* bytes of cache to keep */
		} prune;
		struct build *build;   /* a template's build (core/build.c) */
		struct recipe *recipe; /* a build from a recipe (core/recipe.c) */
		struct volume_work *volume; /* a volume's create or removal (core/volume.c), its own */
	};
};

/* Starts a copy of *tmpl on its own thread. Returns 0 or -errno with *e filled. [L] */
int job_start(struct daemon *d, const struct job *tmpl, struct err *e);

/* Writes j->first, if the job has one, with d->lock released: before the job does anything,
 * the store knows what is under way. Returns 0, or -errno with *e set (nothing was done). */
int job_record(struct job *j, struct err *e);

#endif

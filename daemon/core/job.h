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
#include "daemon/base/err.h"
#include "daemon/store/store.h"

struct op;

struct job {
	void (*fn)(struct job *j);
	struct daemon *d;
	struct sandbox *sb;
	struct op *op;          /* the request answered when the job ends, may be NULL */
	enum sb_state via;      /* the transitional state the job moves through */
	int count;
	char text[600];         /* a path or name the job needs */
	char text2[600];
	json_t *json;           /* what the job needs that is JSON: the job owns (and frees) it */
	void *arg;              /* what else fn needs: fn's own (core/build.c: the build) */
	struct sb_record first; /* the transition's own state, taken with the lock held when the job
				 * was started and written as it begins (seq 0: none) */
};

/* Starts a copy of *tmpl on its own thread. Returns 0 or -errno with *e filled. [L] */
int job_start(struct daemon *d, const struct job *tmpl, struct err *e);

/* Writes j->first, if the job has one, with d->lock released: before the job does anything,
 * the store knows what is under way. Returns 0, or -errno with *e set (nothing was done). */
int job_record(struct job *j, struct err *e);

#endif

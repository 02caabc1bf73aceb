/*
 * daemon/core/job.h - slow sandbox work off the request path.
 *
 * A job is one detached thread running one function (create, delete, pause,
 * suspend...). It runs without d->lock and takes it only to publish its
 * outcome. d->jobs counts the jobs in flight.
 */
#ifndef SPACE_DAEMON_JOB_H
#define SPACE_DAEMON_JOB_H

#include "daemon/daemon.h"
#include "daemon/base/err.h"

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
};

/* Starts a copy of *tmpl on its own thread. Returns 0 or -errno with *e filled. [L] */
int job_start(struct daemon *d, const struct job *tmpl, struct err *e);

#endif

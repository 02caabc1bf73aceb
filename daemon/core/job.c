/*
 * daemon/core/job.c - one detached thread per job (see job.h). Jobs are few (one
 * per sandbox operation in flight), so a pool would buy nothing.
 */
#include "daemon/core/job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/op.h"

static void *run(void *arg)
{
	struct job *j = arg;
	struct daemon *d = j->d;
	j->fn(j);
	daemon_lock(d);
	if (j->sb)
		j->sb->refs--;
	d->jobs--;
	pthread_cond_broadcast(&d->cond);
	daemon_unlock(d);
	free(j);
	return NULL;
}

int job_record(struct job *j, struct err *e)
{
	int rc = j->first.seq ? store_save(j->d->store, &j->first) : 0;
	if (rc < 0)
		err_set(e, ERR_INTERNAL, -rc, "cannot record that sandbox %s is %s: %s", j->first.id,
			sb_state_name(j->first.state), strerror(-rc));
	return rc;
}

int job_start(struct daemon *d, const struct job *tmpl, struct err *e)
{
	struct job *j = malloc(sizeof(*j));
	if (!j)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	*j = *tmpl;
	j->d = d;
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &attr, run, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		free(j);
		return err_set(e, ERR_INTERNAL, rc, "cannot start a job: %s", strerror(rc));
	}
	d->jobs++;
	if (j->sb)
		j->sb->refs++; /* a deleted sandbox is not freed under a job that uses it */
	return 0;
}

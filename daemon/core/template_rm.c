/*
 * daemon/core/template_rm.c - see template_rm.h.
 */
#include "daemon/core/template_rm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "daemon/base/log.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/core/pool.h"
#include "daemon/store/store.h"
#include "daemon/store/template.h"

int template_sandboxes(struct daemon *d, const char *name)
{
	int n = 0;
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		n += strcmp(sb->conf.template, name) == 0;
	return n;
}

static void release_job(struct job *j)
{
	int rc = template_release(j->d, j->record.key);
	if (rc < 0)
		log_warn("template %s: its files (%s) stay: %s", j->record.name, j->record.key, strerror(-rc));
	daemon_lock(j->d);
	j->op->answer = ANSWER_EMPTY;
	op_finish(j->op);
	daemon_unlock(j->d);
}

int template_remove(struct daemon *d, const char *name, struct op *op, struct err *e)
{
	if (strcmp(name, TEMPLATE_DEFAULT) == 0)
		return err_set(e, ERR_CONFLICT, EBUSY, "the default template is always there");
	json_t *t = store_get_template(d->store, name);
	if (!t)
		return err_set(e, ERR_NOT_FOUND, ENOENT, "no template %s", name);
	struct job j = { .fn = release_job, .op = op };
	snprintf(j.record.key, sizeof(j.record.key), "%s", json_string_value(json_object_get(t, "key")));
	snprintf(j.record.name, sizeof(j.record.name), "%s", name);
	json_decref(t);
	int sandboxes = template_sandboxes(d, name), snapshots = store_template_snapshots(d->store, name);
	if (snapshots < 0)
		return err_set(e, ERR_INTERNAL, -snapshots, "cannot count the snapshots of template %s", name);
	int pooled = pool_members(d, name);
	if (pooled)
		return err_set(e, ERR_CONFLICT, EBUSY,
			       "template %s is in use: %d sandboxes (%d of them in the warm pool, spaced --pool) and %d "
			       "snapshots start from it",
			       name, sandboxes, pooled, snapshots);
	if (sandboxes || snapshots)
		return err_set(e, ERR_CONFLICT, EBUSY, "template %s is in use: %d sandboxes and %d snapshots start from it",
			       name, sandboxes, snapshots);
	int rc = store_delete_template(d->store, name);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot remove template %s: %s", name, strerror(-rc));
	log_info("template %s removed", name);
	return job_start(d, &j, e);
}

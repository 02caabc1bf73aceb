/*
 * daemon/core/sandbox_net.c - changing a sandbox's egress policy: the rules on a job, without
 * d->lock, then the record, then the answer.
 */
#include "daemon/core/sandbox.h"

#include <errno.h>
#include <stdio.h>

#include "daemon/net/net.h"
#include "daemon/core/job.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"

static void network_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	struct err e = { 0 };
	int rc = net_apply_policy(d, sb, j->network.policy, &e); /* sb->network is read under the lock only */
	daemon_lock(d);
	sb->net_changing = false;
	if (rc < 0) {
		op_fail(j->op, &e);
	} else {
		json_decref(sb->network);
		sb->network = json_incref(j->network.policy);
		if (store_put_network(d->store, sb) < 0)
			log_warn("sandbox %s: its new network policy applies but could not be recorded", sb->id);
		j->op->answer = ANSWER_OK;
		j->op->json = sandbox_json(sb);
		op_finish(j->op);
	}
	daemon_unlock(d);
	json_decref(j->network.policy);
}

int sandbox_set_network(struct daemon *d, struct sandbox *sb, const json_t *policy, struct op *op, struct err *e)
{
	if (sb->state == SB_CREATING || sb->state == SB_DELETING || sb->state == SB_FAILED) {
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return -EBUSY;
	}
	if (sb->net_changing)
		return err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s: a change of its network is under way", sb->id);
	struct job j = { .fn = network_job, .sb = sb, .op = op, .network.policy = json_deep_copy(policy) };
	int rc = j.network.policy ? job_start(d, &j, e) : err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	if (rc < 0)
		json_decref(j.network.policy);
	else
		sb->net_changing = true;
	return rc;
}

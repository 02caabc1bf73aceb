/*
 * daemon/core/sandbox_live.c - the jobs that keep watch over a running sandbox's agent.
 *
 * When its connection drops unasked (sandbox_watch), when it leaves a ping unanswered
 * (sandbox_unresponsive) or when its PID 1 may be stopped (sandbox_probe), a job looks at the
 * sandbox through its driver without d->lock, continues what was stopped, and fails the
 * sandbox, files kept, when its agent does not come back. sandbox_wait is the deadline these
 * and the create wait under.
 */
#include "daemon/core/sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/driver/driver.h"
#include "daemon/core/job.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"

#define WATCH_GRACE_MS 3000   /* an agent that lost its connection is back within this */
#define WATCH_ROUNDS 10       /* grace periods to wait while the sandbox still runs */

static bool agent_back(struct sandbox *sb)
{
	return sb->chan.phase >= CHAN_GREETED || sb->state != SB_RUNNING;
}

static void watch_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	for (int round = 0; round < WATCH_ROUNDS; round++) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += WATCH_GRACE_MS / 1000;
		daemon_lock(d);
		while (!agent_back(sb) && daemon_wait(d, &until) != ETIMEDOUT)
			;
		bool back = agent_back(sb);
		if (back)
			sb->watched = false;
		daemon_unlock(d);
		if (back)
			return;
		if (driver_state(dv, sb) == DRV_RUNNING)
			continue; /* the sandbox runs; its agent may yet reconnect */
		char why[sizeof(sb->reason)], reason[sizeof(sb->reason)];
		driver_exit_reason(dv, sb, why, sizeof(why));
		struct err ignored = { 0 };
		driver_stop(dv, sb, &ignored);
		if (strncmp(why, "panic: ", 7) == 0) /* a microVM's kernel, in its own words */
			snprintf(reason, sizeof(reason), "panic: the guest kernel panicked (%.*s); files kept",
				 (int)sizeof(reason) - 56, why + 7);
		else
			snprintf(reason, sizeof(reason), "%s: %s", why,
				 strcmp(why, "oom") == 0 ? "the sandbox went over its memory limit on the host; files kept"
				 : strcmp(why, "pids") == 0 ? "the sandbox went over its process limit on the host; files kept"
							   : "every process of the sandbox ended; files kept");
		daemon_lock(d);
		if (sb->state == SB_RUNNING && sb->chan.phase < CHAN_GREETED)
			sandbox_fail(d, sb, reason);
		sb->watched = false;
		daemon_unlock(d);
		return;
	}
	daemon_lock(d);
	sb->watched = false;
	daemon_unlock(d);
}

void sandbox_watch(struct daemon *d, struct sandbox *sb)
{
	if (sb->watched || sb->state != SB_RUNNING)
		return;
	struct job j = { .fn = watch_job, .sb = sb };
	struct err e = { 0 };
	if (job_start(d, &j, &e) == 0)
		sb->watched = true;
}

bool sandbox_wait(struct daemon *d, struct sandbox *sb, bool (*cond)(struct sandbox *), int timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (!cond(sb))
		if (daemon_wait(d, &until) == ETIMEDOUT)
			return cond(sb);
	return true;
}

static bool ping_settled(struct sandbox *sb)
{
	return !sb->peer.ping_ms || sb->state != SB_RUNNING;
}

static void nudge_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	struct err e = { 0 };
	int rc = driver_wake(dv, sb, &e);
	if (rc == -ENOSPC) {
		/* whole, and waiting for room on the host's disk: not hung. Asked again after a
		 * fresh ping's deadline (or sooner, by the probe), and continued once there is room */
		log_warn("sandbox %s: %s", sb->id, e.msg);
		daemon_lock(d);
		sb->peer.ping_ms = 0;
		sb->peer.nudging = false;
		daemon_unlock(d);
		return;
	}
	if (rc < 0)
		log_warn("sandbox %s: continuing its agent: %s", sb->id, e.msg);
	daemon_lock(d);
	/* answered, gone, or in another state: whoever changed that took charge */
	bool hung = !sandbox_wait(d, sb, ping_settled, AGENT_DEADLINE_MS);
	if (!hung) {
		if (sb->state == SB_RUNNING && peer_ready(sb))
			log_warn("sandbox %s: its agent had stopped answering; continued", sb->id);
		sb->peer.nudging = false;
		daemon_unlock(d);
		return;
	}
	/* failed first, so the connection dropping as it stops is not taken for a crash */
	sandbox_fail(d, sb, "unresponsive: its agent stopped answering (stopped or starved from inside); files kept");
	daemon_unlock(d);
	struct err ignored = { 0 };
	driver_stop(dv, sb, &ignored);
	daemon_lock(d);
	sb->peer.nudging = false;
	daemon_unlock(d);
}

void sandbox_unresponsive(struct daemon *d, struct sandbox *sb)
{
	if (sb->peer.nudging || sb->state != SB_RUNNING)
		return;
	log_warn("sandbox %s: its agent has not answered for %d s", sb->id, AGENT_DEADLINE_MS / 1000);
	struct job j = { .fn = nudge_job, .sb = sb };
	struct err e = { 0 };
	if (job_start(d, &j, &e) == 0)
		sb->peer.nudging = true;
}

static void probe_job(struct job *j)
{
	struct daemon *d = j->d;
	struct sandbox *sb = j->sb;
	const struct driver_slot *dv = sandbox_driver(d, sb);
	char st = '?';
	int rc = driver_pid1_state(dv, sb, &st);
	if (rc == 0 && (st == 'T' || st == 't')) {
		/* stopped from inside, perhaps by whatever now answers on its socket: continue it; it
		 * finds its connection gone and takes the channel back. A VM that a write of its
		 * disk stopped is continued once the host has room (until then the nudge says so). */
		struct err e = { 0 };
		int w = driver_wake(dv, sb, &e);
		if (w == 0)
			log_warn("sandbox %s: its PID 1 (a VM: the guest) was stopped; continued it", sb->id);
		else if (w != -ENOSPC)
			log_warn("sandbox %s: continuing its PID 1: %s", sb->id, e.msg);
	}
	daemon_lock(d);
	sb->peer.probing = false;
	daemon_unlock(d);
}

void sandbox_probe(struct daemon *d, struct sandbox *sb)
{
	if (sb->peer.probing || sb->state != SB_RUNNING)
		return;
	struct job j = { .fn = probe_job, .sb = sb };
	struct err e = { 0 };
	if (job_start(d, &j, &e) == 0)
		sb->peer.probing = true;
}

/*
 * tests/unit/daemon/core/test_lifecycle.c - what a pause, resume, suspend, sync or change of
 * timeouts answers from each state (daemon/core/lifecycle.c): one the state machine refuses is
 * a conflict that names the state and changes nothing; one whose state already holds answers
 * with the sandbox at once; a pause or a resume of a paused sandbox runs as a job through its
 * transitional state, recorded, and ends in its target, or where it was when the driver
 * refuses.
 *
 * The jobs run on their own threads as in spaced, against a stand-in driver (an explicit
 * driver table, as main() hands over driver_find) and a store in a folder of the test's. The
 * lifecycle reaches the agent's channel, the store and the rest of the sandbox layer, so the
 * test links what test_api links.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "daemon/core/isolation.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"
#include "daemon/core/sandbox.h"
#include "daemon/driver/driver.h"
#include "daemon/store/store.h"

#define JOB_DEADLINE_S 30 /* a job of the stand-in driver is done long before */

static const char *const verbs[] = { "paused", "resumed", "suspended", "deleted" };

static struct {
	struct daemon d;
	struct sandbox *sb;
	char dir[64];
	int pauses, resumes;
	int refuse;              /* the stand-in driver's answer: 0, or -errno with an error */
	enum sb_state seen_in;   /* the sandbox's state while the driver worked */
} t;

static int init_ok(struct daemon *d, struct driver **out, struct err *e)
{
	*out = NULL;
	return 0;
}

static int driver_answer(struct sandbox *sb, struct err *e)
{
	pthread_mutex_lock(&t.d.lock);
	t.seen_in = sb->state;
	pthread_mutex_unlock(&t.d.lock);
	if (t.refuse)
		return err_set(e, ERR_INTERNAL, -t.refuse, "the runtime said no");
	return 0;
}

static int stand_in_pause(struct driver *drv, struct sandbox *sb, struct err *e)
{
	t.pauses++;
	return driver_answer(sb, e);
}

static int stand_in_resume(struct driver *drv, struct sandbox *sb, struct err *e)
{
	t.resumes++;
	return driver_answer(sb, e);
}

static const struct driver_ops stand_in = {
	.name = "gvisor", .init = init_ok, .pause = stand_in_pause, .resume = stand_in_resume,
};

static const struct driver_ops *find_stand_in(const char *name)
{
	return strcmp(name, "gvisor") == 0 ? &stand_in : NULL;
}

static int setup(void **state)
{
	memset(&t, 0, sizeof(t));
	pthread_mutex_init(&t.d.lock, NULL);
	pthread_cond_init(&t.d.cond, NULL);
	snprintf(t.dir, sizeof(t.dir), "/tmp/space-test-lifecycle.XXXXXX");
	assert_non_null(mkdtemp(t.dir));
	char db[128];
	snprintf(db, sizeof(db), "%s/state.db", t.dir);
	assert_int_equal(store_open(db, &t.d.store), 0);
	struct err e = { 0 };
	assert_int_equal(isolation_init(&t.d, "gvisor", find_stand_in, &e), 0);

	struct sandbox *sb = calloc(1, sizeof(*sb));
	sb->d = &t.d;
	snprintf(sb->id, sizeof(sb->id), "0123456789ab");
	snprintf(sb->conf.isolation, sizeof(sb->conf.isolation), "gvisor");
	snprintf(sb->conf.template, sizeof(sb->conf.template), "base");
	snprintf(sb->conf.dir, sizeof(sb->conf.dir), "%s/sandboxes/%s", t.dir, sb->id);
	sb->conf.env = json_object();
	sb->conf.metadata = json_object();
	sb->auto_resume = 1;
	peer_init(sb); /* no agent connected, none listened for */
	sb->state = SB_RUNNING;
	assert_int_equal(store_put_sandbox(t.d.store, sb), 0);
	t.sb = sb;
	return 0;
}

static int teardown(void **state)
{
	store_close(t.d.store);
	char p[128];
	snprintf(p, sizeof(p), "%s/state.db", t.dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/state.db-wal", t.dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/state.db-shm", t.dir);
	unlink(p);
	rmdir(t.dir);
	sandbox_free(t.sb);
	pthread_cond_destroy(&t.d.cond);
	pthread_mutex_destroy(&t.d.lock);
	return 0;
}

static struct op *request(void)
{
	struct op *op = calloc(1, sizeof(*op));
	op->d = &t.d;
	return op;
}

/* The state the store holds for the sandbox, as a restarted spaced would read it. */
static enum sb_state recorded(void)
{
	struct store *again;
	char db[128];
	snprintf(db, sizeof(db), "%s/state.db", t.dir);
	assert_int_equal(store_open(db, &again), 0);
	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(again, &list), 0);
	store_close(again);
	assert_non_null(list);
	assert_null(list->next);
	enum sb_state s = list->state;
	peer_init(list); /* as adoption sets it up, to be freed as any sandbox is */
	sandbox_free(list);
	return s;
}

/* Waits, d->lock held, until every job ended (what spaced's exit waits for too). */
static void jobs_end(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += JOB_DEADLINE_S;
	while (t.d.jobs > 0)
		assert_int_not_equal(daemon_wait(&t.d, &until), ETIMEDOUT);
}

static void test_refused_transitions_name_the_state_and_change_nothing(void **state)
{
	unsigned refused = 0;
	for (int s = 0; s < SB_NSTATES; s++) {
		for (int a = ACT_PAUSE; a <= ACT_SUSPEND; a++) {
			enum sb_state via;
			if (state_begin((enum sb_state)s, (enum sb_action)a, &via) != STATE_ILLEGAL)
				continue;
			t.sb->state = (enum sb_state)s;
			struct op *op = request();
			struct err e = { 0 };
			daemon_lock(&t.d);
			int rc = lifecycle_start(&t.d, t.sb, (enum sb_action)a, op, &e);
			daemon_unlock(&t.d);
			assert_int_equal(rc, -EBUSY);
			assert_int_equal(e.kind, ERR_CONFLICT);
			assert_string_equal(e.state, sb_state_name((enum sb_state)s));
			char want[160];
			snprintf(want, sizeof(want), "sandbox 0123456789ab is %s and cannot be %s now",
				 sb_state_name((enum sb_state)s), verbs[a]);
			assert_string_equal(e.msg, want);
			assert_int_equal(t.sb->state, s);
			assert_int_equal(t.d.jobs, 0);
			assert_false(op->done);
			assert_int_equal(op->answer, ANSWER_OK);
			op_free(op);
			refused++;
		}
	}
	assert_true(refused > 0);
	assert_int_equal(t.pauses + t.resumes, 0);
	assert_int_equal(recorded(), SB_RUNNING); /* as setup recorded it: nothing written */
}

static void test_asking_for_the_state_that_holds_answers_at_once(void **state)
{
	static const struct {
		enum sb_state s;
		enum sb_action a;
	} already[] = {
		{ SB_RUNNING, ACT_RESUME },   { SB_PAUSED, ACT_PAUSE },       { SB_SUSPENDED, ACT_SUSPEND },
		{ SB_PAUSING, ACT_PAUSE },    { SB_RESUMING, ACT_RESUME },    { SB_SUSPENDING, ACT_SUSPEND },
	};
	for (size_t i = 0; i < sizeof(already) / sizeof(already[0]); i++) {
		t.sb->state = already[i].s;
		struct op *op = request();
		struct err e = { 0 };
		daemon_lock(&t.d);
		assert_int_equal(lifecycle_start(&t.d, t.sb, already[i].a, op, &e), LIFECYCLE_ANSWERED);
		daemon_unlock(&t.d);
		assert_int_equal(e.kind, ERR_NONE);
		assert_int_equal(op->answer, ANSWER_OK);
		assert_string_equal(json_string_value(json_object_get(op->json, "state")), sb_state_name(already[i].s));
		assert_int_equal(t.sb->state, already[i].s);
		assert_int_equal(t.d.jobs, 0);
		op_free(op);
	}
	assert_int_equal(t.pauses + t.resumes, 0);
}

static void test_pause_then_resume(void **state)
{
	struct op *op = request();
	struct err e = { 0 };
	daemon_lock(&t.d);
	assert_int_equal(lifecycle_start(&t.d, t.sb, ACT_PAUSE, op, &e), 0);
	assert_int_equal(t.sb->state, SB_PAUSING); /* at once: nothing else may begin on it */
	struct op *second = request();
	struct err busy = { 0 };
	assert_int_equal(lifecycle_start(&t.d, t.sb, ACT_SUSPEND, second, &busy), -EBUSY);
	assert_string_equal(busy.state, "pausing");
	jobs_end();
	assert_true(op->done);
	assert_int_equal(op->answer, ANSWER_OK);
	assert_int_equal(t.sb->state, SB_PAUSED);
	assert_string_equal(json_string_value(json_object_get(op->json, "state")), "paused");
	daemon_unlock(&t.d);
	assert_int_equal(t.pauses, 1);
	assert_int_equal(t.seen_in, SB_PAUSING);
	assert_int_equal(recorded(), SB_PAUSED);
	op_free(op);
	op_free(second);

	op = request();
	daemon_lock(&t.d);
	assert_int_equal(lifecycle_start(&t.d, t.sb, ACT_RESUME, op, &e), 0);
	assert_int_equal(t.sb->state, SB_RESUMING);
	jobs_end();
	assert_int_equal(op->answer, ANSWER_OK);
	assert_int_equal(t.sb->state, SB_RUNNING);
	daemon_unlock(&t.d);
	assert_int_equal(t.resumes, 1);
	assert_int_equal(t.seen_in, SB_RESUMING);
	assert_int_equal(recorded(), SB_RUNNING);
	op_free(op);
}

static void test_a_refused_pause_leaves_it_running(void **state)
{
	t.refuse = EIO;
	struct op *op = request();
	struct err e = { 0 };
	daemon_lock(&t.d);
	assert_int_equal(lifecycle_start(&t.d, t.sb, ACT_PAUSE, op, &e), 0);
	jobs_end();
	assert_true(op->done);
	assert_int_equal(op->err.kind, ERR_INTERNAL);
	assert_string_equal(op->err.msg, "the runtime said no");
	assert_int_equal(t.sb->state, SB_RUNNING);
	daemon_unlock(&t.d);
	assert_int_equal(recorded(), SB_RUNNING);
	op_free(op);

	/* and a refused resume of a paused one leaves it paused */
	t.refuse = 0;
	op = request();
	daemon_lock(&t.d);
	assert_int_equal(lifecycle_start(&t.d, t.sb, ACT_PAUSE, op, &e), 0);
	jobs_end();
	daemon_unlock(&t.d);
	op_free(op);
	t.refuse = EIO;
	op = request();
	daemon_lock(&t.d);
	assert_int_equal(lifecycle_start(&t.d, t.sb, ACT_RESUME, op, &e), 0);
	jobs_end();
	assert_int_equal(op->err.kind, ERR_INTERNAL);
	assert_int_equal(t.sb->state, SB_PAUSED);
	daemon_unlock(&t.d);
	assert_int_equal(recorded(), SB_PAUSED);
	op_free(op);
}

static void test_sync_and_timeouts_only_in_a_stable_state(void **state)
{
	for (int s = 0; s < SB_NSTATES; s++) {
		if (s == SB_RUNNING || s == SB_PAUSED || s == SB_SUSPENDED)
			continue;
		t.sb->state = (enum sb_state)s;
		t.sb->timeout_s = 300;
		struct err e = { 0 };
		struct op *op = request();
		daemon_lock(&t.d);
		assert_int_equal(lifecycle_sync(&t.d, t.sb, op, &e), -EBUSY);
		assert_int_equal(e.kind, ERR_CONFLICT);
		assert_string_equal(e.state, sb_state_name((enum sb_state)s));
		struct err te = { 0 };
		struct sb_timeouts change = { .set_timeout = true, .timeout_s = 5 };
		assert_int_equal(lifecycle_set_timeouts(&t.d, t.sb, &change, op, &te), -EBUSY);
		daemon_unlock(&t.d);
		assert_int_equal(te.kind, ERR_CONFLICT);
		assert_string_equal(te.state, sb_state_name((enum sb_state)s));
		assert_true(t.sb->timeout_s == 300); /* unchanged */
		assert_int_equal(t.d.jobs, 0);
		op_free(op);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_refused_transitions_name_the_state_and_change_nothing),
		T(test_asking_for_the_state_that_holds_answers_at_once),
		T(test_pause_then_resume),
		T(test_a_refused_pause_leaves_it_running),
		T(test_sync_and_timeouts_only_in_a_stable_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

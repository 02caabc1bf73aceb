/*
 * tests/unit/daemon/core/test_sandbox.c - the registry of sandboxes (daemon/core/sandbox.c):
 * a sandbox is found by its id until it is removed, in the order it came; a new one's id is
 * one no sandbox has; a tenant owns at most TENANT_MAX_SANDBOXES and its count is its own; a
 * walk of the registry goes on past a sandbox it removes; a sandbox takes requests only while
 * it runs with its agent connected; a failed one is recorded and its requests are failed; a
 * retired one is freed only once no job holds it.
 *
 * What the registry calls outward are fakes below that record what they were given: the store
 * (store_save_now), the agent's channel and connection (chan_close, peer_ready), the requests
 * (op_fail_list, op_fail_process_requests), d->lock, the I/O thread's wake-up, and the kernel's
 * randomness, which a test sets to make an id come up twice.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <cmocka.h>

#include "daemon/core/isolation.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"
#include "daemon/core/sandbox.h"
#include "daemon/core/sandbox_private.h"
#include "daemon/driver/driver.h"
#include "daemon/store/store.h"

static struct {
	struct daemon d;
	bool agent_ready;
	unsigned closed, wakes, saves, failed_lists;
	enum sb_state saved_state;
	struct err failed_with;
	const uint8_t *random; /* the bytes getrandom gives, in order (set by the test that draws) */
	size_t random_left;
} f;

ssize_t getrandom(void *buf, size_t n, unsigned int flags)
{
	assert_true(f.random != NULL && f.random_left >= n);
	memcpy(buf, f.random, n);
	f.random += n;
	f.random_left -= n;
	return (ssize_t)n;
}

void chan_close(struct chan *c)
{
	f.closed++;
}

void loop_wake(struct loop *l)
{
	assert_ptr_equal(l, &f.d.loop);
	f.wakes++;
}

void daemon_lock(struct daemon *d)
{
	pthread_mutex_lock(&d->lock);
}

void daemon_unlock(struct daemon *d)
{
	pthread_mutex_unlock(&d->lock);
}

bool peer_ready(const struct sandbox *sb)
{
	return f.agent_ready;
}

int store_save_now(struct store *st, struct sandbox *sb)
{
	f.saves++;
	f.saved_state = sb->state;
	return 0;
}

/* Requests are failed by unlinking them from the list: the fake empties it. */
void op_fail_list(struct op **head, const struct err *e)
{
	f.failed_lists++;
	f.failed_with = *e;
	*head = NULL;
}

void op_fail_process_requests(struct sandbox *sb, const struct err *e)
{
	f.failed_lists++;
	f.failed_with = *e;
}

static int setup(void **state)
{
	memset(&f, 0, sizeof(f));
	pthread_mutex_init(&f.d.lock, NULL);
	return 0;
}

static int teardown(void **state)
{
	while (f.d.sandboxes) {
		struct sandbox *sb = f.d.sandboxes;
		sandbox_registry_remove(&f.d, sb);
		sandbox_free(sb);
	}
	pthread_mutex_destroy(&f.d.lock);
	return 0;
}

/* A sandbox as sandbox_new registers it: an id, an owner (NULL: the administrator). */
static struct sandbox *registered(const char *id, const char *tenant)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	sb->d = &f.d;
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	snprintf(sb->conf.tenant, sizeof(sb->conf.tenant), "%s", tenant ? tenant : "");
	sb->state = SB_RUNNING;
	sandbox_registry_add(&f.d, sb);
	return sb;
}

static void test_found_by_id_until_removed(void **state)
{
	struct sandbox *a = registered("aaaaaaaaaaaa", NULL);
	struct sandbox *b = registered("bbbbbbbbbbbb", "t1");
	struct sandbox *c = registered("cccccccccccc", "t2");
	assert_int_equal(f.d.nsandboxes, 3);
	assert_ptr_equal(sandbox_find(&f.d, "aaaaaaaaaaaa"), a);
	assert_ptr_equal(sandbox_find(&f.d, "bbbbbbbbbbbb"), b);
	assert_ptr_equal(sandbox_find(&f.d, "cccccccccccc"), c);
	assert_null(sandbox_find(&f.d, "dddddddddddd"));
	assert_null(sandbox_find(&f.d, "bbbbbbbbbbb")); /* a prefix is not an id */
	assert_null(sandbox_find(&f.d, ""));

	sandbox_registry_remove(&f.d, b);
	assert_int_equal(f.d.nsandboxes, 2);
	assert_null(sandbox_find(&f.d, "bbbbbbbbbbbb"));
	assert_ptr_equal(sandbox_find(&f.d, "aaaaaaaaaaaa"), a);
	assert_ptr_equal(sandbox_find(&f.d, "cccccccccccc"), c);
	/* removing it again, or one never added, changes nothing */
	sandbox_registry_remove(&f.d, b);
	assert_int_equal(f.d.nsandboxes, 2);
	/* oldest first */
	assert_ptr_equal(f.d.sandboxes, a);
	assert_ptr_equal(a->next, c);
	assert_null(c->next);
	sandbox_free(b);
}

static void test_a_walk_goes_on_past_what_it_removes(void **state)
{
	/* as a walk that deletes what it finds (sandbox_delete_marked) goes over the registry */
	char id[SANDBOX_ID_LEN + 1];
	for (int i = 0; i < 6; i++) {
		snprintf(id, sizeof(id), "%012d", i);
		registered(id, NULL);
	}
	struct sandbox *gone = NULL;
	int seen = 0;
	for (struct sandbox *sb = f.d.sandboxes; sb; sb = sb->next) {
		assert_int_equal(atoi(sb->id), seen);
		seen++;
		if (seen % 2 == 0) {
			sandbox_registry_remove(&f.d, sb);
			sb->grave = gone; /* kept until the walk is over, as a retired sandbox is */
			gone = sb;
		}
	}
	assert_int_equal(seen, 6);
	assert_int_equal(f.d.nsandboxes, 3);
	int left = 0;
	for (struct sandbox *sb = f.d.sandboxes; sb; sb = sb->next, left++)
		assert_int_equal(atoi(sb->id), 2 * left);
	assert_int_equal(left, 3);
	while (gone) {
		struct sandbox *next = gone->grave;
		assert_null(sandbox_find(&f.d, gone->id));
		sandbox_free(gone);
		gone = next;
	}
}

static void test_a_new_id_is_one_no_sandbox_has(void **state)
{
	registered("0a0b0c0d0e0f", NULL);
	/* the first draw repeats that id, the second does not */
	static const uint8_t draws[] = { 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01 };
	f.random = draws;
	f.random_left = sizeof(draws);
	char id[SANDBOX_ID_LEN + 1];
	assert_int_equal(sandbox_registry_pick_id(&f.d, id), 0);
	assert_string_equal(id, "deadbeef0001");
	assert_int_equal(f.random_left, 0);
	assert_null(sandbox_find(&f.d, id));
}

static void test_a_tenant_owns_at_most_its_limit(void **state)
{
	struct err e = { 0 };
	char id[SANDBOX_ID_LEN + 1];
	for (int i = 0; i < TENANT_MAX_SANDBOXES - 1; i++) {
		snprintf(id, sizeof(id), "a%011d", i);
		registered(id, "alice");
	}
	for (int i = 0; i < 3 * TENANT_MAX_SANDBOXES; i++) { /* the administrator's are no one's count */
		snprintf(id, sizeof(id), "r%011d", i);
		registered(id, NULL);
	}
	registered("b00000000000", "bob");
	assert_int_equal(sandbox_room(&f.d, "alice", &e), 0); /* one short of the limit */
	assert_int_equal(e.kind, ERR_NONE);
	struct sandbox *last = registered("a99999999999", "alice");
	assert_int_equal(sandbox_room(&f.d, "alice", &e), -EAGAIN);
	assert_int_equal(e.kind, ERR_TOO_MANY);
	char want[96];
	snprintf(want, sizeof(want), "a tenant may have at most %d sandboxes", TENANT_MAX_SANDBOXES);
	assert_string_equal(e.msg, want);
	/* another tenant, and the administrator, are not held back by alice's */
	struct err other = { 0 };
	assert_int_equal(sandbox_room(&f.d, "bob", &other), 0);
	assert_int_equal(sandbox_room(&f.d, "alice2", &other), 0);
	assert_int_equal(sandbox_room(&f.d, "", &other), 0);
	assert_int_equal(sandbox_room(&f.d, NULL, &other), 0);
	assert_int_equal(other.kind, ERR_NONE);
	/* one removed: room again */
	sandbox_registry_remove(&f.d, last);
	sandbox_free(last);
	struct err again = { 0 };
	assert_int_equal(sandbox_room(&f.d, "alice", &again), 0);
}

static void test_requests_only_while_running_with_its_agent(void **state)
{
	struct sandbox *sb = registered("aaaaaaaaaaaa", NULL);
	f.agent_ready = true;
	struct err e = { 0 };
	assert_true(sandbox_usable(sb, &e));
	assert_int_equal(e.kind, ERR_NONE);
	for (int s = 0; s < SB_NSTATES; s++) {
		if (s == SB_RUNNING)
			continue;
		sb->state = (enum sb_state)s;
		struct err refused = { 0 };
		assert_false(sandbox_usable(sb, &refused));
		assert_int_equal(refused.kind, ERR_CONFLICT);
		assert_string_equal(refused.state, sb_state_name((enum sb_state)s));
		char want[64];
		snprintf(want, sizeof(want), "sandbox aaaaaaaaaaaa is %s", sb_state_name((enum sb_state)s));
		assert_string_equal(refused.msg, want);
	}
	sb->state = SB_RUNNING;
	f.agent_ready = false; /* running, but its agent has not said hello */
	struct err waiting = { 0 };
	assert_false(sandbox_usable(sb, &waiting));
	assert_int_equal(waiting.kind, ERR_UNAVAILABLE);
	assert_string_equal(waiting.state, "");
}

static void test_a_failed_sandbox_is_recorded_and_its_requests_fail(void **state)
{
	struct sandbox *sb = registered("aaaaaaaaaaaa", "t1");
	struct op *waiting = (struct op *)&f; /* never dereferenced: the fake only empties the list */
	sb->ops = waiting;
	sb->deferred = waiting;
	sandbox_fail(&f.d, sb, "its runtime died");
	assert_int_equal(sb->state, SB_FAILED);
	assert_string_equal(sb->reason, "its runtime died");
	assert_int_equal(f.saves, 1);
	assert_int_equal(f.saved_state, SB_FAILED); /* recorded as failed */
	assert_int_equal(f.failed_lists, 3);        /* deferred, waiting on its agent, on its processes */
	assert_null(sb->ops);
	assert_null(sb->deferred);
	assert_int_equal(f.failed_with.kind, ERR_SANDBOX_FAILED);
	assert_string_equal(f.failed_with.state, "failed");
	assert_string_equal(f.failed_with.msg, "sandbox aaaaaaaaaaaa failed: its runtime died");
	assert_ptr_equal(sandbox_find(&f.d, "aaaaaaaaaaaa"), sb); /* kept, files and all, to be deleted */
}

static void test_a_retired_sandbox_is_freed_once_no_job_holds_it(void **state)
{
	struct sandbox *held = registered("aaaaaaaaaaaa", NULL);
	struct sandbox *free_now = registered("bbbbbbbbbbbb", NULL);
	held->refs = 1; /* a job still uses it */
	sandbox_registry_remove(&f.d, held);
	sandbox_retire(&f.d, held);
	sandbox_registry_remove(&f.d, free_now);
	sandbox_retire(&f.d, free_now);
	assert_true(held->dead);
	assert_int_equal(f.closed, 2); /* its channel closes at once */
	assert_int_equal(f.wakes, 2);  /* the I/O thread is told */
	assert_null(sandbox_find(&f.d, "aaaaaaaaaaaa"));

	sandbox_reap(&f.d);
	assert_int_equal(f.closed, 3); /* free_now was freed */
	assert_ptr_equal(f.d.graveyard, held);
	assert_null(held->grave);
	assert_string_equal(held->id, "aaaaaaaaaaaa"); /* still whole for its job */

	sandbox_reap(&f.d);
	assert_ptr_equal(f.d.graveyard, held); /* not while the job holds it */
	held->refs = 0;
	sandbox_reap(&f.d);
	assert_null(f.d.graveyard);
	assert_int_equal(f.closed, 4);
}

static int init_ok(struct daemon *d, struct driver **out, struct err *e)
{
	*out = NULL;
	return 0;
}

static const struct driver_ops gvisor = { .name = "gvisor", .init = init_ok };

static const struct driver_ops *only_gvisor(const char *name)
{
	return strcmp(name, "gvisor") == 0 ? &gvisor : NULL;
}

static void test_the_driver_of_a_kind_this_host_lacks(void **state)
{
	struct err e = { 0 };
	assert_int_equal(isolation_init(&f.d, "gvisor", only_gvisor, &e), 0);
	struct sandbox *g = registered("aaaaaaaaaaaa", NULL);
	snprintf(g->conf.isolation, sizeof(g->conf.isolation), "gvisor");
	struct sandbox *m = registered("bbbbbbbbbbbb", NULL);
	snprintf(m->conf.isolation, sizeof(m->conf.isolation), "microvm");
	struct sandbox *u = registered("cccccccccccc", NULL);
	snprintf(u->conf.isolation, sizeof(u->conf.isolation), "zone");

	const struct driver_slot *slot = sandbox_driver(&f.d, g);
	assert_non_null(slot);
	assert_ptr_equal(slot->ops, &gvisor);
	assert_null(sandbox_driver(&f.d, m));
	assert_null(sandbox_driver(&f.d, u));

	assert_int_equal(sandbox_unrunnable(&f.d, m, &e), -ENOTSUP);
	assert_int_equal(e.kind, ERR_ISOLATION_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "sandbox bbbbbbbbbbbb is isolated by microvm, which is unavailable on this host"));
	assert_string_equal(sandbox_unrunnable_why(&f.d, u), "this spaced does not know that kind");
}

static void test_idle_clock_and_lifetime(void **state)
{
	struct sandbox *sb = registered("aaaaaaaaaaaa", NULL);
	int64_t before = now_ms();
	sb->timeout_s = 2.5;
	sandbox_touch(sb);
	assert_true(sb->deadline_ms >= before + 2500 && sb->deadline_ms <= now_ms() + 2500);
	sb->timeout_s = 0;
	sandbox_touch(sb); /* no idle timeout: never expires while idle */
	assert_int_equal(sb->deadline_ms, 0);
	sandbox_set_lifetime(sb, 60);
	assert_true(sb->expires_ms >= before + 60000 && sb->expires_ms <= now_ms() + 60000);
	assert_true(sb->lifetime_s == 60);
	sandbox_set_lifetime(sb, 0);
	assert_int_equal(sb->expires_ms, 0);

}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_found_by_id_until_removed),
		T(test_a_walk_goes_on_past_what_it_removes),
		T(test_a_new_id_is_one_no_sandbox_has),
		T(test_a_tenant_owns_at_most_its_limit),
		T(test_requests_only_while_running_with_its_agent),
		T(test_a_failed_sandbox_is_recorded_and_its_requests_fail),
		T(test_a_retired_sandbox_is_freed_once_no_job_holds_it),
		T(test_the_driver_of_a_kind_this_host_lacks),
		T(test_idle_clock_and_lifetime),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * tests/unit/daemon/store/test_store.c - spaced's database (daemon/store/store.c):
 * what is recorded is what a restarted daemon loads, field by field;
 * a change is visible to another connection as soon as the call returns;
 * lookups of what is not there say so. Each test runs in its own temporary
 * directory under /tmp, removed afterwards. The schema's steps are test_schema.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include <sqlite3.h>

#include "daemon/store/schema.h"
#include "daemon/store/store.h"
#include "tests/unit/daemon/store/store_check.h"

/* Closes the database and opens it again, as a restarted daemon does. */
static void reopen(struct fixture *fx)
{
	store_close(fx->st);
	fx->st = NULL;
	assert_int_equal(store_open(fx->path, &fx->st), 0);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* A sandbox with every recorded field set to something other than its zero value. */
static struct sandbox *sandbox_make(const char *id, int64_t created_ms)
{
	struct sandbox *sb = calloc(1, sizeof(*sb));
	assert_non_null(sb);
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	sb->state = SB_RUNNING;
	snprintf(sb->conf.template, sizeof(sb->conf.template), "default");
	snprintf(sb->conf.isolation, sizeof(sb->conf.isolation), "microvm"); /* not the default: it must be written */
	snprintf(sb->conf.tenant, sizeof(sb->conf.tenant), "acme");
	sb->conf.cpus = 3;
	sb->conf.memory_mb = 1536;
	sb->conf.disk_mb = 4096;
	sb->timeout_s = 12.5;
	sb->lifetime_s = 3600.25;
	sb->timeout_kill = true;
	sb->keepalive = true;
	sb->remaining_ms = 5000000000LL; /* beyond 32 bits */
	sb->conf.env = json_pack("{s:s, s:s}", "LANG", "C.UTF-8", "QUOTE", "it's \"quoted\"; --");
	sb->conf.metadata = json_pack("{s:s}", "owner", "caf\xc3\xa9");
	sb->conf.created_ms = created_ms;
	sb->expires_ms = created_ms + 7200000; /* moved since its creation: not created_ms + lifetime */
	sb->conf.nvolumes = 2;
	snprintf(sb->conf.volumes[0].name, sizeof(sb->conf.volumes[0].name), "data");
	snprintf(sb->conf.volumes[0].path, sizeof(sb->conf.volumes[0].path), "/data");
	snprintf(sb->conf.volumes[1].name, sizeof(sb->conf.volumes[1].name), "models");
	snprintf(sb->conf.volumes[1].path, sizeof(sb->conf.volumes[1].path), "/srv/it's \"here\"");
	sb->conf.volumes[1].read_only = true;
	assert_non_null(sb->conf.env);
	assert_non_null(sb->conf.metadata);
	return sb;
}

static const struct sandbox *sandbox_find(const struct sandbox *sb, const char *id)
{
	for (; sb; sb = sb->next)
		if (strcmp(sb->id, id) == 0)
			return sb;
	return NULL;
}

/* Every field store_put_sandbox records comes back as it was. */
static void expect_same_sandbox(const struct sandbox *got, const struct sandbox *want)
{
	assert_string_equal(got->id, want->id);
	assert_int_equal(got->state, want->state);
	assert_string_equal(got->reason, want->reason);
	assert_string_equal(got->conf.template, want->conf.template);
	assert_string_equal(got->conf.isolation, want->conf.isolation);
	assert_string_equal(got->conf.tenant, want->conf.tenant);
	assert_int_equal(got->conf.cpus, want->conf.cpus);
	assert_int_equal(got->conf.memory_mb, want->conf.memory_mb);
	assert_int_equal(got->conf.disk_mb, want->conf.disk_mb);
	assert_true(got->timeout_s == want->timeout_s);
	assert_true(got->lifetime_s == want->lifetime_s);
	assert_int_equal(got->timeout_kill, want->timeout_kill);
	assert_int_equal(got->keepalive, want->keepalive);
	assert_int_equal(got->remaining_ms, want->remaining_ms);
	assert_int_equal(got->conf.created_ms, want->conf.created_ms);
	assert_int_equal(got->expires_ms, want->expires_ms);
	assert_true(json_equal(got->conf.env, want->conf.env));
	assert_true(json_equal(got->conf.metadata, want->conf.metadata));
	assert_int_equal(got->conf.nvolumes, want->conf.nvolumes);
	for (int i = 0; i < want->conf.nvolumes; i++) {
		assert_string_equal(got->conf.volumes[i].name, want->conf.volumes[i].name);
		assert_string_equal(got->conf.volumes[i].path, want->conf.volumes[i].path);
		assert_int_equal(got->conf.volumes[i].read_only, want->conf.volumes[i].read_only);
	}
}

static void test_open_creates_the_database(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(access(fx->path, F_OK), 0);
	struct sandbox *list = (struct sandbox *)1;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_null(list);
	json_t *a = store_list_snapshots(fx->st);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	a = store_list_templates(fx->st);
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
}

static void test_open_failures(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	char path[256];
	snprintf(path, sizeof(path), "%s/no/such/dir/space.db", fx->dir);
	assert_true(store_open(path, &st) < 0);
	assert_null(st);

	/* a file that is not a database is refused, not overwritten */
	snprintf(path, sizeof(path), "%s/garbage.db", fx->dir);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	for (int i = 0; i < 512; i++)
		fputs("not a database ", f);
	fclose(f);
	assert_true(store_open(path, &st) < 0);
	assert_null(st);
}

/* The database's descriptors are not inherited by what spaced runs (runsc, mount). */
static void test_descriptors_close_on_exec(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("0123456789ab", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0); /* opens the WAL too */
	sandbox_list_free(sb);

	int seen = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char link[64], target[PATH_MAX];
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, fx->dir, strlen(fx->dir)) != 0)
			continue;
		seen++;
		int fl = fcntl(fd, F_GETFD);
		if (!(fl & FD_CLOEXEC))
			fail_msg("%s (fd %d) is inherited across exec", target, fd);
	}
	closedir(d);
	assert_true(seen >= 2); /* the database and its WAL at least */
}

static void test_sandbox_round_trip(void **state)
{
	struct fixture *fx = *state;
	/* recorded newest first, loaded oldest first */
	struct sandbox *b = sandbox_make("bbbbbbbbbbbb", 2000);
	struct sandbox *a = sandbox_make("aaaaaaaaaaaa", 1000);
	a->state = SB_SUSPENDED;
	a->timeout_kill = false;
	a->keepalive = false;
	snprintf(a->conf.tenant, sizeof(a->conf.tenant), "%s", ""); /* the administrator's */
	json_object_clear(a->conf.metadata);
	assert_int_equal(store_put_sandbox(fx->st, b), 0);
	assert_int_equal(store_put_sandbox(fx->st, a), 0);

	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(sandbox_count(list), 2);
	expect_same_sandbox(list, a);
	expect_same_sandbox(list->next, b);
	sandbox_list_free(list);

	/* recording it again replaces it */
	b->conf.cpus = 1;
	b->state = SB_PAUSED;
	json_object_set_new(b->conf.env, "NEW", json_string("1"));
	assert_int_equal(store_put_sandbox(fx->st, b), 0);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(sandbox_count(list), 2);
	expect_same_sandbox(sandbox_find(list, b->id), b);
	sandbox_list_free(list);

	sandbox_list_free(a);
	sandbox_list_free(b);
}

/* Gives sb state s (and reason) and records it, as spaced does. */
static int save(struct store *st, struct sandbox *sb, enum sb_state s, const char *reason)
{
	sb->state = s;
	snprintf(sb->reason, sizeof(sb->reason), "%s", reason ? reason : "");
	return store_save_now(st, sb);
}

static void test_set_state(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("0123456789ab", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0);

	struct sandbox *list = NULL;
	assert_int_equal(save(fx->st, sb, SB_FAILED, "runsc: exit status 1"), 0);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->state, SB_FAILED);
	assert_string_equal(list->reason, "runsc: exit status 1");
	sandbox_list_free(list);

	/* a state other than failed records no reason, and clears the old one */
	assert_int_equal(save(fx->st, sb, SB_DELETING, "left over"), 0);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->state, SB_DELETING);
	assert_string_equal(list->reason, "");
	sandbox_list_free(list);

	/* every state the machine has survives the round trip */
	for (int s = 0; s < SB_NSTATES; s++) {
		assert_int_equal(save(fx->st, sb, (enum sb_state)s, NULL), 0);
		assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
		assert_int_equal(list->state, s);
		sandbox_list_free(list);
	}

	/* a state this daemon does not know loads as failed, never as running */
	raw_sql(fx, "UPDATE sandboxes SET state = 'flying'");
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->state, SB_FAILED);
	sandbox_list_free(list);

	/* a reason longer than the sandbox holds loads cut to fit, terminated */
	char sql[400];
	snprintf(sql, sizeof(sql), "UPDATE sandboxes SET state = 'failed', reason = '%0300d'", 7);
	raw_sql(fx, sql);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(strlen(list->reason), sizeof(list->reason) - 1);
	sandbox_list_free(list);

	/* a sandbox that is not recorded: nothing to change, and nothing appears */
	struct sandbox *ghost = sandbox_make("ffffffffffff", 1000);
	assert_int_equal(save(fx->st, ghost, SB_RUNNING, NULL), 0);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(sandbox_count(list), 1);
	assert_null(sandbox_find(list, "ffffffffffff"));
	sandbox_list_free(list);
	sandbox_list_free(ghost);
	sandbox_list_free(sb);
}

/* Records are written with spaced's lock released, so two may land out of the order they
 * were taken: the newer one stays, whichever is written last, across a reopen too, and a
 * late record of a sandbox deleted meanwhile does not bring its row back. */
static void test_records_land_newest_last(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("0123456789ab", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0);
	struct sb_record older, newer;
	sb->state = SB_SUSPENDED;
	store_record(sb, &older);
	sb->state = SB_RESUMING;
	store_record(sb, &newer);
	assert_true(newer.seq > older.seq);
	assert_int_equal(store_save(fx->st, &newer), 0);
	assert_int_equal(store_save(fx->st, &older), 0); /* late: kept out */

	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->state, SB_RESUMING);
	sandbox_list_free(list);

	/* the numbering goes on from what was recorded after a restart */
	reopen(fx);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->seq, newer.seq);
	list->state = SB_RUNNING;
	assert_int_equal(store_save_now(fx->st, list), 0);
	sandbox_list_free(list);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->state, SB_RUNNING);
	sandbox_list_free(list);

	/* deleted, then a late record arrives: it stays deleted */
	assert_int_equal(store_delete_sandbox(fx->st, sb->id), 0);
	sb->seq = 1000;
	assert_int_equal(save(fx->st, sb, SB_SUSPENDED, NULL), 0);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_null(list);
	sandbox_list_free(sb);
}

static void test_delete_sandbox(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *a = sandbox_make("aaaaaaaaaaaa", 1000);
	struct sandbox *b = sandbox_make("bbbbbbbbbbbb", 2000);
	assert_int_equal(store_put_sandbox(fx->st, a), 0);
	assert_int_equal(store_put_sandbox(fx->st, b), 0);

	assert_int_equal(store_delete_sandbox(fx->st, a->id), 0);
	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(sandbox_count(list), 1);
	expect_same_sandbox(list, b);
	sandbox_list_free(list);

	/* deleting again, or what never was, changes nothing */
	assert_int_equal(store_delete_sandbox(fx->st, a->id), 0);
	assert_int_equal(store_delete_sandbox(fx->st, "ffffffffffff"), 0);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(sandbox_count(list), 1);
	sandbox_list_free(list);

	sandbox_list_free(a);
	sandbox_list_free(b);
}

/* The store's promise: a change is committed when the call returns, so another connection
 * (a restarted daemon) sees it without the first one closing. */
static void test_committed_on_return(void **state)
{
	struct fixture *fx = *state;
	struct store *other = NULL;
	assert_int_equal(store_open(fx->path, &other), 0);
	struct sandbox *sb = sandbox_make("0123456789ab", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0);
	assert_int_equal(save(fx->st, sb, SB_PAUSED, NULL), 0);

	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(other, &list), 0);
	assert_int_equal(sandbox_count(list), 1);
	assert_int_equal(list->state, SB_PAUSED);
	sandbox_list_free(list);
	store_close(other);
	sandbox_list_free(sb);
}

/* A snapshot row carries the sandbox's shape, its name (or null) and when it was taken. */
static void expect_snapshot(json_t *s, const char *id, const struct sandbox *sb, const char *name)
{
	assert_non_null(s);
	assert_string_equal(json_string_value(json_object_get(s, "id")), id);
	assert_string_equal(json_string_value(json_object_get(s, "sandbox_id")), sb->id);
	if (name)
		assert_string_equal(json_string_value(json_object_get(s, "name")), name);
	else
		assert_true(json_is_null(json_object_get(s, "name")));
	assert_string_equal(json_string_value(json_object_get(s, "template")), sb->conf.template);
	assert_int_equal(json_integer_value(json_object_get(s, "cpus")), sb->conf.cpus);
	assert_int_equal(json_integer_value(json_object_get(s, "memory_mb")), sb->conf.memory_mb);
	assert_int_equal(json_integer_value(json_object_get(s, "disk_mb")), sb->conf.disk_mb);
	assert_true(json_equal(json_object_get(s, "env"), sb->conf.env));
	assert_true(json_equal(json_object_get(s, "metadata"), sb->conf.metadata));
	assert_string_equal(json_string_value(json_object_get(s, "tenant")), sb->conf.tenant);
	assert_string_equal(json_string_value(json_object_get(s, "isolation")), sb->conf.isolation);
	const char *when = json_string_value(json_object_get(s, "created_at"));
	assert_non_null(when);
	/* 2024-05-01T12:34:56Z, and about now */
	struct tm tm = { 0 };
	const char *end = strptime(when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	assert_non_null(end);
	assert_int_equal(*end, '\0');
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now); /* time() may lag the clock the store reads */
	time_t t = timegm(&tm);
	assert_true(t <= now.tv_sec && t >= now.tv_sec - 60);
}

static void test_snapshots(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("0123456789ab", 1000);
	assert_null(store_get_snapshot(fx->st, "s1"));

	assert_int_equal(store_put_snapshot(fx->st, "s1", sb, "before-upgrade", 0), 0);
	sleep_ms(5); /* listed in the order taken, to the millisecond */
	assert_int_equal(store_put_snapshot(fx->st, "s2", sb, NULL, 0), 0);
	/* a snapshot id is recorded once */
	assert_true(store_put_snapshot(fx->st, "s1", sb, "again", 0) < 0);

	json_t *s = store_get_snapshot(fx->st, "s1");
	expect_snapshot(s, "s1", sb, "before-upgrade");
	json_decref(s);
	s = store_get_snapshot(fx->st, "s2");
	expect_snapshot(s, "s2", sb, NULL);
	json_decref(s);

	json_t *all = store_list_snapshots(fx->st);
	assert_int_equal(json_array_size(all), 2);
	expect_snapshot(json_array_get(all, 0), "s1", sb, "before-upgrade");
	expect_snapshot(json_array_get(all, 1), "s2", sb, NULL);
	json_decref(all);

	assert_int_equal(store_delete_snapshot(fx->st, "s1"), 0);
	assert_null(store_get_snapshot(fx->st, "s1"));
	assert_int_equal(store_delete_snapshot(fx->st, "s1"), 0); /* already gone: nothing to do */
	all = store_list_snapshots(fx->st);
	assert_int_equal(json_array_size(all), 1);
	expect_snapshot(json_array_get(all, 0), "s2", sb, NULL);
	json_decref(all);
	sandbox_list_free(sb);
}

/* A snapshot outlives the sandbox it was taken from. */
static void test_snapshot_outlives_its_sandbox(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("0123456789ab", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0);
	assert_int_equal(store_put_snapshot(fx->st, "s1", sb, "x", 0), 0);
	assert_int_equal(store_delete_sandbox(fx->st, sb->id), 0);
	json_t *s = store_get_snapshot(fx->st, "s1");
	expect_snapshot(s, "s1", sb, "x");
	json_decref(s);
	sandbox_list_free(sb);
}

#define HASH_A "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define HASH_B "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"

static void test_tokens(void **state)
{
	struct fixture *fx = *state;
	char tenant[64] = "untouched";
	assert_int_equal(store_token_tenant(fx->st, HASH_A, tenant, sizeof(tenant)), 0);
	assert_string_equal(tenant, "untouched");

	assert_int_equal(store_add_token(fx->st, HASH_A, "ci", "acme"), 0);
	assert_int_equal(store_add_token(fx->st, HASH_B, "", "globex"), 0);
	/* a hash is recorded once */
	assert_true(store_add_token(fx->st, HASH_A, "again", "other") < 0);

	assert_int_equal(store_token_tenant(fx->st, HASH_A, tenant, sizeof(tenant)), 1);
	assert_string_equal(tenant, "acme");
	assert_int_equal(store_token_tenant(fx->st, HASH_B, tenant, sizeof(tenant)), 1);
	assert_string_equal(tenant, "globex");

	/* a hash off by its last character, a prefix, a longer one, an empty one: no token */
	char wrong[] = HASH_A;
	wrong[sizeof(wrong) - 2] = '9';
	strcpy(tenant, "untouched");
	assert_int_equal(store_token_tenant(fx->st, wrong, tenant, sizeof(tenant)), 0);
	assert_int_equal(store_token_tenant(fx->st, "9f86d081", tenant, sizeof(tenant)), 0);
	assert_int_equal(store_token_tenant(fx->st, HASH_A "00", tenant, sizeof(tenant)), 0);
	assert_int_equal(store_token_tenant(fx->st, "", tenant, sizeof(tenant)), 0);
	assert_string_equal(tenant, "untouched");

	/* a tenant that does not fit the caller's buffer is refused, never cut to another's name;
	 * one that just fits (with its NUL) is whole */
	char small[6] = "untou", fits[7];
	assert_int_equal(store_token_tenant(fx->st, HASH_B, small, sizeof(small)), -ENAMETOOLONG);
	assert_string_equal(small, "untou");
	assert_int_equal(store_token_tenant(fx->st, HASH_B, fits, sizeof(fits)), 1);
	assert_string_equal(fits, "globex");

	/* an administrator's token is one only once made so, and stays one */
	assert_int_equal(store_token_admin(fx->st, HASH_A), 0);
	assert_int_equal(store_token_set_admin(fx->st, HASH_A), 0);
	assert_int_equal(store_token_admin(fx->st, HASH_A), 1);
	assert_int_equal(store_token_admin(fx->st, HASH_B), 0);
	assert_int_equal(store_token_admin(fx->st, wrong), 0);

	reopen(fx);
	assert_int_equal(store_token_tenant(fx->st, HASH_A, tenant, sizeof(tenant)), 1);
	assert_string_equal(tenant, "acme");
	assert_int_equal(store_token_admin(fx->st, HASH_A), 1);
	assert_int_equal(store_token_admin(fx->st, HASH_B), 0);
}

static void test_templates(void **state)
{
	struct fixture *fx = *state;
	char path[256] = "untouched";
	assert_int_equal(store_template_path(fx->st, "default", path, sizeof(path)), -ENOENT);
	assert_string_equal(path, "untouched");

	assert_int_equal(store_put_template(fx->st, "python", "k2", "/cache/templates/k2/rootfs", "oci-archive:/x.tar",
					    "{\"env\":{\"A\":\"1\"},\"workdir\":\"/srv\"}"),
			 0);
	assert_int_equal(store_put_template(fx->st, "default", "k1", "/cache/templates/k1/rootfs", "debian", "{}"), 0);
	assert_int_equal(store_template_path(fx->st, "default", path, sizeof(path)), 0);
	assert_string_equal(path, "/cache/templates/k1/rootfs");
	assert_int_equal(store_template_path(fx->st, "defaul", path, sizeof(path)), -ENOENT);

	/* recording a name again points it at the new build */
	assert_int_equal(store_put_template(fx->st, "default", "k3", "/cache/templates/k3/rootfs", "debian", "{}"), 0);
	assert_int_equal(store_template_path(fx->st, "default", path, sizeof(path)), 0);
	assert_string_equal(path, "/cache/templates/k3/rootfs");

	/* listed by name, each with its key and when it was recorded */
	json_t *all = store_list_templates(fx->st);
	assert_int_equal(json_array_size(all), 2);
	json_t *t = json_array_get(all, 0);
	assert_string_equal(json_string_value(json_object_get(t, "name")), "default");
	assert_string_equal(json_string_value(json_object_get(t, "key")), "k3");
	assert_int_equal(strlen(json_string_value(json_object_get(t, "created_at"))),
			 strlen("2024-05-01T12:34:56Z"));
	t = json_array_get(all, 1);
	assert_string_equal(json_string_value(json_object_get(t, "name")), "python");
	assert_string_equal(json_string_value(json_object_get(t, "key")), "k2");
	assert_null(json_object_get(t, "path")); /* where it lives is the daemon's business */
	assert_string_equal(json_string_value(json_object_get(t, "source")), "oci-archive:/x.tar");
	assert_string_equal(json_string_value(json_object_get(json_object_get(t, "config"), "workdir")), "/srv");
	json_decref(all);

	/* its defaults, as recorded; none for a name not recorded */
	json_t *cfg = store_template_config(fx->st, "python");
	assert_string_equal(json_string_value(json_object_get(json_object_get(cfg, "env"), "A")), "1");
	json_decref(cfg);
	assert_null(store_template_config(fx->st, "nope"));
}

/* Everything recorded is there after the database is closed and opened again. */
static void test_reopen_keeps_everything(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *a = sandbox_make("aaaaaaaaaaaa", 1000);
	struct sandbox *b = sandbox_make("bbbbbbbbbbbb", 2000);
	snprintf(b->reason, sizeof(b->reason), "out of memory");
	b->state = SB_FAILED;
	assert_int_equal(store_put_sandbox(fx->st, a), 0);
	assert_int_equal(store_put_sandbox(fx->st, b), 0);
	assert_int_equal(save(fx->st, a, SB_SUSPENDED, NULL), 0);
	assert_int_equal(store_put_snapshot(fx->st, "s1", a, "snap", 0), 0);
	assert_int_equal(store_add_token(fx->st, HASH_A, "ci", "acme"), 0);
	assert_int_equal(store_put_template(fx->st, "default", "k1", "/t/k1/rootfs", "debian", "{}"), 0);

	reopen(fx);
	reopen(fx); /* opening an existing database twice changes nothing either */

	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(sandbox_count(list), 2);
	expect_same_sandbox(list, a);
	expect_same_sandbox(list->next, b);
	sandbox_list_free(list);

	json_t *s = store_get_snapshot(fx->st, "s1");
	expect_snapshot(s, "s1", a, "snap");
	json_decref(s);

	char tenant[64];
	assert_int_equal(store_token_tenant(fx->st, HASH_A, tenant, sizeof(tenant)), 1);
	assert_string_equal(tenant, "acme");

	char path[64];
	assert_int_equal(store_template_path(fx->st, "default", path, sizeof(path)), 0);
	assert_string_equal(path, "/t/k1/rootfs");
	sandbox_list_free(a);
	sandbox_list_free(b);
}

static void test_timeouts_change_alone(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("aaaaaaaaaaaa", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0);
	assert_int_equal(save(fx->st, sb, SB_SUSPENDED, NULL), 0);
	sb->timeout_s = 0;
	sb->lifetime_s = 60;
	sb->expires_ms = 99000;
	sb->timeout_kill = false;
	sb->remaining_ms = 0;
	sb->conf.cpus = 7; /* not a timeout: not written */
	assert_int_equal(store_put_timeouts(fx->st, sb), 0);
	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	sb->conf.cpus = 3;
	expect_same_sandbox(list, sb); /* and its state is still the one saved */
	sandbox_list_free(list);
	sandbox_list_free(sb);
}

/* A row written before lifetimes could move has no expires_ms: its lifetime counts from its creation. */
static void test_old_row_expires_a_lifetime_after_creation(void **state)
{
	struct fixture *fx = *state;
	struct sandbox *sb = sandbox_make("aaaaaaaaaaaa", 1000);
	assert_int_equal(store_put_sandbox(fx->st, sb), 0);
	raw_sql(fx, "UPDATE sandboxes SET expires_ms = 0, lifetime = 30");
	struct sandbox *list = NULL;
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->expires_ms, 31000);
	raw_sql(fx, "UPDATE sandboxes SET lifetime = 0");
	sandbox_list_free(list);
	assert_int_equal(store_load_sandboxes(fx->st, &list), 0);
	assert_int_equal(list->expires_ms, 0);
	sandbox_list_free(list);
	sandbox_list_free(sb);
}

/* Volumes: each tenant names its own (the same name in two tenants is two volumes, taken once in
 * each), counts and lists its own, and a removal frees the name in its tenant only. */
static void test_volumes(void **state)
{
	struct fixture *fx = *state;
	assert_int_equal(store_put_volume(fx->st, "data", "acme", 64, "{\"k\":\"v\"}"), 0);
	assert_int_equal(store_put_volume(fx->st, "data", "acme", 64, "{}"), -EEXIST);
	assert_int_equal(store_put_volume(fx->st, "data", "other", 128, "{}"), 0);
	assert_int_equal(store_put_volume(fx->st, "box", "", 1024, "{}"), 0);
	json_t *v = store_get_volume(fx->st, "acme", "data");
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "tenant")), "acme");
	assert_int_equal(json_integer_value(json_object_get(v, "size_mb")), 64);
	assert_string_equal(json_string_value(json_object_get(json_object_get(v, "labels"), "k")), "v");
	json_decref(v);
	assert_null(store_get_volume(fx->st, "nobody", "data"));
	assert_null(store_get_volume(fx->st, "", "data"));
	assert_int_equal(store_tenant_volumes(fx->st, "acme"), 1);
	assert_int_equal(store_tenant_volumes(fx->st, ""), 1);
	assert_int_equal(store_tenant_volumes(fx->st, "nobody"), 0);
	json_t *a = store_list_volumes(fx->st, "acme");
	assert_int_equal(json_array_size(a), 1);
	json_decref(a);
	a = store_list_volumes(fx->st, NULL);
	assert_int_equal(json_array_size(a), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "name")), "box");
	json_decref(a);
	reopen(fx);
	assert_int_equal(store_delete_volume(fx->st, "acme", "data"), 0);
	assert_null(store_get_volume(fx->st, "acme", "data"));
	assert_non_null((v = store_get_volume(fx->st, "other", "data")));
	json_decref(v);
	assert_int_equal(store_put_volume(fx->st, "data", "acme", 128, "{}"), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_open_creates_the_database),
		T(test_open_failures),
		T(test_descriptors_close_on_exec),
		T(test_sandbox_round_trip),
		T(test_set_state),
		T(test_records_land_newest_last),
		T(test_delete_sandbox),
		T(test_committed_on_return),
		T(test_snapshots),
		T(test_snapshot_outlives_its_sandbox),
		T(test_tokens),
		T(test_templates),
		T(test_reopen_keeps_everything),
		T(test_timeouts_change_alone),
		T(test_old_row_expires_a_lifetime_after_creation),
		T(test_volumes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

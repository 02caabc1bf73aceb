/*
 * daemon/store/store.c - spaced's SQLite database (see store.h).
 *
 * The schema is brought up to date on open (schema.h). Journal mode is WAL with
 * synchronous=FULL: a transition the API reports has been committed to disk.
 */
#include "daemon/store/store.h"
#include "daemon/store/schema.h"
#include "daemon/store/store_private.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How every connection writes: a transition the API reports is on disk. */
static const char *pragmas = "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;";

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Makes path 0600 (creating it with create); a file that is not there is fine without. */
static int make_private(const char *path, bool create)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return errno == ENOENT && !create ? 0 : -errno;
	int rc = fchmod(fd, 0600) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int store_open(const char *path, struct store **out)
{
	/* The database and its -wal and -shm (which SQLite makes with the database's mode) are the
	 * owner's alone, whatever the umask and whatever an older spaced left. */
	static const char *const suffixes[] = { "-wal", "-shm" };
	int rc = make_private(path, true);
	for (size_t i = 0; rc == 0 && i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof(p), "%s%s", path, suffixes[i]) >= (int)sizeof(p))
			return -ENAMETOOLONG;
		rc = make_private(p, false);
	}
	if (rc < 0)
		return rc;
	struct store *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	rc = sqlite3_open_v2(path, &st->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(st->db, 5000);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, pragmas, NULL, NULL, NULL);
	int found = 0;
	int err = rc != SQLITE_OK ? -EIO : schema_migrate(st->db, &found);
	if (err < 0) {
		sqlite3_close(st->db);
		free(st);
		return err;
	}
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	sqlite3_close(st->db);
	free(st);
}

int store_exec(struct store *st, const char *sql, const char *types, ...)
{
	sqlite3_stmt *stmt;
	va_list ap;
	if (sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 's') {
			const char *s = va_arg(ap, const char *);
			if (s)
				sqlite3_bind_text(stmt, i + 1, s, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(stmt, i + 1);
		} else if (types[i] == 'i') {
			sqlite3_bind_int64(stmt, i + 1, va_arg(ap, int64_t));
		} else {
			sqlite3_bind_double(stmt, i + 1, va_arg(ap, double));
		}
	}
	va_end(ap);
	int rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc == SQLITE_CONSTRAINT)
		return -EEXIST;
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/* sb's policy with its slot, as stored; NULL for none (or no memory) */
static char *network_text(const struct sandbox *sb)
{
	if (!sb->network)
		return NULL;
	json_t *o = json_deep_copy(sb->network);
	json_object_set_new(o, "slot", json_integer(sb->conf.net_slot));
	json_object_set_new(o, "transit", json_string(sb->conf.net_transit));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* sb's volumes as the sandboxes table's volumes column holds them (a JSON array), malloc'd;
 * NULL without memory. */
static char *volumes_text(const struct sandbox *sb)
{
	json_t *arr = json_array();
	for (int i = 0; arr && i < sb->conf.nvolumes; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", sb->conf.volumes[i].name, "path",
						     sb->conf.volumes[i].path, "read_only", sb->conf.volumes[i].read_only));
	char *s = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	return s;
}

/* Reads that column (NULL or bad: none) into sb's volumes. */
static void volumes_read(struct sandbox *sb, const char *text)
{
	json_t *arr = text ? json_loads(text, 0, NULL) : NULL;
	size_t i;
	json_t *v;
	sb->conf.nvolumes = 0;
	json_array_foreach(arr, i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *path = json_string_value(json_object_get(v, "path"));
		if (!name || !path || sb->conf.nvolumes >= SANDBOX_MAX_VOLUMES)
			continue;
		struct sb_volume *m = &sb->conf.volumes[sb->conf.nvolumes++];
		snprintf(m->name, sizeof(m->name), "%s", name);
		snprintf(m->path, sizeof(m->path), "%s", path);
		m->read_only = json_is_true(json_object_get(v, "read_only"));
	}
	json_decref(arr);
}

int store_put_sandbox(struct store *st, const struct sandbox *sb)
{
	char *env = json_dumps(sb->conf.env, JSON_COMPACT);
	char *meta = json_dumps(sb->conf.metadata, JSON_COMPACT);
	char *net = network_text(sb);
	char *vols = volumes_text(sb);
	int rc = -ENOMEM;
	if (env && meta && (net || !sb->network) && vols)
		rc = store_exec(st,
			       "INSERT OR REPLACE INTO sandboxes(id, state, reason, template, cpus, memory_mb,"
			       " timeout, env, metadata, created_ms, lifetime, timeout_kill, keepalive, remaining_ms,"
			       " tenant, disk_mb, seq, isolation, network, access_token, public_ports, expires_ms,"
			       " auto_resume, traffic_token, volumes) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       "ssssiidssidiiisiisssiiiss", sb->id, sb_state_name(sb->state), sb->reason[0] ? sb->reason : NULL,
			       sb->conf.template, (int64_t)sb->conf.cpus, (int64_t)sb->conf.memory_mb, sb->timeout_s, env, meta,
			       sb->conf.created_ms, sb->lifetime_s, (int64_t)sb->timeout_kill, (int64_t)sb->keepalive,
			       sb->remaining_ms, sb->conf.tenant, (int64_t)sb->conf.disk_mb, (int64_t)sb->seq, sb->conf.isolation, net,
			       sb->conf.access_token, (int64_t)sb->public_ports, sb->expires_ms,
			       (int64_t)(sb->auto_resume ? 1 : 0), sb->conf.traffic_token, vols);
	free(env);
	free(meta);
	free(net);
	free(vols);
	return rc;
}

int store_put_timeouts(struct store *st, const struct sandbox *sb)
{
	return store_exec(st,
			 "UPDATE sandboxes SET timeout = ?, lifetime = ?, expires_ms = ?, timeout_kill = ?, remaining_ms = ?"
			 " WHERE id = ?",
			 "ddiiis", sb->timeout_s, sb->lifetime_s, sb->expires_ms, (int64_t)sb->timeout_kill,
			 sb->remaining_ms, sb->id);
}

int store_put_network(struct store *st, const struct sandbox *sb)
{
	char *net = network_text(sb);
	int rc = net ? store_exec(st, "UPDATE sandboxes SET network = ? WHERE id = ?", "ss", net, sb->id) : -ENOMEM;
	free(net);
	return rc;
}

void store_record(struct sandbox *sb, struct sb_record *r)
{
	snprintf(r->id, sizeof(r->id), "%s", sb->id);
	r->state = sb->state;
	snprintf(r->reason, sizeof(r->reason), "%s", sb->state == SB_FAILED ? sb->reason : "");
	r->remaining_ms = sb->remaining_ms;
	r->seq = ++sb->seq;
}

int store_save(struct store *st, const struct sb_record *r)
{
	return store_exec(st, "UPDATE sandboxes SET state = ?, reason = ?, remaining_ms = ?, seq = ? WHERE id = ? AND seq < ?",
			 "ssiisi", sb_state_name(r->state), r->reason[0] ? r->reason : NULL, r->remaining_ms,
			 (int64_t)r->seq, r->id, (int64_t)r->seq);
}

int store_save_now(struct store *st, struct sandbox *sb)
{
	struct sb_record r;
	store_record(sb, &r);
	return store_save(st, &r);
}

int store_delete_sandbox(struct store *st, const char *id)
{
	return store_exec(st, "DELETE FROM sandboxes WHERE id = ?", "s", id);
}

static enum sb_state parse_state(const char *s)
{
	int st = s ? sb_state_parse(s) : -1;
	return st < 0 ? SB_FAILED : (enum sb_state)st;
}

static json_t *load_object(const unsigned char *text)
{
	json_t *o = text ? json_loads((const char *)text, 0, NULL) : NULL;
	if (!json_is_object(o)) {
		json_decref(o);
		o = json_object();
	}
	return o;
}

int store_load_sandboxes(struct store *st, struct sandbox **out)
{
	sqlite3_stmt *stmt;
	struct sandbox *head = NULL, **tail = &head;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, state, reason, template, cpus, memory_mb, timeout, env, metadata,"
			       " created_ms, lifetime, timeout_kill, keepalive, remaining_ms, tenant, disk_mb, seq, isolation,"
			       " network, access_token, public_ports, expires_ms, auto_resume, traffic_token, volumes FROM sandboxes"
			       " ORDER BY created_ms",
			       -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		struct sandbox *sb = calloc(1, sizeof(*sb));
		if (!sb)
			break;
		snprintf(sb->id, sizeof(sb->id), "%s", (const char *)sqlite3_column_text(stmt, 0));
		sb->state = parse_state((const char *)sqlite3_column_text(stmt, 1));
		const unsigned char *reason = sqlite3_column_text(stmt, 2);
		snprintf(sb->reason, sizeof(sb->reason), "%s", reason ? (const char *)reason : "");
		snprintf(sb->conf.template, sizeof(sb->conf.template), "%s", (const char *)sqlite3_column_text(stmt, 3));
		sb->conf.cpus = sqlite3_column_int(stmt, 4);
		sb->conf.memory_mb = sqlite3_column_int(stmt, 5);
		sb->timeout_s = sqlite3_column_double(stmt, 6);
		sb->conf.env = load_object(sqlite3_column_text(stmt, 7));
		sb->conf.metadata = load_object(sqlite3_column_text(stmt, 8));
		sb->conf.created_ms = sqlite3_column_int64(stmt, 9);
		sb->lifetime_s = sqlite3_column_double(stmt, 10);
		sb->timeout_kill = sqlite3_column_int(stmt, 11) != 0;
		sb->keepalive = sqlite3_column_int(stmt, 12) != 0;
		sb->remaining_ms = sqlite3_column_int64(stmt, 13);
		const unsigned char *tenant = sqlite3_column_text(stmt, 14);
		snprintf(sb->conf.tenant, sizeof(sb->conf.tenant), "%s", tenant ? (const char *)tenant : "");
		sb->conf.disk_mb = sqlite3_column_int(stmt, 15);
		sb->seq = (uint64_t)sqlite3_column_int64(stmt, 16);
		const unsigned char *iso = sqlite3_column_text(stmt, 17);
		snprintf(sb->conf.isolation, sizeof(sb->conf.isolation), "%s", iso ? (const char *)iso : "gvisor");
		const unsigned char *net = sqlite3_column_text(stmt, 18);
		json_t *n = net ? json_loads((const char *)net, 0, NULL) : NULL;
		sb->conf.net_slot = -1;
		if (json_is_object(n) && json_is_integer(json_object_get(n, "slot"))) {
			sb->conf.net_slot = (int)json_integer_value(json_object_get(n, "slot"));
			const char *tr = json_string_value(json_object_get(n, "transit"));
			snprintf(sb->conf.net_transit, sizeof(sb->conf.net_transit), "%s", tr ? tr : "");
			json_object_del(n, "slot");
			json_object_del(n, "transit");
			sb->network = json_incref(n);
		}
		json_decref(n);
		const unsigned char *tok = sqlite3_column_text(stmt, 19);
		snprintf(sb->conf.access_token, sizeof(sb->conf.access_token), "%s", tok ? (const char *)tok : "");
		sb->public_ports = sqlite3_column_int(stmt, 20) != 0;
		sb->expires_ms = sqlite3_column_int64(stmt, 21);
		/* -1 in a record from before sandboxes had their own: as a create's default */
		sb->auto_resume = sqlite3_column_int(stmt, 22) != 0;
		const unsigned char *traffic = sqlite3_column_text(stmt, 23);
		snprintf(sb->conf.traffic_token, sizeof(sb->conf.traffic_token), "%s", traffic ? (const char *)traffic : "");
		volumes_read(sb, (const char *)sqlite3_column_text(stmt, 24));
		if (sb->expires_ms == 0 && sb->lifetime_s > 0) /* recorded before lifetimes could move */
			sb->expires_ms = sb->conf.created_ms + (int64_t)(sb->lifetime_s * 1000);
		*tail = sb;
		tail = &sb->next;
	}
	sqlite3_finalize(stmt);
	*out = head;
	return 0;
}

int store_add_token(struct store *st, const char *hash_hex, const char *name, const char *tenant)
{
	return store_exec(st, "INSERT INTO tokens(hash, name, created_ms, tenant) VALUES(?,?,?,?)", "ssis", hash_hex,
			 name, wall_ms(), tenant);
}

int store_token_tenant(struct store *st, const char *hash_hex, char *tenant, size_t n)
{
	sqlite3_stmt *stmt;
	if (sqlite3_prepare_v2(st->db, "SELECT hash, tenant FROM tokens", -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	/* Compare against every stored hash in constant time, whatever matches. */
	int found = 0;
	size_t len = strlen(hash_hex);
	while (sqlite3_step(stmt) == SQLITE_ROW) {
		const unsigned char *h = sqlite3_column_text(stmt, 0);
		if (!h || strlen((const char *)h) != len)
			continue;
		unsigned diff = 0;
		for (size_t i = 0; i < len; i++)
			diff |= (unsigned)(h[i] ^ (unsigned char)hash_hex[i]);
		if (diff == 0) {
			/* a tenant that does not fit is refused: cut, it could be another tenant's name */
			const unsigned char *t = sqlite3_column_text(stmt, 1);
			found = t && strlen((const char *)t) < n ? 1 : -ENAMETOOLONG;
			if (found == 1)
				snprintf(tenant, n, "%s", (const char *)t);
		}
	}
	sqlite3_finalize(stmt);
	return found;
}

int store_token_set_admin(struct store *st, const char *hash_hex)
{
	return store_exec(st, "INSERT OR IGNORE INTO admin_tokens(hash) SELECT hash FROM tokens WHERE hash = ?", "s",
			 hash_hex);
}

int store_token_admin(struct store *st, const char *hash_hex)
{
	sqlite3_stmt *stmt;
	if (sqlite3_prepare_v2(st->db, "SELECT 1 FROM admin_tokens WHERE hash = ?", -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(stmt, 1, hash_hex, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(stmt);
	int admin = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(stmt);
	return admin;
}

int store_put_template(struct store *st, const char *name, const char *key, const char *path, const char *source,
		       const char *config)
{
	return store_exec(st,
			 "INSERT OR REPLACE INTO templates(name, key, path, source, config, created_ms) VALUES(?,?,?,?,?,?)",
			 "sssssi", name, key, path, source, config, wall_ms());
}

int store_put_template_info(struct store *st, const char *name, const char *info)
{
	return store_exec(st, "UPDATE templates SET info = ? WHERE name = ?", "ss", info, name);
}

json_t *store_template_config(struct store *st, const char *name)
{
	sqlite3_stmt *stmt;
	json_t *out = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT config FROM templates WHERE name = ?", -1, &stmt, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		out = json_loads((const char *)sqlite3_column_text(stmt, 0), 0, NULL);
	sqlite3_finalize(stmt);
	return out;
}

int store_template_path(struct store *st, const char *name, char *out, size_t n)
{
	sqlite3_stmt *stmt;
	int rc = -ENOENT;
	if (sqlite3_prepare_v2(st->db, "SELECT path FROM templates WHERE name = ?", -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		snprintf(out, n, "%s", (const char *)sqlite3_column_text(stmt, 0));
		rc = 0;
	}
	sqlite3_finalize(stmt);
	return rc;
}

/* A column of milliseconds since the epoch as the API writes times (UTC, seconds). */
static void column_time(sqlite3_stmt *stmt, int col, char when[32])
{
	time_t t = (time_t)(sqlite3_column_int64(stmt, col) / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One row of SELECT name, key, created_ms, source, config as the API shows it. */
static json_t *template_row(sqlite3_stmt *stmt)
{
	char when[32];
	column_time(stmt, 2, when);
	json_t *cfg = json_loads((const char *)sqlite3_column_text(stmt, 4), 0, NULL);
	json_t *info = json_loads((const char *)sqlite3_column_text(stmt, 5), 0, NULL);
	json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:o, s:O?, s:O?}", "name", sqlite3_column_text(stmt, 0), "key",
				sqlite3_column_text(stmt, 1), "created_at", when, "source", sqlite3_column_text(stmt, 3),
				"config", cfg ? cfg : json_object(), "bytes", json_object_get(info, "bytes"), "layers",
				json_object_get(info, "layers"));
	json_decref(info);
	return row;
}

json_t *store_list_templates(struct store *st)
{
	sqlite3_stmt *stmt;
	json_t *arr = json_array();
	if (sqlite3_prepare_v2(st->db, "SELECT name, key, created_ms, source, config, info FROM templates ORDER BY name", -1,
			       &stmt, NULL) != SQLITE_OK)
		return arr;
	while (sqlite3_step(stmt) == SQLITE_ROW)
		json_array_append_new(arr, template_row(stmt));
	sqlite3_finalize(stmt);
	return arr;
}

json_t *store_get_template(struct store *st, const char *name)
{
	sqlite3_stmt *stmt;
	json_t *out = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT name, key, created_ms, source, config, info FROM templates WHERE name = ?", -1,
			       &stmt, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		out = template_row(stmt);
	sqlite3_finalize(stmt);
	return out;
}

int store_delete_template(struct store *st, const char *name)
{
	return store_exec(st, "DELETE FROM templates WHERE name = ?", "s", name);
}

/* The number the query (one text parameter) counts. */
static int count_of(struct store *st, const char *sql, const char *arg)
{
	sqlite3_stmt *stmt;
	if (sqlite3_prepare_v2(st->db, sql, -1, &stmt, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(stmt, 1, arg, -1, SQLITE_TRANSIENT);
	int n = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : -EIO;
	sqlite3_finalize(stmt);
	return n;
}

int store_template_snapshots(struct store *st, const char *name)
{
	return count_of(st, "SELECT COUNT(*) FROM snapshots WHERE template = ?", name);
}

int store_template_key_names(struct store *st, const char *key)
{
	return count_of(st, "SELECT COUNT(*) FROM templates WHERE key = ?", key);
}

int store_put_snapshot(struct store *st, const char *id, const struct sandbox *sb, const char *name, uint64_t bytes)
{
	char *env = json_dumps(sb->conf.env, JSON_COMPACT);
	char *meta = json_dumps(sb->conf.metadata, JSON_COMPACT);
	char *net = sb->network ? json_dumps(sb->network, JSON_COMPACT) : NULL; /* the policy, no slot */
	int rc = -ENOMEM;
	if (env && meta && (net || !sb->network))
		rc = store_exec(st,
			       "INSERT INTO snapshots(id, sandbox_id, name, template, cpus, memory_mb, env, metadata,"
			       " created_ms, tenant, disk_mb, bytes, isolation, network) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       "ssssiissisiiss", id, sb->id, name, sb->conf.template, (int64_t)sb->conf.cpus, (int64_t)sb->conf.memory_mb, env,
			       meta, wall_ms(), sb->conf.tenant, (int64_t)sb->conf.disk_mb, (int64_t)bytes, sb->conf.isolation, net);
	free(env);
	free(meta);
	free(net);
	return rc;
}

int store_delete_snapshot(struct store *st, const char *id)
{
	return store_exec(st, "DELETE FROM snapshots WHERE id = ?", "s", id);
}

static json_t *snapshot_row(sqlite3_stmt *stmt)
{
	char when[32];
	column_time(stmt, 8, when);
	const unsigned char *name = sqlite3_column_text(stmt, 2);
	const unsigned char *net = sqlite3_column_text(stmt, 13);
	json_t *network = net ? json_loads((const char *)net, 0, NULL) : NULL;
	json_t *row = json_pack("{s:s, s:s, s:o, s:s, s:i, s:i, s:i, s:o, s:o, s:s, s:s, s:I, s:s}", "id",
			 sqlite3_column_text(stmt, 0), "sandbox_id", sqlite3_column_text(stmt, 1), "name",
			 name ? json_string((const char *)name) : json_null(), "template", sqlite3_column_text(stmt, 3),
			 "cpus", sqlite3_column_int(stmt, 4), "memory_mb", sqlite3_column_int(stmt, 5),
			 "disk_mb", sqlite3_column_int(stmt, 10), "env",
			 load_object(sqlite3_column_text(stmt, 6)), "metadata", load_object(sqlite3_column_text(stmt, 7)),
			 "created_at", when, "tenant", sqlite3_column_text(stmt, 9), "bytes",
			 (json_int_t)sqlite3_column_int64(stmt, 11), "isolation", sqlite3_column_text(stmt, 12));
	json_object_set_new(row, "network", json_is_object(network) ? network : json_null());
	if (!json_is_object(network))
		json_decref(network);
	return row;
}

#define SNAPSHOT_COLUMNS \
	"id, sandbox_id, name, template, cpus, memory_mb, env, metadata, created_ms, tenant, disk_mb, bytes, isolation, " \
	"network"

json_t *store_get_snapshot(struct store *st, const char *id)
{
	sqlite3_stmt *stmt;
	json_t *r = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT " SNAPSHOT_COLUMNS " FROM snapshots WHERE id = ?", -1, &stmt, NULL) !=
	    SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		r = snapshot_row(stmt);
	sqlite3_finalize(stmt);
	return r;
}

json_t *store_list_snapshots(struct store *st)
{
	sqlite3_stmt *stmt;
	json_t *arr = json_array();
	if (sqlite3_prepare_v2(st->db, "SELECT " SNAPSHOT_COLUMNS " FROM snapshots ORDER BY created_ms", -1, &stmt,
			       NULL) != SQLITE_OK)
		return arr;
	while (sqlite3_step(stmt) == SQLITE_ROW)
		json_array_append_new(arr, snapshot_row(stmt));
	sqlite3_finalize(stmt);
	return arr;
}

int store_tenant_snapshots(struct store *st, const char *tenant, int *count, uint64_t *bytes)
{
	sqlite3_stmt *stmt;
	if (sqlite3_prepare_v2(st->db, "SELECT count(*), coalesce(sum(bytes), 0) FROM snapshots WHERE tenant = ?", -1,
			       &stmt, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(stmt, 1, tenant, -1, SQLITE_TRANSIENT);
	int rc = -EIO;
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		*count = sqlite3_column_int(stmt, 0);
		*bytes = (uint64_t)sqlite3_column_int64(stmt, 1);
		rc = 0;
	}
	sqlite3_finalize(stmt);
	return rc;
}

/*
 * daemon/store/store.h - durable state in SQLite (WAL): sandboxes, tokens, templates.
 *
 * Every function is safe to call from any thread (SQLite serialized mode)
 * and returns 0 or a negative errno. A state change is committed (and, with
 * synchronous=FULL, on disk) when the call returns.
 */
#ifndef SPACE_DAEMON_STORE_H
#define SPACE_DAEMON_STORE_H

#include <stdbool.h>
#include <jansson.h>

#include "daemon/daemon.h"

struct store;

/* Opens (creating if needed) the database at path, bringing its schema up to date (schema.h);
 * it and its -wal and -shm are made 0600. Returns 0, -EPROTO for a database of a newer spaced,
 * or -errno. */
int store_open(const char *path, struct store **out);
void store_close(struct store *st);

/* Records a new sb (insert or replace) with its current state. */
int store_put_sandbox(struct store *st, const struct sandbox *sb);

/* What changes of a sandbox over its life, as of one moment. Taken with d->lock held and
 * written with it released, so the disk's fsync holds up no one: each record carries the
 * sandbox's next sequence number and the store keeps a record only if it is newer than the
 * one it has, so two writes that race (a finished transition, the next one begun) end in
 * the order they were taken. */
struct sb_record {
	char id[SANDBOX_ID_LEN + 1];
	enum sb_state state;
	char reason[128];
	int64_t remaining_ms;
	uint64_t seq;
};
/* Takes sb's record, numbering it after every earlier one. [L] */
void store_record(struct sandbox *sb, struct sb_record *r);
/* Writes r unless the store holds a newer record of the sandbox (then it is 0 too); a
 * sandbox with no row (deleted meanwhile) is left so. */
int store_save(struct store *st, const struct sb_record *r);
/* store_record and store_save together, with d->lock held: for a write that decides the
 * request's answer before anything else may happen to the sandbox. [L] */
int store_save_now(struct store *st, struct sandbox *sb);
/* Records sb's timeouts (after a change of them: core/lifecycle.h). */
int store_put_timeouts(struct store *st, const struct sandbox *sb);
/* Records sb's network policy (after a change of it). */
int store_put_network(struct store *st, const struct sandbox *sb);

int store_delete_sandbox(struct store *st, const char *id);
/* Loads every recorded sandbox as a newly allocated list (oldest first) in *out. */
int store_load_sandboxes(struct store *st, struct sandbox **out);

/* Snapshots: a row per named snapshot; its files live in <state>/snapshots/<id>/. */
/* bytes: what its directory takes on disk, measured when it was made. */
int store_put_snapshot(struct store *st, const char *id, const struct sandbox *sb, const char *name, uint64_t bytes);
int store_delete_snapshot(struct store *st, const char *id);
/* {"id", "sandbox_id", "name", "template", "cpus", "memory_mb", "env", "metadata", "created_at", "bytes",
 * "isolation" (the kind its image restores under)...} or NULL. */
json_t *store_get_snapshot(struct store *st, const char *id);
json_t *store_list_snapshots(struct store *st);
/* How many snapshots tenant has and the bytes they take, together. */
int store_tenant_snapshots(struct store *st, const char *tenant, int *count, uint64_t *bytes);

/* Tokens are stored as the hex SHA-256 of the token. */
int store_add_token(struct store *st, const char *hash_hex, const char *name, const char *tenant);
/* 1 with its tenant in `tenant` if a token with this hash exists, 0 if not, -ENAMETOOLONG if
 * its tenant does not fit in n bytes, or -errno. Compares every stored hash in constant time. */
int store_token_tenant(struct store *st, const char *hash_hex, char *tenant, size_t n);
/* Makes the token with this hash an administrator's (spaced token create --admin). 0 or -errno. */
int store_token_set_admin(struct store *st, const char *hash_hex);
/* 1 if the token with this hash is an administrator's, 0 if not or if there is no such token (call
 * it for a token store_token_tenant took), or -errno. */
int store_token_admin(struct store *st, const char *hash_hex);

/* source: where it came from (packages, an image); config: its defaults, a JSON object
 * ({"env": {...}, "workdir", "user", "cmd": [...]}, each when known). */
int store_put_template(struct store *st, const char *name, const char *key, const char *path, const char *source,
		       const char *config);
/* What template `name` holds, shown with it: info is a JSON object of "bytes" (the disk its
 * files take) and "layers" (where they came from, in order), either when known. */
int store_put_template_info(struct store *st, const char *name, const char *info);
/* The recorded path of template `name` into out; -ENOENT if none. */
int store_template_path(struct store *st, const char *name, char *out, size_t n);
/* Template `name`'s defaults (see store_put_template), or NULL. */
json_t *store_template_config(struct store *st, const char *name);
/* Template `name` as store_list_templates shows it, or NULL. */
json_t *store_get_template(struct store *st, const char *name);
int store_delete_template(struct store *st, const char *name);
/* How many snapshots start from template `name`; how many names a cache key has. -errno on failure. */
int store_template_snapshots(struct store *st, const char *name);
int store_template_key_names(struct store *st, const char *key);
/* [{"name", "key", "source", "config", "created_at"}...] */
json_t *store_list_templates(struct store *st);

/* Volumes: a row per volume (core/volume.h), named within its tenant ("" for the administrator);
 * its bytes live in its folder (driver/disk.h). labels is a JSON object of strings as text.
 * -EEXIST when the tenant has a volume of that name. */
int store_put_volume(struct store *st, const char *name, const char *tenant, int size_mb, const char *labels);
int store_delete_volume(struct store *st, const char *tenant, const char *name);
/* {"name", "tenant", "size_mb", "labels", "created_at"} or NULL when the tenant has no such volume. */
json_t *store_get_volume(struct store *st, const char *tenant, const char *name);
/* Every volume as store_get_volume shows it, by name; only tenant's unless tenant is NULL. */
json_t *store_list_volumes(struct store *st, const char *tenant);
/* How many volumes tenant owns, or -errno. */
int store_tenant_volumes(struct store *st, const char *tenant);

#endif

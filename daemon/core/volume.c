/*
 * daemon/core/volume.c - volumes: their records, images and mounts on the host, and the rules
 * of the sandboxes that mount them (see volume.h).
 *
 * Who mounts a volume is read from the registry, under d->lock: every sandbox, running,
 * paused, suspended or failed, keeps the volumes it was made with until it is deleted, so
 * the rules hold across a suspend and a restart of spaced (the registry is loaded from the
 * records). A removal checks and deletes the record under that lock, so no create can name
 * a volume that is going.
 */
#include "daemon/core/volume.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/base/crash.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/core/job.h"
#include "daemon/core/op.h"
#include "daemon/driver/disk.h"
#include "daemon/store/store.h"

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define NEW_PREFIX ".new-" /* a volume's folder while its image is being made */

/* What a volume's job carries (the job's union has no room for it): malloc'd, freed by it. */
struct volume_work {
	char name[VOLUME_NAME_MAX + 1];
	char tenant[TENANT_NAME_MAX + 1];
	int size_mb;
	char *labels; /* JSON text */
};

bool volume_name_ok(const char *name)
{
	size_t n = strlen(name);
	return n >= 1 && n <= VOLUME_NAME_MAX && isalnum((unsigned char)name[0]) && strspn(name, NAME_CHARS) == n;
}

/* Whether sb's mount i is of tenant's volume name. */
static bool mounts(const struct sandbox *sb, int i, const char *tenant, const char *name)
{
	return strcmp(sb->conf.volumes[i].name, name) == 0 && strcmp(sb->conf.tenant, tenant) == 0;
}

/* The first sandbox that mounts tenant's volume `name` (read-write only with rw), or NULL. [L] */
static const struct sandbox *holder(struct daemon *d, const char *tenant, const char *name, bool rw)
{
	for (const struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		for (int i = 0; i < sb->conf.nvolumes; i++)
			if (mounts(sb, i, tenant, name) && (!rw || !sb->conf.volumes[i].read_only))
				return sb;
	return NULL;
}

/* Whether a volume row is one tenant (NULL: the administrator) may see. */
static bool visible(const json_t *row, const char *tenant)
{
	return row && (!tenant || strcmp(json_string_value(json_object_get(row, "tenant")), tenant) == 0);
}

/* Adds what the host knows of a volume to its row: used_bytes (null while not mounted), the
 * sandbox holding it read-write, and every sandbox that mounts it. [L] */
static json_t *described(struct daemon *d, json_t *row)
{
	const char *name = json_string_value(json_object_get(row, "name"));
	const char *tenant = json_string_value(json_object_get(row, "tenant"));
	char mnt[700];
	disk_volume_paths(d->cfg.state_dir, tenant, name, NULL, NULL, mnt, sizeof(mnt));
	struct statvfs vfs;
	json_t *used = json_null();
	if (disk_mounted(mnt) && statvfs(mnt, &vfs) == 0)
		used = json_integer((json_int_t)((vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize));
	json_object_set_new(row, "used_bytes", used);
	const struct sandbox *rw = holder(d, tenant, name, true);
	json_object_set_new(row, "holder", rw ? json_string(rw->id) : json_null());
	json_t *by = json_array();
	for (const struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		for (int i = 0; i < sb->conf.nvolumes; i++)
			if (mounts(sb, i, tenant, name))
				json_array_append_new(by, json_pack("{s:s, s:s, s:b}", "sandbox", sb->id, "path",
								    sb->conf.volumes[i].path, "read_only",
								    sb->conf.volumes[i].read_only));
	json_object_set_new(row, "mounted_by", by);
	return row;
}

json_t *volume_get(struct daemon *d, const char *tenant, const char *name, struct err *e)
{
	json_t *row = volume_name_ok(name) ? store_get_volume(d->store, tenant ? tenant : "", name) : NULL;
	if (!visible(row, tenant)) {
		json_decref(row);
		err_set(e, ERR_NOT_FOUND, ENOENT, "no volume %s", name);
		return NULL;
	}
	return described(d, row);
}

json_t *volume_list(struct daemon *d, const char *tenant)
{
	json_t *arr = store_list_volumes(d->store, tenant);
	size_t i;
	json_t *row;
	json_array_foreach(arr, i, row)
		described(d, row);
	return arr;
}

/* Answers a job's request (op may be NULL): with how and json (taken) when rc is 0, else *e. */
static void reply(struct daemon *d, struct op *op, int rc, const struct err *e, enum op_answer how, json_t *json)
{
	daemon_lock(d);
	if (op && rc == 0) {
		op->answer = how;
		op->json = json;
		json = NULL;
		op_finish(op);
	} else if (op) {
		op_fail(op, e);
	}
	daemon_unlock(d);
	json_decref(json);
}

/* Removes a volume's folder: its image unmounted, then the files (rm stays on this filesystem). */
static int wipe(const char *dir, struct err *e)
{
	char mnt[760];
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	int rc = disk_umount(mnt);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "unmounting %s: %s", mnt, strerror(-rc));
	char *rm[] = { "rm", "-rf", "--one-file-system", (char *)dir, NULL };
	if (spawn_run(rm, -1, -1) != 0)
		return err_set(e, ERR_INTERNAL, EIO, "cannot remove %s", dir);
	return 0;
}

/* Makes the volume's folder under a new name, complete and on disk: its image, its mount point. */
static int make_new(struct daemon *d, const struct volume_work *w, char *tmp, size_t n, struct err *e)
{
	char parent[600], blanks[600], img[760], mnt[760], rnd[9];
	unsigned char r[4];
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.state_dir);
	snprintf(blanks, sizeof(blanks), "%s/disks", d->cfg.state_dir);
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return err_set(e, ERR_INTERNAL, EIO, "getrandom: %s", strerror(errno));
	snprintf(rnd, sizeof(rnd), "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	snprintf(tmp, n, "%s/" NEW_PREFIX "%s", parent, rnd);
	snprintf(img, sizeof(img), "%s/disk.img", tmp);
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	if ((mkdir(parent, 0700) < 0 && errno != EEXIST) || mkdir(tmp, 0700) < 0 || mkdir(mnt, 0755) < 0)
		return err_set(e, ERR_INTERNAL, errno, "mkdir in %s: %s", parent, strerror(errno));
	int rc = disk_create(blanks, img, w->size_mb, e);
	if (rc < 0)
		return rc;
	/* the record follows: what it names is on disk first */
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	rc = fd < 0 || fsync(fd) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "syncing %s: %s", img, strerror(-rc));
	return 0;
}

static void create_job(struct job *j)
{
	struct daemon *d = j->d;
	struct volume_work *w = j->volume;
	struct err e = { 0 };
	char tmp[700], dir[700], img[700], mnt[700], parent[600];
	disk_volume_paths(d->cfg.state_dir, w->tenant, w->name, dir, img, mnt, sizeof(dir));
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.state_dir);
	tmp[0] = '\0';
	int rc = make_new(d, w, tmp, sizeof(tmp), &e);
	if (rc == 0)
		crash_point("volume:imaged");
	if (rc == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
		rc = errno == EEXIST ? err_set(&e, ERR_CONFLICT, EEXIST, "volume %s exists", w->name)
				     : err_set(&e, ERR_INTERNAL, errno, "renaming %s: %s", tmp, strerror(errno));
	bool named = rc == 0;
	if (named) {
		int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0) {
			fsync(pfd);
			close(pfd);
		}
		rc = disk_mount_once(img, mnt, &e);
		if (rc == 0)
			crash_point("volume:named");
	}
	json_t *answer = NULL;
	daemon_lock(d);
	int have = rc == 0 ? store_tenant_volumes(d->store, w->tenant) : 0;
	if (have >= TENANT_MAX_VOLUMES)
		rc = err_set(&e, ERR_TOO_MANY, EAGAIN, "at most %d volumes per tenant", TENANT_MAX_VOLUMES);
	else if (have < 0)
		rc = err_set(&e, ERR_INTERNAL, -have, "cannot count volumes: %s", strerror(-have));
	if (rc == 0 && (rc = store_put_volume(d->store, w->name, w->tenant, w->size_mb, w->labels)) < 0)
		err_set(&e, rc == -EEXIST ? ERR_CONFLICT : ERR_INTERNAL, -rc, rc == -EEXIST ? "volume %s exists"
											  : "cannot record volume %s",
			w->name);
	if (rc == 0)
		answer = described(d, store_get_volume(d->store, w->tenant, w->name));
	daemon_unlock(d);
	struct err left = { 0 };
	if (rc < 0 && (named ? wipe(dir, &left) : tmp[0] ? wipe(tmp, &left) : 0) < 0)
		log_warn("volume %s: undoing its create: %s (the next start removes it)", w->name, left.msg);
	reply(d, j->op, rc, &e, ANSWER_CREATED, answer);
	free(w->labels);
	free(w);
}

int volume_create(struct daemon *d, const char *tenant, const char *name, int size_mb, const json_t *labels,
		  struct op *op, struct err *e)
{
	if (!volume_name_ok(name))
		return err_set(e, ERR_INVALID, EINVAL,
			       "bad volume name '%s': 1 to %d letters, digits, '.', '_' and '-', starting with a letter or "
			       "digit",
			       name, VOLUME_NAME_MAX);
	if (size_mb < VOLUME_MIN_MB || size_mb > VOLUME_MAX_MB)
		return err_set(e, ERR_INVALID, EINVAL, "size_mb must be %d..%d", VOLUME_MIN_MB, VOLUME_MAX_MB);
	json_t *row = store_get_volume(d->store, tenant, name);
	json_decref(row);
	if (row)
		return err_set(e, ERR_CONFLICT, EEXIST, "volume %s exists", name);
	int have = store_tenant_volumes(d->store, tenant);
	if (have >= TENANT_MAX_VOLUMES)
		return err_set(e, ERR_TOO_MANY, EAGAIN, "at most %d volumes per tenant", TENANT_MAX_VOLUMES);
	struct volume_work *w = calloc(1, sizeof(*w));
	char *text = json_dumps(labels, JSON_COMPACT);
	if (!w || !text) {
		free(w);
		free(text);
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	}
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->tenant, sizeof(w->tenant), "%s", tenant);
	w->size_mb = size_mb;
	w->labels = text;
	struct job j = { .fn = create_job, .op = op, .volume = w };
	int rc = job_start(d, &j, e);
	if (rc < 0) {
		free(text);
		free(w);
	}
	return rc;
}

static void remove_job(struct job *j)
{
	struct daemon *d = j->d;
	struct volume_work *w = j->volume;
	struct err e = { 0 };
	char dir[700];
	disk_volume_paths(d->cfg.state_dir, w->tenant, w->name, dir, NULL, NULL, sizeof(dir));
	daemon_lock(d);
	/* checked again: a create may have named it since the request was read */
	const struct sandbox *sb = holder(d, w->tenant, w->name, false);
	int rc = sb ? err_set(&e, ERR_CONFLICT, EBUSY, "volume %s is mounted by sandbox %s", w->name, sb->id) : 0;
	if (rc == 0 && (rc = store_delete_volume(d->store, w->tenant, w->name)) < 0)
		err_set(&e, ERR_INTERNAL, -rc, "cannot remove the record of volume %s", w->name);
	daemon_unlock(d);
	/* the record is gone: a wipe that fails is finished by the next start */
	if (rc == 0)
		crash_point("volume:unrecorded");
	struct err left = { 0 };
	if (rc == 0 && wipe(dir, &left) < 0)
		log_warn("volume %s: %s (the next start removes it)", w->name, left.msg);
	reply(d, j->op, rc, &e, ANSWER_EMPTY, NULL);
	free(w);
}

int volume_remove(struct daemon *d, const char *tenant, const char *name, struct op *op, struct err *e)
{
	const char *owner = tenant ? tenant : "";
	json_t *row = volume_name_ok(name) ? store_get_volume(d->store, owner, name) : NULL;
	bool seen = visible(row, tenant);
	json_decref(row);
	if (!seen)
		return err_set(e, ERR_NOT_FOUND, ENOENT, "no volume %s", name);
	const struct sandbox *sb = holder(d, owner, name, false);
	if (sb)
		return err_set(e, ERR_CONFLICT, EBUSY, "volume %s is mounted by sandbox %s", name, sb->id);
	struct volume_work *w = calloc(1, sizeof(*w));
	if (!w)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->tenant, sizeof(w->tenant), "%s", owner);
	struct job j = { .fn = remove_job, .op = op, .volume = w };
	int rc = job_start(d, &j, e);
	if (rc < 0)
		free(w);
	return rc;
}

/* Whether path is one a volume may be mounted at (volume_mounts_read says which). */
static bool path_ok(const char *path)
{
	static const char *const reserved[] = { "/proc", "/sys", "/dev", "/.space" };
	size_t n = strlen(path);
	if (n < 2 || n > VOLUME_PATH_MAX || path[0] != '/' || path[n - 1] == '/')
		return false;
	for (const char *c = path; *c; c++) /* no empty, "." or ".." component */
		if (c[0] == '/' && (c[1] == '/' || (c[1] == '.' && (c[2] == '/' || c[2] == '\0')) ||
				    (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))))
			return false;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		size_t k = strlen(reserved[i]);
		if (strncmp(path, reserved[i], k) == 0 && (path[k] == '\0' || path[k] == '/'))
			return false;
	}
	return true;
}

/* Reads one entry of a create's "volumes" into m. [L] */
static int mount_read(struct daemon *d, const char *tenant, const json_t *v, struct sb_volume *m, struct err *e)
{
	const char *k;
	json_t *x;
	if (!json_is_object(v))
		return err_set(e, ERR_INVALID, EINVAL, "each of volumes must be an object {name, path, read_only}");
	json_object_foreach((json_t *)v, k, x) {
		if (strcmp(k, "name") != 0 && strcmp(k, "path") != 0 && strcmp(k, "read_only") != 0)
			return err_set(e, ERR_INVALID, EINVAL, "unknown field \"%s\" in volumes", k);
	}
	const char *name = json_string_value(json_object_get(v, "name"));
	const char *path = json_string_value(json_object_get(v, "path"));
	json_t *ro = json_object_get(v, "read_only");
	if (!name || !volume_name_ok(name))
		return err_set(e, ERR_INVALID, EINVAL, "volumes: bad volume name '%s'", name ? name : "");
	if (!path || !path_ok(path))
		return err_set(e, ERR_INVALID, EINVAL,
			       "volumes: bad path '%s' for volume %s: absolute, at most %d bytes, no '.', '..' or empty "
			       "part, not / and not under /proc, /sys, /dev or /.space",
			       path ? path : "", name, VOLUME_PATH_MAX);
	if (ro && !json_is_boolean(ro))
		return err_set(e, ERR_INVALID, EINVAL, "volumes: read_only must be a boolean");
	json_t *row = store_get_volume(d->store, tenant ? tenant : "", name);
	bool seen = visible(row, tenant);
	json_decref(row);
	if (!seen)
		return err_set(e, ERR_NOT_FOUND, ENOENT, "no volume %s", name);
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->read_only = json_is_true(ro);
	const struct sandbox *sb = m->read_only ? NULL : holder(d, tenant ? tenant : "", name, true);
	if (sb)
		return err_set(e, ERR_CONFLICT, EBUSY, "volume %s is mounted read-write by sandbox %s", name, sb->id);
	return 0;
}

int volume_mounts_read(struct daemon *d, const char *tenant, const json_t *list, struct sb_volume *out, int *n,
		       struct err *e)
{
	*n = 0;
	if (!json_is_array(list))
		return err_set(e, ERR_INVALID, EINVAL, "volumes must be an array of {name, path, read_only}");
	if (json_array_size(list) > SANDBOX_MAX_VOLUMES)
		return err_set(e, ERR_INVALID, EINVAL, "at most %d volumes per sandbox", SANDBOX_MAX_VOLUMES);
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v) {
		struct sb_volume *m = &out[i];
		int rc = mount_read(d, tenant, v, m, e);
		if (rc < 0)
			return rc;
		for (size_t k = 0; k < i; k++) {
			if (strcmp(out[k].path, m->path) == 0)
				return err_set(e, ERR_INVALID, EINVAL, "volumes: two at %s", m->path);
			if (strcmp(out[k].name, m->name) == 0)
				return err_set(e, ERR_INVALID, EINVAL, "volumes: %s named twice", m->name);
		}
	}
	*n = (int)json_array_size(list);
	return 0;
}

void volume_start(struct daemon *d)
{
	char parent[600], dir[700], img[700], mnt[700];
	snprintf(parent, sizeof(parent), "%s/volumes", d->cfg.state_dir);
	/* every recorded volume's folder is mounted; any other folder there is removed */
	json_t *all = store_list_volumes(d->store, NULL);
	size_t i;
	json_t *row;
	json_array_foreach(all, i, row) {
		struct err e = { 0 };
		const char *name = json_string_value(json_object_get(row, "name"));
		disk_volume_paths(d->cfg.state_dir, json_string_value(json_object_get(row, "tenant")), name, dir, img, mnt,
				  sizeof(dir));
		if (disk_mount_once(img, mnt, &e) < 0)
			log_warn("volume %s: %s", name, e.msg);
		json_object_set_new(row, "folder", json_string(strrchr(dir, '/') + 1));
	}
	DIR *dp = opendir(parent);
	struct dirent *de;
	while (dp && (de = readdir(dp))) {
		bool owned = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
		json_array_foreach(all, i, row)
			owned = owned || strcmp(json_string_value(json_object_get(row, "folder")), de->d_name) == 0;
		if (owned)
			continue;
		struct err e = { 0 };
		snprintf(dir, sizeof(dir), "%s/%s", parent, de->d_name);
		if (wipe(dir, &e) == 0)
			log_info("volume folder %s removed: no volume record owns it", dir);
		else
			log_warn("volume folder %s: no volume record owns it, but: %s", dir, e.msg);
	}
	if (dp)
		closedir(dp);
	json_decref(all);
}

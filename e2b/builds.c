/*
 * e2b/builds.c - E2B's template build API (builds.h): builds asked for, their uploads, their run
 * through spaced's POST /v1/templates in a thread of their own, and their status and log.
 */
#include "e2b/builds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "e2b/buildrun.h"
#include "e2b/recipe.h"
#include "e2b/shape.h"

static const char *const state_names[] = { "building", "building", "waiting", "ready", "error" };

int builds_init(struct gw_builds *b)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	const char *tmp = getenv("TMPDIR");
	snprintf(b->dir, sizeof(b->dir), "%s/space-e2b-files.XXXXXX", tmp && *tmp && strlen(tmp) < 200 ? tmp : "/tmp");
	return mkdtemp(b->dir) ? 0 : -errno;
}

void builds_fini(struct gw_builds *b)
{
	DIR *d = opendir(b->dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' || strncmp(de->d_name, ".part-", 6) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(b->dir);
}

void builds_owner(const char *key, char out[GW_BUILD_OWNER_LEN + 1])
{
	char token[512];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	/* as gw_as_tenant reads it: e2b_<rest> is the token sp_<rest> */
	snprintf(token, sizeof(token), "%s%s", key && strncmp(key, "e2b_", 4) == 0 ? "sp_" : "",
		 key ? key + (strncmp(key, "e2b_", 4) == 0 ? 4 : 0) : "");
	EVP_Digest(token, strlen(token), md, &len, EVP_sha256(), NULL);
	for (int i = 0; i < GW_BUILD_OWNER_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	out[GW_BUILD_OWNER_LEN] = '\0';
}

bool builds_visible(const json_t *t, const char *owner)
{
	const char *by = json_string_value(
		json_object_get(json_object_get(json_object_get(t, "config"), "labels"), RECIPE_OWNER_LABEL));
	return !by || strcmp(by, owner) == 0;
}

static void owner_of(struct req *r, char out[GW_BUILD_OWNER_LEN + 1])
{
	builds_owner(gw_header(r, "X-API-KEY"), out);
}

bool builds_may_use(struct req *r, struct client *c, const char *name)
{
	char path[GW_TEMPLATE_ID_MAX + 32], owner[GW_BUILD_OWNER_LEN + 1];
	char *q = client_escape(name);
	snprintf(path, sizeof(path), "/v1/templates/%s", q ? q : "");
	free(q);
	json_t *t = NULL;
	struct client_err e = { 0 };
	if (client_request(c, "GET", path, NULL, &t, &e) < 0)
		return true;
	owner_of(r, owner);
	bool ok = builds_visible(t, owner);
	json_decref(t);
	return ok;
}

/* ---- the table ---- */

static struct gw_build *build_find(struct gw_builds *t, const char *tpl, const char *id, const char *owner)
{
	for (int i = 0; i < GW_BUILDS_MAX; i++) {
		struct gw_build *b = t->all[i];
		if (b && strcmp(b->owner, owner) == 0 && (!id || strcmp(b->id, id) == 0) &&
		    (!tpl || strcmp(b->tpl, tpl) == 0))
			return b;
	}
	return NULL;
}

static void build_free(struct gw_build *b)
{
	json_decref(b->names);
	json_decref(b->log);
	json_decref(b->reason);
	recipe_free(&b->recipe);
	free(b);
}

/* When b stopped needing its place in the table: when it ended, or, asked for and never started,
 * GW_BUILD_ASKED_S after it was asked for; 0 while it needs it. Lock held. */
static int64_t done_ms(const struct gw_build *b, int64_t now)
{
	if (b->ended_ms)
		return b->ended_ms;
	bool idle = b->state == BUILDRUN_ASKED && b->context == -1 && now - b->asked_ms > GW_BUILD_ASKED_S * 1000L;
	return idle ? b->asked_ms : 0;
}

/* Puts b in the table, forgetting the build that stopped needing its place first when it is
 * full: 0, -EDQUOT when b's key has GW_BUILDS_PER_KEY that need theirs, or -EBUSY when every
 * place is needed. */
static int build_add(struct gw_builds *t, struct gw_build *b)
{
	pthread_mutex_lock(&t->lock);
	int64_t now = gw_mono_ms();
	int slot = -1, free_slot = -1, mine = 0;
	for (int i = 0; i < GW_BUILDS_MAX; i++) {
		struct gw_build *x = t->all[i];
		if (!x) {
			free_slot = i;
			continue;
		}
		int64_t done = done_ms(x, now);
		mine += !done && strcmp(x->owner, b->owner) == 0;
		if (done && (slot < 0 || done < done_ms(t->all[slot], now)))
			slot = i;
	}
	int rc = mine >= GW_BUILDS_PER_KEY ? -EDQUOT : free_slot >= 0 || slot >= 0 ? 0 : -EBUSY;
	if (rc == 0) {
		slot = free_slot >= 0 ? free_slot : slot;
		if (t->all[slot])
			build_free(t->all[slot]);
		t->all[slot] = b;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* ---- names ---- */

static bool name_part(const char *s, size_t len, bool tag)
{
	if (len == 0)
		return false;
	const char *first = tag ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
				: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	if (!strchr(first, s[0]))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-", s[i]) || !s[i])
			return false;
	return true;
}

/* The names a build of {name, tags} records into names (NAME[:TAG], NAME:latest as NAME) and
 * its template's id (NAME) into tpl: 0, or -EINVAL with msg. */
static int names_of(const json_t *body, json_t *names, char *tpl, size_t tpl_n, char *msg, size_t n)
{
	const char *name = json_string_value(json_object_get(body, "name"));
	const json_t *tags = json_object_get(body, "tags");
	if (!name || strlen(name) > GW_BUILD_NAME_MAX)
		return snprintf(msg, n, "name must be NAME or NAME:TAG, at most %d bytes", GW_BUILD_NAME_MAX), -EINVAL;
	size_t base = strcspn(name, ":");
	if (!name_part(name, base, false) || (name[base] && !name_part(name + base + 1, strlen(name + base + 1), true)))
		return snprintf(msg, n, "name must be NAME or NAME:TAG: NAME [A-Za-z0-9][A-Za-z0-9._-]*, TAG "
				"[A-Za-z0-9_][A-Za-z0-9._-]*"), -EINVAL;
	snprintf(tpl, tpl_n, "%.*s", (int)base, name);
	if (strcmp(tpl, "default") == 0 || strcmp(tpl, "base") == 0)
		return snprintf(msg, n, "template %s is space's default template and is not built", tpl), -EINVAL;
	if (tags && !json_is_array(tags))
		return snprintf(msg, n, "tags must be an array of tags"), -EINVAL;
	size_t i;
	const json_t *t;
	char full[GW_BUILD_NAME_MAX * 2 + 2];
	if (name[base] || json_array_size(tags) == 0)
		json_array_append_new(names, json_string(strcmp(name + base, ":latest") == 0 ? tpl : name));
	json_array_foreach(tags, i, t) {
		const char *tag = json_string_value(t);
		if (!tag || !name_part(tag, strlen(tag), true) || base + 1 + strlen(tag) > GW_BUILD_NAME_MAX)
			return snprintf(msg, n, "a tag is [A-Za-z0-9_][A-Za-z0-9._-]*, and NAME:TAG at most %d bytes",
					GW_BUILD_NAME_MAX), -EINVAL;
		snprintf(full, sizeof(full), strcmp(tag, "latest") == 0 ? "%s" : "%s:%s", tpl, tag);
		json_array_append_new(names, json_string(full));
	}
	return 0;
}

/* ---- the routes ---- */

/* Whether spaced's template name may be built by owner: none of that name, or one it built. */
static enum MHD_Result check_name(struct req *r, const char *name, const char *owner, bool *ok)
{
	char path[256];
	char *q = client_escape(name);
	snprintf(path, sizeof(path), "/v1/templates/%s", q ? q : "");
	free(q);
	json_t *t = NULL;
	struct client_err e = { 0 };
	*ok = false;
	if (client_request(&r->gw->up, "GET", path, NULL, &t, &e) < 0) {
		if (e.kind == CLIENT_ERR_API && e.status == 404)
			return *ok = true, MHD_YES;
		return gw_error_from(r, &e);
	}
	bool mine = json_string_value(json_object_get(json_object_get(json_object_get(t, "config"), "labels"),
						      RECIPE_OWNER_LABEL)) && builds_visible(t, owner);
	json_decref(t);
	if (!mine)
		return gw_error(r, 403, "template %s is not yours to build: it is the operator's or another key's", name);
	return *ok = true, MHD_YES;
}

enum MHD_Result builds_request(struct req *r, const struct route_args *a)
{
	json_t *body = shape_body(r);
	if (!body)
		return gw_error(r, 400, "the body is not a JSON object");
	struct gw_build *b = calloc(1, sizeof(*b));
	char msg[300];
	uint8_t rnd[16];
	if (!b || !(b->names = json_array()) || !(b->log = json_array()) ||
	    getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		json_decref(body);
		if (b)
			build_free(b);
		return gw_error(r, 500, "out of memory");
	}
	b->context = -1;
	b->gw = r->gw;
	b->asked_ms = gw_mono_ms();
	owner_of(r, b->owner);
	rnd[6] = (rnd[6] & 0x0f) | 0x40;
	rnd[8] = (rnd[8] & 0x3f) | 0x80;
	snprintf(b->id, sizeof(b->id), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7], rnd[8], rnd[9], rnd[10], rnd[11], rnd[12], rnd[13],
		 rnd[14], rnd[15]);
	int rc = names_of(body, b->names, b->tpl, sizeof(b->tpl), msg, sizeof(msg));
	json_decref(body);
	if (rc < 0) {
		build_free(b);
		return gw_error(r, 400, "%s", msg);
	}
	size_t i;
	json_t *name;
	enum MHD_Result res = MHD_YES;
	json_array_foreach(b->names, i, name) {
		bool ok;
		res = check_name(r, json_string_value(name), b->owner, &ok);
		if (!ok) {
			build_free(b);
			return res;
		}
	}
	json_t *tags = json_array();
	json_array_foreach(b->names, i, name) {
		const char *colon = strchr(json_string_value(name), ':');
		json_array_append_new(tags, json_string(colon ? colon + 1 : "latest"));
	}
	json_t *out = json_pack("{s:s, s:s, s:o, s:[s], s:O, s:b}", "templateID", b->tpl, "buildID", b->id, "tags", tags,
				"aliases", b->tpl, "names", b->names, "public", false);
	int added = build_add(r->gw->builds, b);
	if (added < 0) {
		build_free(b);
		json_decref(out);
		if (added == -EDQUOT)
			return gw_error(r, 429, "this key has %d builds asked for or under way: wait for one to end",
					GW_BUILDS_PER_KEY);
		return gw_error(r, 429, "%d builds are asked for or under way: wait for one to end", GW_BUILDS_MAX);
	}
	return gw_json(r, 202, out);
}

static bool hash_ok(const char *h)
{
	size_t len = strlen(h);
	return len > 0 && len <= RECIPE_HASH_MAX && strspn(h, "0123456789abcdef") == len;
}

static enum MHD_Result file_link(struct req *r, const char *tpl, const char *hash)
{
	struct gw_builds *t = r->gw->builds;
	char owner[GW_BUILD_OWNER_LEN + 1], path[512];
	owner_of(r, owner);
	pthread_mutex_lock(&t->lock);
	bool known = build_find(t, tpl, NULL, owner);
	pthread_mutex_unlock(&t->lock);
	if (!known)
		return gw_error(r, 404, "template %s has no build of yours", tpl);
	if (!hash_ok(hash))
		return gw_error(r, 400, "a files hash is 1 to %d lower-case hex digits", RECIPE_HASH_MAX);
	snprintf(path, sizeof(path), "%s/%s-%s", t->dir, owner, hash);
	if (access(path, F_OK) == 0)
		return gw_json(r, 200, json_pack("{s:b}", "present", true));
	const char *host = gw_header(r, MHD_HTTP_HEADER_HOST), *key = gw_header(r, "X-API-KEY");
	char url[1024];
	if (!host || strpbrk(host, "/ \r\n") || (size_t)snprintf(url, sizeof(url), "http://%s%s", host, r->url) >= sizeof(url))
		return gw_error(r, 400, "the request's Host cannot make an upload URL");
	/* the SDK sends the upload with these headers alone: the key goes with them */
	return gw_json(r, 200, json_pack("{s:b, s:s, s:{s:s}}", "present", false, "url", url, "headers", "X-API-KEY", key));
}

#define FILES_PATH "/templates/{tpl}/files/{hash}"

/* Whether url is /templates/{tpl}/files/{hash} with a template name of at most
 * GW_BUILD_NAME_MAX bytes, with those into a. */
static bool files_path(const char *url, struct route_args *a)
{
	return route_match(FILES_PATH, 0, url, a) && strlen(a->param[0]) <= GW_BUILD_NAME_MAX;
}

static void upload_free(void *p)
{
	struct upload *u = p;
	if (u->fd >= 0)
		close(u->fd);
	if (u->part[0])
		unlink(u->part);
	free(u);
}

bool builds_upload(struct req *r, const char *data, size_t n)
{
	struct upload *u = r->upload;
	struct route_args a;
	if (!u) {
		if (strcmp(r->method, "PUT") != 0 || !files_path(r->url, &a) || !hash_ok(a.param[1]) ||
		    !(u = calloc(1, sizeof(*u))))
			return false;
		char owner[GW_BUILD_OWNER_LEN + 1];
		uint8_t rnd[8];
		owner_of(r, owner);
		u->fd = -1;
		r->upload = u;
		r->upload_free = upload_free;
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			u->failed = true;
			return true;
		}
		snprintf(u->part, sizeof(u->part), "%s/.part-%02x%02x%02x%02x%02x%02x%02x%02x", r->gw->builds->dir, rnd[0],
			 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
		snprintf(u->final, sizeof(u->final), "%s/%s-%s", r->gw->builds->dir, owner, a.param[1]);
		if ((u->fd = open(u->part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
			u->part[0] = '\0';
			u->failed = true;
		}
	}
	if (u->failed || u->too_large)
		return true;
	if (u->bytes + (long long)n > GW_BUILD_UPLOAD_MAX) {
		u->too_large = true;
		return true;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(u->fd, data + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			u->failed = true;
			break;
		}
		off += (size_t)w;
	}
	u->bytes += (long long)n;
	return true;
}

static enum MHD_Result upload_end(struct req *r, const char *tpl, const char *hash)
{
	struct upload *u = r->upload;
	char owner[GW_BUILD_OWNER_LEN + 1];
	if (!hash_ok(hash))
		return gw_error(r, 400, "a files hash is 1 to %d lower-case hex digits", RECIPE_HASH_MAX);
	owner_of(r, owner);
	pthread_mutex_lock(&r->gw->builds->lock);
	bool known = build_find(r->gw->builds, tpl, NULL, owner);
	pthread_mutex_unlock(&r->gw->builds->lock);
	if (!known)
		return gw_error(r, 404, "template %s has no build of yours", tpl);
	if (!u)
		return gw_error(r, 400, "the upload is empty");
	if (u->too_large)
		return gw_error(r, 413, "an upload of files is at most %ld bytes", GW_BUILD_UPLOAD_MAX);
	if (u->failed || close(u->fd) < 0 || (u->fd = -1, rename(u->part, u->final) < 0))
		return gw_error(r, 507, "the upload cannot be kept: %s", strerror(errno));
	u->part[0] = '\0';
	return gw_json(r, 200, NULL);
}

static enum MHD_Result trigger(struct req *r, const char *tpl, const char *id)
{
	struct gw_builds *t = r->gw->builds;
	char owner[GW_BUILD_OWNER_LEN + 1], msg[512];
	owner_of(r, owner);
	pthread_mutex_lock(&t->lock);
	struct gw_build *b = build_find(t, tpl, id, owner);
	bool asked = b && b->state == BUILDRUN_ASKED && b->context < 0;
	if (asked)
		b->context = -2; /* taken by this request */
	pthread_mutex_unlock(&t->lock);
	if (!b)
		return gw_error(r, 404, "build %s of template %s not found", id, tpl);
	if (!asked)
		return gw_error(r, 409, "build %s was started already", id);
	json_t *body = shape_body(r);
	const char *from = json_string_value(json_object_get(body, "fromTemplate"));
	int rc = body ? recipe_dockerfile(body, owner, shape_template, &b->recipe, msg, sizeof(msg)) : -EINVAL;
	if (!body)
		snprintf(msg, sizeof(msg), "the body is not a JSON object");
	/* another key's template is not there for this one, as a base either */
	if (rc == 0 && from && !builds_may_use(r, &r->gw->up, shape_template(from)))
		rc = -EINVAL, snprintf(msg, sizeof(msg), "fromTemplate: template %s not found", from);
	json_decref(body);
	int fd = rc < 0 ? -1 : open(t->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (rc == 0 && fd < 0)
		rc = -errno, snprintf(msg, sizeof(msg), "cannot make the build context: %s", strerror(errno));
	if (rc == 0)
		rc = recipe_archive(&b->recipe, t->dir, owner, fd, msg, sizeof(msg));
	pthread_mutex_lock(&t->lock);
	b->context = fd;
	if (rc == 0 && buildrun_start(b) < 0) {
		rc = -EAGAIN;
		snprintf(msg, sizeof(msg), "cannot start the build");
	}
	if (rc < 0) { /* the build ends here, with the reason the SDK shows */
		if (fd >= 0)
			close(fd);
		b->context = -1;
		buildrun_fail(b, msg);
	}
	pthread_mutex_unlock(&t->lock);
	return rc < 0 ? gw_error(r, rc == -ENOMEM ? 500 : 400, "%s", msg) : gw_json(r, 202, NULL);
}

static enum MHD_Result status(struct req *r, const char *tpl, const char *id)
{
	struct gw_builds *t = r->gw->builds;
	char owner[GW_BUILD_OWNER_LEN + 1];
	owner_of(r, owner);
	const char *off = gw_arg(r, "logsOffset");
	char *end = NULL;
	long from = off ? strtol(off, &end, 10) : 0;
	if (off && (*end || from < 0))
		return gw_error(r, 400, "logsOffset must be a whole number, 0 or more");
	pthread_mutex_lock(&t->lock);
	struct gw_build *b = build_find(t, tpl, id, owner);
	json_t *out = NULL;
	if (b) {
		json_t *entries = json_array(), *lines = json_array();
		for (size_t i = (size_t)from; i < json_array_size(b->log); i++) {
			json_t *e = json_array_get(b->log, i);
			json_array_append(entries, e);
			json_array_append_new(lines, json_string(json_string_value(json_object_get(e, "message"))));
		}
		out = json_pack("{s:s, s:s, s:s, s:o, s:o}", "buildID", b->id, "templateID", b->tpl, "status",
				state_names[b->state], "logEntries", entries, "logs", lines);
		if (b->reason)
			json_object_set(out, "reason", b->reason);
	}
	pthread_mutex_unlock(&t->lock);
	return out ? gw_json(r, 200, out) : gw_error(r, 404, "build %s of template %s not found", id, tpl);
}

enum MHD_Result builds_file_link(struct req *r, const struct route_args *a)
{
	/* a longer template name is not a template's files */
	return strlen(a->param[0]) <= GW_BUILD_NAME_MAX ? file_link(r, a->param[0], a->param[1]) : gw_no_route(r);
}

enum MHD_Result builds_upload_end(struct req *r, const struct route_args *a)
{
	return strlen(a->param[0]) <= GW_BUILD_NAME_MAX ? upload_end(r, a->param[0], a->param[1]) : gw_no_route(r);
}

enum MHD_Result builds_trigger(struct req *r, const struct route_args *a)
{
	return trigger(r, a->param[0], a->param[1]);
}

enum MHD_Result builds_status(struct req *r, const struct route_args *a)
{
	return status(r, a->param[0], a->param[1]);
}

/*
 * e2b/files.c - E2B's files on spaced's (docs/e2b.md): GET /files streams a file down, POST
 * /files takes multipart/form-data (multipart.h) and streams each part up to spaced as it
 * arrives, and the filesystem.Filesystem service's unary calls.
 *
 * The user a request acts as (users_of: the one it names, else envd's default user where the
 * sandbox has that account) goes with every call to spaced, which does the file operation as
 * that user, takes a relative path from the user's home and answers with absolute paths. In a
 * sandbox without the default user, a call that names none is root's, and a relative path is
 * taken from /work, space's default working folder (as a command's cwd).
 */
#include "e2b/files.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zlib.h>

#include "e2b/connect.h"
#include "e2b/multipart.h"
#include "e2b/stream.h"
#include "e2b/users.h"

#define WORKDIR "/work"
#define LIST_MAX_DEPTH 32 /* ListDir's depth, at most */
#define ABS_MAX 4200 /* bytes of a path made absolute, with its NUL */
#define URL_MAX 9000 /* bytes of a URL of spaced's that holds such a path */
#define INFLATE_CHUNK 65536 /* bytes of a gzip upload inflated at a time, on the connection's stack */

/* Whom a call acts as: the sandbox and the E2B user ("" for none). */
struct who {
	const char *sbid;
	char user[GW_USER_MAX + 1];
};

static void who_of(struct req *r, const char *sbid, struct who *w)
{
	w->sbid = sbid;
	if (!users_of(r, sbid, w->user, sizeof(w->user)))
		w->user[0] = '\0';
}

/* The path spaced gets for p into dst: relative ones from WORKDIR when no user is named (with
 * one, spaced takes them from its home); false when too long or empty. */
static bool abs_path(const struct who *w, const char *p, char *dst, size_t n)
{
	if (!p || !*p)
		return false;
	return (size_t)snprintf(dst, n, "%s%s", p[0] == '/' || w->user[0] ? "" : WORKDIR "/", p) < n;
}

/* "/v1/sandboxes/ID<route>?path=<escaped abs>[&user=<escaped user>]" into dst. */
static bool path_url(char *dst, size_t n, const struct who *w, const char *route, const char *abs)
{
	char *e = client_escape(abs), *u = w->user[0] ? client_escape(w->user) : NULL;
	char rest[8800];
	bool ok = e && (!w->user[0] || u) &&
		  (size_t)snprintf(rest, sizeof(rest), "%s?path=%s%s%s", route, e, u ? "&user=" : "", u ? u : "") <
			  sizeof(rest) &&
		  gw_sandbox_path(dst, n, w->sbid, rest);
	free(e);
	free(u);
	return ok;
}

/* A JSON body for spaced's mkdir or rename: the pairs given, and the user when there is one. */
static json_t *body_of(const struct who *w, json_t *body)
{
	if (body && w->user[0])
		json_object_set_new(body, "user", json_string(w->user));
	return body;
}

/* spaced's entry of abs (new reference), or NULL with e filled. */
static json_t *stat_of(struct gw *gw, const struct who *w, const char *abs, struct client_err *e)
{
	char url[9000];
	json_t *entry = NULL;
	if (!path_url(url, sizeof(url), w, "/files/stat", abs)) {
		e->kind = CLIENT_ERR_API;
		e->status = 400;
		snprintf(e->code, sizeof(e->code), "invalid_argument");
		snprintf(e->message, sizeof(e->message), "the path is too long");
		return NULL;
	}
	return client_request(&gw->up, "GET", url, NULL, &entry, e) == 0 ? entry : NULL;
}

bool files_abs_path(struct req *r, const char *sbid, const char *p, char *dst, size_t n)
{
	struct who w;
	if (!p || !*p)
		return false;
	who_of(r, sbid, &w);
	if (p[0] == '/' || !w.user[0])
		return abs_path(&w, p, dst, n);
	/* the user's home, as spaced resolves "." for that user */
	struct client_err e = { 0 };
	json_t *home = stat_of(r->gw, &w, ".", &e);
	const char *h = json_string_value(json_object_get(home, "path"));
	bool ok = h && (size_t)snprintf(dst, n, "%s%s%s", h, h[strlen(h) - 1] == '/' ? "" : "/", p) < n;
	json_decref(home);
	return ok;
}

/* Go's FileMode.String() of a type and permission bits ("-rw-r--r--", "drwxr-xr-x"). */
static void permissions(char *dst, const char *type, unsigned mode)
{
	static const char rwx[] = "rwxrwxrwx";
	dst[0] = strcmp(type, "dir") == 0 ? 'd' : strcmp(type, "symlink") == 0 ? 'L' : '-';
	for (int i = 0; i < 9; i++)
		dst[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	dst[10] = '\0';
}

/* E2B's EntryInfo of spaced's entry. */
static json_t *entry_info(const json_t *en)
{
	const char *type = json_string_value(json_object_get(en, "type")) ?: "other";
	unsigned mode = (unsigned)strtoul(json_string_value(json_object_get(en, "mode")) ?: "0", NULL, 8) & 0777;
	char perm[12], size[24];
	permissions(perm, type, mode);
	snprintf(size, sizeof(size), "%lld", (long long)json_integer_value(json_object_get(en, "size")));
	const char *t = strcmp(type, "file") == 0	 ? "FILE_TYPE_FILE"
			: strcmp(type, "dir") == 0	 ? "FILE_TYPE_DIRECTORY"
			: strcmp(type, "symlink") == 0 ? "FILE_TYPE_SYMLINK"
							 : "FILE_TYPE_UNSPECIFIED";
	return json_pack("{s:O, s:s, s:O, s:s, s:i, s:s, s:O*, s:O*, s:O?, s:O*}", "name", json_object_get(en, "name"),
			 "type", t, "path", json_object_get(en, "path"), "size", size, "mode", (int)mode, "permissions",
			 perm, "owner", json_object_get(en, "owner"), "group", json_object_get(en, "group"),
			 "modifiedTime", json_object_get(en, "mtime"), "symlinkTarget",
			 json_object_get(en, "symlink_target"));
}

/* A unary call's answer for spaced's error e. */
static enum MHD_Result fs_error(struct req *r, const struct client_err *e, const char *path)
{
	if (e->kind != CLIENT_ERR_API)
		return gw_connect_error(r, "unavailable", "%s", e->message);
	if (e->status == 404)
		return gw_connect_error(r, "not_found", "%s does not exist", path);
	return gw_connect_error(r, connect_code_of(e->code, e->status), "%s", e->message);
}

/* Appends the entries of dir (and below, depth levels in all) to out. 0, or -1 with e. */
static int list_into(struct gw *gw, const struct who *w, const char *dir, int depth, json_t *out,
		     struct client_err *e)
{
	char *after = NULL, *url = malloc(URL_MAX); /* on the heap: this recurses, up to LIST_MAX_DEPTH deep */
	int rc = url ? 1 : -1;
	while (rc == 1) {
		json_t *page = NULL;
		rc = path_url(url, URL_MAX, w, "/files/list", dir) ? 1 : -1;
		if (rc == 1 && after) {
			char *esc = client_escape(after);
			size_t len = strlen(url);
			if (!esc || (size_t)snprintf(url + len, URL_MAX - len, "&after=%s", esc) >= URL_MAX - len)
				rc = -1;
			free(esc);
		}
		if (rc == 1 && client_request(&gw->up, "GET", url, NULL, &page, e) < 0)
			rc = -1;
		size_t i;
		json_t *en;
		json_array_foreach(rc == 1 ? json_object_get(page, "entries") : NULL, i, en) {
			json_t *info = entry_info(en);
			if (strcmp(json_string_value(json_object_get(info, "type")), "FILE_TYPE_UNSPECIFIED") != 0)
				json_array_append(out, info);
			json_decref(info);
			const char *type = json_string_value(json_object_get(en, "type"));
			if (depth > 1 && type && strcmp(type, "dir") == 0 &&
			    list_into(gw, w, json_string_value(json_object_get(en, "path")), depth - 1, out, e) < 0) {
				rc = -1;
				break;
			}
		}
		free(after);
		after = NULL;
		if (rc == 1 && json_is_true(json_object_get(page, "truncated")))
			after = strdup(json_string_value(json_object_get(page, "next")) ?: "");
		else if (rc == 1)
			rc = 0;
		json_decref(page);
	}
	free(after);
	free(url);
	return rc;
}

/* The folder part of path ("/" for one at the root) into dst; false for a relative path of
 * one name, whose folder (a user's home) is not for the front to make. */
static bool dir_of(const char *path, char *dst, size_t n)
{
	snprintf(dst, n, "%s", path);
	char *slash = strrchr(dst, '/');
	if (slash == dst)
		dst[1] = '\0';
	else if (slash)
		*slash = '\0';
	return slash != NULL;
}

/* A filesystem.Filesystem unary call: its message, whom it acts as, the path it names made
 * absolute, and spaced's error. */
struct fs_call {
	json_t *msg;
	struct who w;
	char abs[ABS_MAX];
	struct client_err e;
};

/* A call's start (c zeroed), its path in its message's field: true, or false with the answer
 * queued in *rc. c->msg is the caller's to release (fs_end). */
static bool fs_begin(struct req *r, const struct route_args *a, const char *field, struct fs_call *c,
		     enum MHD_Result *rc)
{
	if (!(c->msg = gw_unary(r, rc)))
		return false;
	who_of(r, a->sbid, &c->w);
	if (abs_path(&c->w, json_string_value(json_object_get(c->msg, field)), c->abs, sizeof(c->abs)))
		return true;
	*rc = gw_connect_error(r, "invalid_argument", "a path is required (at most 4096 bytes)");
	json_decref(c->msg);
	return false;
}

/* Releases what fs_begin took, and passes rc on. */
static enum MHD_Result fs_end(struct fs_call *c, enum MHD_Result rc)
{
	json_decref(c->msg);
	return rc;
}

enum MHD_Result files_stat(struct req *r, const struct route_args *a)
{
	struct fs_call c = { 0 };
	enum MHD_Result rc;
	if (!fs_begin(r, a, "path", &c, &rc))
		return rc;
	json_t *en = stat_of(r->gw, &c.w, c.abs, &c.e);
	rc = en ? gw_json(r, 200, json_pack("{s:o}", "entry", entry_info(en))) : fs_error(r, &c.e, c.abs);
	json_decref(en);
	return fs_end(&c, rc);
}

/* ListDir's entries of folder en (stat_of's), depth levels down. */
static enum MHD_Result list_dir(struct req *r, struct fs_call *c, const json_t *en, int64_t depth)
{
	json_t *out = json_array();
	enum MHD_Result rc;
	if (strcmp(json_string_value(json_object_get(en, "type")) ?: "", "dir") != 0)
		rc = gw_connect_error(r, "invalid_argument", "%s is not a folder", c->abs);
	else if (list_into(r->gw, &c->w, json_string_value(json_object_get(en, "path")), depth ? (int)depth : 1, out,
			   &c->e) < 0)
		rc = fs_error(r, &c->e, c->abs);
	else
		rc = gw_json(r, 200, json_pack("{s:O}", "entries", out));
	json_decref(out);
	return rc;
}

enum MHD_Result files_list_dir(struct req *r, const struct route_args *a)
{
	struct fs_call c = { 0 };
	enum MHD_Result rc;
	if (!fs_begin(r, a, "path", &c, &rc))
		return rc;
	int64_t depth = 1;
	const json_t *d = json_object_get(c.msg, "depth");
	if (d && connect_int(d, &depth) < 0)
		depth = -1;
	if (depth < 0 || depth > LIST_MAX_DEPTH)
		return fs_end(&c, gw_connect_error(r, "invalid_argument", "depth must be 0..%d", LIST_MAX_DEPTH));
	json_t *en = stat_of(r->gw, &c.w, c.abs, &c.e);
	rc = en ? list_dir(r, &c, en, depth) : fs_error(r, &c.e, c.abs);
	json_decref(en);
	return fs_end(&c, rc);
}

enum MHD_Result files_make_dir(struct req *r, const struct route_args *a)
{
	struct fs_call c = { 0 };
	char url[URL_MAX];
	enum MHD_Result rc;
	if (!fs_begin(r, a, "path", &c, &rc))
		return rc;
	json_t *en = stat_of(r->gw, &c.w, c.abs, &c.e);
	const char *type = json_string_value(json_object_get(en, "type"));
	json_t *body = body_of(&c.w, json_pack("{s:s}", "path", c.abs));
	if (en)
		rc = strcmp(type ?: "", "dir") == 0 ? gw_connect_error(r, "already_exists", "%s exists", c.abs)
						    : gw_connect_error(r, "invalid_argument", "%s exists and is not a folder", c.abs);
	else if (c.e.status != 404)
		rc = fs_error(r, &c.e, c.abs);
	else if (!gw_sandbox_path(url, sizeof(url), a->sbid, "/files/mkdir") ||
		 client_request(&r->gw->up, "POST", url, body, NULL, &c.e) < 0 || !(en = stat_of(r->gw, &c.w, c.abs, &c.e)))
		rc = fs_error(r, &c.e, c.abs);
	else
		rc = gw_json(r, 200, json_pack("{s:o}", "entry", entry_info(en)));
	json_decref(body);
	json_decref(en);
	return fs_end(&c, rc);
}

/* Move's work, its source (abs) there: the destination's folder made, the rename, the entry. */
static enum MHD_Result move_to(struct req *r, const char *sbid, const struct who *w, const char *abs, const char *abs2)
{
	char parent[ABS_MAX], url[URL_MAX];
	struct client_err e = { 0 };
	enum MHD_Result rc;
	json_t *en = stat_of(r->gw, w, abs, &e);
	if (!en)
		return fs_error(r, &e, abs);
	json_decref(en);
	en = NULL;
	bool made = !dir_of(abs2, parent, sizeof(parent));
	json_t *mk = body_of(w, json_pack("{s:s}", "path", parent));
	json_t *mv = body_of(w, json_pack("{s:s, s:s}", "from", abs, "to", abs2));
	if (!made && (!gw_sandbox_path(url, sizeof(url), sbid, "/files/mkdir") ||
		      client_request(&r->gw->up, "POST", url, mk, NULL, &e) < 0))
		rc = fs_error(r, &e, abs);
	else if (!gw_sandbox_path(url, sizeof(url), sbid, "/files/rename") ||
		 client_request(&r->gw->up, "POST", url, mv, NULL, &e) < 0 || !(en = stat_of(r->gw, w, abs2, &e)))
		rc = fs_error(r, &e, abs);
	else
		rc = gw_json(r, 200, json_pack("{s:o}", "entry", entry_info(en)));
	json_decref(mk);
	json_decref(mv);
	json_decref(en);
	return rc;
}

enum MHD_Result files_move(struct req *r, const struct route_args *a)
{
	struct fs_call c = { 0 };
	char to[ABS_MAX];
	enum MHD_Result rc;
	if (!fs_begin(r, a, "source", &c, &rc))
		return rc;
	if (!abs_path(&c.w, json_string_value(json_object_get(c.msg, "destination")), to, sizeof(to)))
		return fs_end(&c, gw_connect_error(r, "invalid_argument", "a destination is required (at most 4096 bytes)"));
	return fs_end(&c, move_to(r, a->sbid, &c.w, c.abs, to));
}

enum MHD_Result files_remove(struct req *r, const struct route_args *a)
{
	struct fs_call c = { 0 };
	char url[URL_MAX];
	enum MHD_Result rc;
	if (!fs_begin(r, a, "path", &c, &rc))
		return rc;
	if (!path_url(url, sizeof(url), &c.w, "/files", c.abs) ||
	    (client_request(&r->gw->up, "DELETE", url, NULL, NULL, &c.e) < 0 && c.e.status != 404))
		return fs_end(&c, fs_error(r, &c.e, c.abs));
	return fs_end(&c, gw_json(r, 200, json_object()));
}

enum MHD_Result files_unknown(struct req *r, const struct route_args *a)
{
	struct fs_call c = { 0 };
	enum MHD_Result rc;
	if (!fs_begin(r, a, "path", &c, &rc))
		return rc;
	return fs_end(&c, gw_connect_error(r, "unimplemented", "filesystem.Filesystem/%s does not exist", a->param[0]));
}

/* An E2B HTTP error for spaced's error e about path. */
static enum MHD_Result http_error(struct req *r, const struct client_err *e, const char *path)
{
	if (e->kind == CLIENT_ERR_API && e->status == 404)
		return gw_error(r, 404, "%s does not exist", path);
	return gw_error_from(r, e);
}

struct download {
	struct gw *gw;
	char url[9000];
};

static void run_download(struct gw_stream *s, void *arg)
{
	struct download *dl = arg;
	long long written;
	struct client_err e = { 0 };
	/* the answer went out as a 200 after the stat: a read refused after it (a user's
	 * permissions) can only break the body off */
	if (client_download(&dl->gw->up, dl->url, gw_stream_fd(s), &written, &e) < 0)
		gw_stream_fail(s);
}

enum MHD_Result files_download(struct req *r, const struct route_args *a)
{
	const char *sbid = a->sbid;
	char abs[4200];
	struct client_err e = { 0 };
	struct who w;
	who_of(r, sbid, &w);
	if (!abs_path(&w, gw_arg(r, "path"), abs, sizeof(abs)))
		return gw_error(r, 400, "path is required (at most 4096 bytes)");
	json_t *en = stat_of(r->gw, &w, abs, &e);
	if (!en)
		return http_error(r, &e, abs);
	bool file = strcmp(json_string_value(json_object_get(en, "type")) ?: "", "dir") != 0;
	json_decref(en);
	if (!file)
		return gw_error(r, 400, "%s is a folder", abs);
	struct download *dl = calloc(1, sizeof(*dl));
	if (!dl)
		return MHD_NO;
	dl->gw = r->gw;
	path_url(dl->url, sizeof(dl->url), &w, "/files", abs);
	return gw_stream_start(r, "application/octet-stream", run_download, dl, free);
}

/* One part of a multipart upload on its way to spaced: a thread uploads what the socket pair
 * holds (a socket pair rather than a pipe, so that part_abort can make its reading fail). */
struct part {
	pthread_t t;
	int rd, wr;
	struct gw *gw;
	char url[9000];
	char path[4200];
	int rc;
	json_t *reply;        /* spaced's answer: {"path": the absolute path, "size"} */
	struct client_err e;
};

struct upload {
	struct req *r;
	char sbid[16];
	struct who w;
	struct multipart *mp;
	struct part *cur;
	json_t *written;      /* [{"name", "type", "path"}...] */
	struct client_err e;  /* the first failure; the rest of the body is read and dropped */
	bool failed;
	char failed_path[4200];
	bool raw;             /* an application/octet-stream body: the one file at ?path= */
	bool gzip;            /* ... with Content-Encoding: gzip, inflated through z */
	bool gzip_done;       /* z reached the end of the gzip stream */
	bool ended;           /* the whole body came (files_upload_end) */
	z_stream z;
};

static void *run_part(void *arg)
{
	struct part *p = arg;
	p->rc = client_upload(&p->gw->up, p->url, p->rd, -1, &p->reply, &p->e);
	close(p->rd);
	return NULL;
}

/* Ends the part under way: its last byte was given; waits for spaced's answer. */
static void part_end(struct upload *u)
{
	struct part *p = u->cur;
	if (!p)
		return;
	u->cur = NULL;
	close(p->wr);
	pthread_join(p->t, NULL);
	if (p->rc < 0 && !u->failed) {
		u->failed = true;
		u->e = p->e;
		snprintf(u->failed_path, sizeof(u->failed_path), "%s", p->path);
	} else if (p->rc == 0) {
		const char *path = json_string_value(json_object_get(p->reply, "path")) ?: p->path;
		const char *slash = strrchr(path, '/');
		json_array_append_new(u->written, json_pack("{s:s, s:s, s:s}", "name", slash ? slash + 1 : path, "type",
							       "file", "path", path));
	}
	json_decref(p->reply);
	free(p);
}

static int part_begin(struct upload *u, const char *name)
{
	struct part *p = calloc(1, sizeof(*p));
	int fds[2];
	const char *given = gw_arg(u->r, "path");
	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) { /* part_abort */
		free(p);
		return -ENOMEM;
	}
	p->rd = fds[0];
	p->wr = fds[1];
	p->gw = u->r->gw;
	if (!abs_path(&u->w, given ? given : name, p->path, sizeof(p->path)) ||
	    !path_url(p->url, sizeof(p->url), &u->w, "/files", p->path)) {
		close(p->rd);
		close(p->wr);
		free(p);
		if (!u->failed) {
			u->failed = true;
			u->e = (struct client_err){ .kind = CLIENT_ERR_API, .status = 400 };
			snprintf(u->e.message, sizeof(u->e.message), "a part names no path (or one over 4096 bytes)");
		}
		return -EINVAL;
	}
	if (pthread_create(&p->t, NULL, run_part, p) != 0) {
		close(p->rd);
		close(p->wr);
		free(p);
		return -ENOMEM;
	}
	u->cur = p;
	return 0;
}

static void on_begin(void *arg, const char *filename)
{
	struct upload *u = arg;
	part_end(u);
	if (!u->failed)
		part_begin(u, filename);
}

static void on_data(void *arg, const char *data, size_t n)
{
	struct upload *u = arg;
	if (u->cur && write(u->cur->wr, data, n) != (ssize_t)n) {
		part_end(u); /* spaced refused it midway: its answer says why */
		if (!u->failed) {
			u->failed = true;
			snprintf(u->e.message, sizeof(u->e.message), "the upload broke off");
		}
	}
}

static void on_end(void *arg)
{
	part_end(arg);
}

static const struct mp_sink sink = { .begin = on_begin, .data = on_data, .end = on_end };

/* Ends the part under way without writing it: its reader sees ECONNRESET (a Unix socket closed
 * with unread data makes its peer's reads fail), so spaced's upload breaks off, and spaced,
 * which writes into a temporary file and renames it at the end, leaves the file as it was. */
static void part_abort(struct upload *u)
{
	if (!u->cur)
		return;
	if (write(u->cur->rd, "x", 1) != 1) /* the unread byte, in the writing end's queue */
		shutdown(u->cur->rd, SHUT_RDWR);
	part_end(u);
}

static void upload_free(void *arg)
{
	struct upload *u = arg;
	if (!u->ended) /* the client left before the end of its body */
		part_abort(u);
	if (u->gzip)
		inflateEnd(&u->z);
	multipart_finish(u->mp);
	u->mp = NULL;
	part_end(u);
	json_decref(u->written);
	free(u);
}

/* A fault of the body: the part under way is not written, the rest of the body is dropped. */
static void upload_fail(struct upload *u, const char *msg)
{
	if (u->failed)
		return;
	u->failed = true;
	u->e = (struct client_err){ .kind = CLIENT_ERR_API, .status = 400 };
	snprintf(u->e.message, sizeof(u->e.message), "%s", msg);
	part_abort(u);
}

/* The upload of r, begun: multipart/form-data, or (envd 0.5.7) an application/octet-stream
 * body that is the file at ?path=, gzip-compressed when its Content-Encoding says so. NULL when
 * r is not an upload, or without memory. */
static struct upload *upload_begin(struct req *r, const char *sbid)
{
	const char *ct = gw_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *enc = gw_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
	bool raw = ct && strncasecmp(ct, "application/octet-stream", 24) == 0;
	if (strcmp(r->method, "POST") != 0 || strcmp(r->url, "/files") != 0 || !ct ||
	    (!raw && strncasecmp(ct, "multipart/form-data", 19) != 0))
		return NULL;
	struct upload *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->r = r;
	snprintf(u->sbid, sizeof(u->sbid), "%s", sbid);
	who_of(r, u->sbid, &u->w);
	u->written = json_array();
	r->upload = u;
	r->upload_free = upload_free;
	if (!raw) {
		if (!(u->mp = multipart_new(r->conn, &sink, u)))
			upload_fail(u, "the multipart body has no boundary");
		return u;
	}
	u->raw = true;
	if (enc && *enc && strcasecmp(enc, "identity") != 0 && strcasecmp(enc, "gzip") != 0) {
		upload_fail(u, "Content-Encoding must be gzip or none");
		return u;
	}
	if (enc && strcasecmp(enc, "gzip") == 0) {
		if (inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK) { /* 16: a gzip header, not zlib's */
			upload_fail(u, "out of memory");
			return u;
		}
		u->gzip = true;
	}
	if (!gw_arg(r, "path"))
		upload_fail(u, "an application/octet-stream upload names its file in ?path=");
	else if (part_begin(u, NULL) < 0)
		upload_fail(u, "out of memory");
	return u;
}

/* n more bytes of a gzip body, inflated into the file. */
static void inflate_feed(struct upload *u, const char *data, size_t n)
{
	unsigned char out[INFLATE_CHUNK];
	u->z.next_in = (unsigned char *)data;
	u->z.avail_in = (uInt)n;
	while (u->z.avail_in > 0 && !u->failed) {
		if (u->gzip_done) {
			upload_fail(u, "bytes follow the end of the gzip stream");
			return;
		}
		u->z.next_out = out;
		u->z.avail_out = sizeof(out);
		int rc = inflate(&u->z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
			upload_fail(u, "the body is not valid gzip");
			return;
		}
		on_data(u, (const char *)out, sizeof(out) - u->z.avail_out);
		u->gzip_done = rc == Z_STREAM_END;
		if (rc == Z_BUF_ERROR)
			return;
	}
}

bool files_upload(struct req *r, const char *sbid, const char *data, size_t n)
{
	struct upload *u = r->upload;
	if (!u && !(u = upload_begin(r, sbid)))
		return false;
	if (u->failed)
		return true; /* the rest of the body is read and dropped */
	if (u->raw && u->gzip)
		inflate_feed(u, data, n);
	else if (u->raw)
		on_data(u, data, n);
	else if (multipart_feed(u->mp, data, n) < 0)
		upload_fail(u, "the multipart body is malformed");
	return true;
}

enum MHD_Result files_upload_end(struct req *r, const struct route_args *a)
{
	const char *sbid = a->sbid;
	struct upload *u = r->upload;
	if (!u) /* an empty body: an octet-stream one is an empty file */
		u = upload_begin(r, sbid);
	if (!u)
		return gw_error(r, 400, "POST /files takes multipart/form-data or application/octet-stream");
	u->ended = true;
	if (u->gzip && !u->gzip_done)
		upload_fail(u, "the gzip body ended early");
	multipart_finish(u->mp);
	u->mp = NULL;
	part_end(u);
	if (u->failed)
		return http_error(r, &u->e, u->failed_path);
	if (json_array_size(u->written) == 0)
		return gw_error(r, 400, "the body holds no file (a part named \"file\")");
	return gw_json(r, 200, json_incref(u->written));
}

/*
 * builder/step.c - the steps of a build that change files: RUN in a sandbox, COPY and ADD
 * from the context, WORKDIR; each one's cache key; users looked up in a root filesystem (lib/user.h).
 */
#include "builder/build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/fs.h"
#include "lib/host/spawn.h"
#include "lib/host/cache.h"
#include "lib/host/names.h"
#include "lib/user.h"

/* ---- users ---- */

#define USER_FD_PATH 32 /* "/proc/self/fd/" and a descriptor's number */

/*
 * Opens file path of the root filesystem open at root (fs_open_in: none of its links leads
 * out) and writes into name the path lib/user.h's lookups read it by, /proc/self/fd/N ("" when
 * it cannot be opened: a lookup in it finds nothing). Returns the descriptor, which the caller
 * closes, or -errno.
 */
static int in_root(int root, const char *path, char name[USER_FD_PATH])
{
	int fd = fs_open_in(root, path, O_RDONLY);
	if (fd >= 0)
		snprintf(name, USER_FD_PATH, "/proc/self/fd/%d", fd);
	else
		name[0] = '\0';
	return fd;
}

static bool numeric(const char *s, long long *out)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 10)
		return false;
	*out = strtoll(s, NULL, 10);
	return *out < 0xffffffffll;
}

int step_user(struct build *b, const char *rootfs, const char *spec, long long *uid, long long *gid)
{
	char user[80], *group;
	snprintf(user, sizeof(user), "%s", spec);
	if ((group = strchr(user, ':')))
		*group++ = '\0';
	int root = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return build_fail(b, errno, "cannot open the build's files: %s", strerror(errno));
	char passwd[USER_FD_PATH], groups[USER_FD_PATH];
	int pfd = in_root(root, "/etc/passwd", passwd), gfd = in_root(root, "/etc/group", groups);
	struct user_info u;
	gid_t g;
	int rc = 0;
	if (numeric(user, uid)) {
		/* a number: its passwd line's group if it has one, else root's, as in Docker */
		*gid = user_by_spec_in(passwd, groups, user, &u) == 0 ? u.gid : 0;
	} else if (user_by_name_in(passwd, groups, user, &u) == 0) {
		*uid = u.uid;
		*gid = u.gid;
	} else {
		rc = build_fail(b, ENOENT, "no user %s in /etc/passwd", user);
	}
	if (rc == 0 && group && !numeric(group, gid)) {
		if (user_group_by_name_in(groups, group, &g) == 0)
			*gid = g;
		else
			rc = build_fail(b, ENOENT, "no group %s in /etc/group", group);
	}
	if (pfd >= 0)
		close(pfd);
	if (gfd >= 0)
		close(gfd);
	close(root);
	return rc;
}

/* ---- cache keys ---- */

static void put(EVP_MD_CTX *h, const void *p, size_t n)
{
	char len[24];
	snprintf(len, sizeof(len), "%zu:", n);
	EVP_DigestUpdate(h, len, strlen(len));
	EVP_DigestUpdate(h, p, n);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory fd, sorted, malloc'd (free each and the array); -errno. */
static int names_in(int fd, char ***out, size_t *n)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return -errno;
	}
	rewinddir(d);
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (cnt == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 32) * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[cnt] = strdup(de->d_name)))
			rc = -ENOMEM;
		else
			cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), by_name);
	*out = v;
	*n = cnt;
	return rc;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Hashes what a copy of the entry open at fd (a file or a directory, named rel) reads: names,
 * kinds, modes, link targets and contents, never following a link inside a directory. */
static int hash_open(struct build *b, EVP_MD_CTX *h, int fd, const char *rel, int depth, size_t *files)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return build_fail(b, errno, "cannot read %s in the build context: %s", rel, strerror(errno));
	if (++*files > BUILD_COPY_FILES_MAX)
		return build_fail(b, E2BIG, "a COPY reads more than %d files of the build context", BUILD_COPY_FILES_MAX);
	char head[64];
	snprintf(head, sizeof(head), "%o", (unsigned)st.st_mode);
	put(h, rel, strlen(rel));
	put(h, head, strlen(head));
	if (S_ISREG(st.st_mode)) {
		char buf[65536];
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			EVP_DigestUpdate(h, buf, (size_t)n);
		return n < 0 ? build_fail(b, errno, "cannot read %s in the build context: %s", rel, strerror(errno)) : 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (depth >= FS_DEPTH_MAX)
		return build_fail(b, ELOOP, "%s: more than %d directories deep", rel, FS_DEPTH_MAX);
	char **names;
	size_t n;
	int rc = names_in(fd, &names, &n);
	if (rc < 0)
		return build_fail(b, -rc, "cannot list %s in the build context: %s", rel, strerror(-rc));
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char child[PATH_MAX];
		snprintf(child, sizeof(child), "%s/%s", rel, names[i]);
		struct stat cst;
		if (fstatat(fd, names[i], &cst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(cst.st_mode)) {
			char target[PATH_MAX];
			ssize_t tn = readlinkat(fd, names[i], target, sizeof(target));
			put(h, child, strlen(child));
			put(h, target, tn > 0 ? (size_t)tn : 0);
			continue;
		}
		int cfd = openat(fd, names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (cfd < 0) { /* a fifo, socket or device: its kind is what a copy keeps */
			put(h, child, strlen(child));
			continue;
		}
		rc = hash_open(b, h, cfd, child, depth + 1, files);
		close(cfd);
	}
	free_names(names, n);
	return rc;
}

/* ---- sources ---- */

struct sources {
	char **v;
	size_t n;
};

static int add_source(struct sources *s, const char *path)
{
	char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	if (!(s->v[s->n] = strdup(path)))
		return -ENOMEM;
	s->n++;
	return 0;
}

/* Adds the context's paths under dir (a path in it, "" for its top) that match the pattern's
 * components from pat on. */
static int expand(struct build *b, const char *dir, const char *pat, struct sources *out, int depth)
{
	while (*pat == '/')
		pat++;
	if (!*pat)
		return add_source(out, *dir ? dir : ".");
	size_t n = strcspn(pat, "/");
	char comp[NAME_MAX + 1], path[PATH_MAX];
	if (n > NAME_MAX || depth > FS_DEPTH_MAX)
		return build_fail(b, ENAMETOOLONG, "a COPY source is too long");
	memcpy(comp, pat, n);
	comp[n] = '\0';
	if (strpbrk(comp, "*?[") == NULL) {
		snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", comp);
		return expand(b, path, pat + n, out, depth + 1);
	}
	int fd = fs_open_in(b->context, *dir ? dir : ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0;
	char **names;
	size_t cnt;
	int rc = names_in(fd, &names, &cnt);
	close(fd);
	for (size_t i = 0; rc == 0 && i < cnt; i++) {
		if (fnmatch(comp, names[i], 0) != 0)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", names[i]);
		rc = expand(b, path, pat + n, out, depth + 1);
	}
	free_names(names, cnt);
	return rc;
}

/* The context's paths a COPY's sources name, each one there. */
static int sources_of(struct build *b, const struct dockerfile_copy *c, struct sources *out)
{
	for (size_t i = 0; i < c->n_src; i++) {
		size_t before = out->n;
		int rc = strcmp(c->src[i], ".") == 0 ? add_source(out, ".") : expand(b, "", c->src[i], out, 0);
		if (rc < 0)
			return rc == -ENOMEM ? build_fail(b, ENOMEM, "out of memory") : rc;
		for (size_t j = before; j < out->n; j++) {
			int fd = fs_open_in(b->context, out->v[j], O_PATH);
			if (fd < 0)
				return build_fail(b, ENOENT, "%s: not in the build context", out->v[j]);
			close(fd);
		}
		if (out->n == before)
			return build_fail(b, ENOENT, "%s: nothing in the build context matches", c->src[i]);
	}
	if (out->n > 1 && !c->dest_dir)
		return build_fail(b, EINVAL, "more than one source needs a destination ending in '/' (%s)", c->dest);
	return 0;
}

static void free_sources(struct sources *s)
{
	free_names(s->v, s->n);
	s->v = NULL;
	s->n = 0;
}

/* ---- what each kind of step does to the files ---- */

/* Copies the sources into the root filesystem open at root. */
static int copy_into(struct build *b, const struct dockerfile_step *s, const struct sources *src, int root)
{
	const struct dockerfile_copy *c = &s->copy;
	struct fs_owner own = { .uid = 0, .gid = 0, .chmod = c->chmod };
	if (c->chown && step_user(b, b->rootfs, c->chown, &own.uid, &own.gid) < 0)
		return -ENOENT;
	char fsmsg[FS_MSG_MAX] = "";
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < src->n; i++) {
		int in = fs_open_in(b->context, src->v[i], O_RDONLY | O_NONBLOCK); /* a link to follow stays inside */
		struct stat st;
		if (in < 0 || fstat(in, &st) < 0) {
			rc = build_fail(b, in < 0 ? -in : errno, "cannot read %s in the build context", src->v[i]);
			break;
		}
		int into = -1;
		const char *name = NULL;
		if (S_ISDIR(st.st_mode)) { /* a folder's contents go into the destination */
			into = fs_mkdirs(root, c->dest, fsmsg);
			char **names = NULL;
			size_t n = 0;
			rc = into < 0 ? into : names_in(in, &names, &n);
			for (size_t j = 0; rc == 0 && j < n; j++)
				rc = fs_copy_at(in, names[j], into, names[j], &own, fsmsg);
			free_names(names, n);
		} else if (S_ISREG(st.st_mode)) {
			int existing = fs_open_in(root, c->dest, O_RDONLY | O_DIRECTORY);
			bool dir = c->dest_dir || existing >= 0 || strcmp(c->dest, "/") == 0;
			if (existing >= 0)
				close(existing);
			char parent[PATH_MAX];
			snprintf(parent, sizeof(parent), "%s", c->dest);
			char *slash = strrchr(parent, '/');
			if (dir) {
				name = strrchr(src->v[i], '/') ? strrchr(src->v[i], '/') + 1 : src->v[i];
			} else {
				name = c->dest + (slash - parent) + 1;
				slash[slash == parent] = '\0';
			}
			into = fs_mkdirs(root, dir ? c->dest : parent, fsmsg);
			rc = into < 0 ? into : fs_copy_file(in, into, name, &own, fsmsg);
		} else {
			rc = build_fail(b, EINVAL, "%s in the build context is neither a file nor a folder", src->v[i]);
		}
		if (into >= 0)
			close(into);
		close(in);
	}
	if (rc < 0 && fsmsg[0])
		build_fail(b, -rc, "%s %s: %s", s->kind == DOCKERFILE_ADD ? "ADD" : "COPY", c->dest, fsmsg);
	return rc;
}

/* What a sandbox's machinery puts in its files is not the step's: its name and resolver in
 * /etc, the mount points of the agent (oci.h) and the mark that keeps /tmp on its disk
 * (driver_gvisor.c). As in Docker, each keeps what the step before held. */
static const char *const machine_files[] = {
	"/etc/hostname", "/etc/hosts", "/etc/resolv.conf", OCI_SPACE_DIR, "/tmp/.on-disk",
};

static int keep_machine_files(struct build *b, int root)
{
	char fsmsg[FS_MSG_MAX] = "";
	int before = open(b->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof(machine_files) / sizeof(machine_files[0]); i++) {
		char dir[64];
		const char *name = strrchr(machine_files[i], '/') + 1;
		snprintf(dir, sizeof(dir), "%.*s", (int)(name - machine_files[i]), machine_files[i]);
		int was = before >= 0 ? fs_open_in(before, dir, O_RDONLY | O_DIRECTORY) : -1;
		int now = fs_open_in(root, dir, O_RDONLY | O_DIRECTORY);
		struct stat st;
		if (now >= 0)
			rc = fs_remove_at(now, name, fsmsg);
		if (rc == 0 && now >= 0 && was >= 0 && fstatat(was, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			rc = fs_copy_at(was, name, now, name, NULL, fsmsg);
		if (was >= 0)
			close(was);
		if (now >= 0)
			close(now);
	}
	if (rc < 0)
		build_fail(b, -rc, "%s", fsmsg);
	if (before >= 0)
		close(before);
	return rc;
}

static int client_failed(struct build *b, const char *what, const struct client_err *err)
{
	return build_fail(b, EIO, "%s: %s", what, err->message[0] ? err->message : "spaced did not answer");
}

struct run {
	struct build *b;
	int exit_code;
	bool exited;
	char error[512];
};

static int on_exec_event(json_t *ev, void *arg)
{
	struct run *r = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type)
		return 0;
	if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
		build_emit(r->b, json_pack("{s:s, s:s, s:O}", "type", "output", "stream", type, "data",
					   json_object_get(ev, "data")));
	} else if (strcmp(type, "keepalive") == 0) { /* a silent command: the build's client hears it lives */
		build_emit(r->b, json_pack("{s:s}", "type", "keepalive"));
	} else if (strcmp(type, "exit") == 0) {
		r->exited = true;
		r->exit_code = (int)json_integer_value(json_object_get(ev, "exit_code"));
	} else if (strcmp(type, "error") == 0) {
		snprintf(r->error, sizeof(r->error), "%s",
			 json_string_value(json_object_get(json_object_get(ev, "error"), "message")) ?: "failed");
	}
	return 0;
}

static int on_exec_tick(void *arg)
{
	struct run *r = arg;
	struct pollfd out = { .fd = STDOUT_FILENO };
	if (poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP)))
		*r->b->cancelled = 1; /* the build's reader (spaced, for its client) is gone */
	return *r->b->cancelled ? -ECANCELED : 0;
}

/* The RUN command of s in a sandbox made from the files before it: 0 once it exited 0, with
 * the sandbox paused and its id in id. */
static int run_command(struct build *b, const struct dockerfile_step *s, char id[64])
{
	struct client_err err = { 0 };
	/* a builder that dies (SIGKILL) leaves it behind: its deadline then removes it */
	json_t *reply = NULL, *body = json_pack("{s:s, s:s, s:{s:s}, s:i, s:s}", "template", b->from, "isolation", "gvisor",
						"metadata", "space.build", b->name, "timeout", BUILD_RUN_TIMEOUT_S + 300,
						"timeout_action", "kill");
	int rc = client_request(&b->client, "POST", "/v1/sandboxes", body, &reply, &err);
	json_decref(body);
	if (rc < 0)
		return client_failed(b, "cannot make the step's sandbox", &err);
	snprintf(id, 64, "%s", json_string_value(json_object_get(reply, "id")) ?: "");
	json_decref(reply);

	json_t *env = json_object();
	for (size_t i = 0; i < s->ctx.n_env; i++)
		json_object_set_new(env, s->ctx.env[i]->key, json_string(s->ctx.env[i]->value));
	const char *cwd = s->ctx.workdir;
	const char *base_cwd = json_string_value(json_object_get(b->base_config, "workdir"));
	if (strcmp(cwd, "/") == 0 && base_cwd)
		cwd = base_cwd; /* the base's, until a WORKDIR */
	char user[48] = "root";
	long long uid, gid;
	const char *base_user = json_string_value(json_object_get(b->base_config, "user"));
	if (s->ctx.user || base_user) {
		if (step_user(b, b->rootfs, s->ctx.user ? s->ctx.user : base_user, &uid, &gid) < 0)
			return -ENOENT;
		snprintf(user, sizeof(user), "%lld:%lld", uid, gid);
	}
	json_t *cmd = json_array();
	if (s->run.shell)
		cmd = json_string(s->run.shell);
	else
		for (size_t i = 0; i < s->run.argc; i++)
			json_array_append_new(cmd, json_string(s->run.argv[i]));
	body = json_pack("{s:o, s:o, s:s, s:s, s:i, s:b}", "cmd", cmd, "env", env, "cwd", cwd, "user", user, "timeout",
			 BUILD_RUN_TIMEOUT_S, "stream", 1);
	char path[160];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	struct run r = { .b = b };
	struct client_stream_ops ops = { .event = on_exec_event, .tick = on_exec_tick, .wake_fd = -1, .arg = &r };
	rc = client_stream(&b->client, "POST", path, body, &ops, &err);
	json_decref(body);
	if (rc == -ECANCELED || *b->cancelled)
		return build_fail(b, ECANCELED, "cancelled");
	if (rc < 0)
		return client_failed(b, "cannot run the command", &err);
	if (!r.exited)
		return build_fail(b, EIO, "the command did not finish: %s", r.error[0] ? r.error : "its output ended");
	if (r.exit_code != 0) {
		b->exit_code = r.exit_code;
		return build_fail(b, ECHILD, "the command returned exit code %d", r.exit_code);
	}
	/* what the sandbox wrote reaches its writable layer, and nothing in it runs on */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/sync", id);
	if ((rc = client_request(&b->client, "POST", path, NULL, NULL, &err)) == 0) {
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
		rc = client_request(&b->client, "POST", path, NULL, NULL, &err);
	}
	return rc < 0 ? client_failed(b, "cannot stop the step's sandbox", &err) : 0;
}

static void remove_sandbox(struct build *b, const char *id)
{
	if (!*id)
		return;
	char path[160];
	struct client_err err = { 0 };
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	client_request(&b->client, "DELETE", path, NULL, NULL, &err);
}

int step_link(struct build *b, const char *dir)
{
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	char *cp[] = { "cp", "-a", "-l", "--", b->rootfs, rootfs, NULL };
	if (mkdir(dir, 0755) < 0)
		return build_fail(b, errno, "cannot create %s: %s", dir, strerror(errno));
	if (spawn_run(cp, -1, -1) != 0)
		return build_fail(b, EIO, "cannot link the files of %s into %s", b->rootfs, rootfs);
	return 0;
}

struct fill {
	struct build *b;
	const struct dockerfile_step *s;
	const struct sources *src;
};

/* Makes tmp/rootfs: the files before the step (hard links) with the step's changes. */
static int fill_step(const char *tmp, void *arg, struct err *e)
{
	struct fill *f = arg;
	struct build *b = f->b;
	char id[64] = "", rootfs[PATH_MAX], upper[PATH_MAX];
	int rc = 0;
	if (f->s->kind == DOCKERFILE_RUN)
		rc = run_command(b, f->s, id);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmp);
	if (rc == 0 && step_link(b, tmp) < 0)
		rc = -EIO;
	int root = rc == 0 ? open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	char fsmsg[FS_MSG_MAX] = "";
	if (rc == 0 && root < 0)
		rc = build_fail(b, errno, "cannot open %s: %s", rootfs, strerror(errno));
	if (rc == 0 && f->s->kind == DOCKERFILE_RUN) {
		snprintf(upper, sizeof(upper), "%s/sandboxes/%s/layer/upper", b->state_dir, id);
		if (access(upper, F_OK) < 0)
			snprintf(upper, sizeof(upper), "%s/sandboxes/%s/upper", b->state_dir, id);
		int up = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = up < 0 ? build_fail(b, errno, "cannot read the step's changes: %s", strerror(errno))
			    : fs_apply_layer(up, root, fsmsg);
		if (up >= 0)
			close(up);
		if (rc < 0 && fsmsg[0])
			build_fail(b, -rc, "cannot keep the step's changes: %s", fsmsg);
		if (rc == 0)
			rc = keep_machine_files(b, root);
	} else if (rc == 0 && f->s->kind == DOCKERFILE_WORKDIR) {
		int fd = fs_mkdirs(root, f->s->workdir, fsmsg);
		if (fd < 0)
			rc = build_fail(b, -fd, "WORKDIR %s: %s", f->s->workdir, fsmsg);
		else
			close(fd);
	} else if (rc == 0) {
		rc = copy_into(b, f->s, f->src, root);
	}
	if (root >= 0)
		close(root);
	remove_sandbox(b, id);
	return rc < 0 ? err_set(e, ERR_BUILD_FAILED, -rc, "%s", b->msg) : 0;
}

int step_files(struct build *b, const struct dockerfile_step *s)
{
	struct sources src = { 0 };
	int rc = 0;
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	if (!h || !EVP_DigestInit_ex(h, EVP_sha256(), NULL))
		rc = build_fail(b, ENOMEM, "out of memory");
	size_t clen = dockerfile_canonical(s, NULL, 0);
	char *canon = rc == 0 ? malloc(clen + 1) : NULL;
	if (rc == 0 && !canon)
		rc = build_fail(b, ENOMEM, "out of memory");
	if (rc == 0) {
		dockerfile_canonical(s, canon, clen + 1);
		put(h, b->key, strlen(b->key));
		put(h, canon, clen);
	}
	if (rc == 0 && (s->kind == DOCKERFILE_COPY || s->kind == DOCKERFILE_ADD))
		rc = sources_of(b, &s->copy, &src);
	size_t files = 0;
	for (size_t i = 0; rc == 0 && i < src.n; i++) {
		int fd = fs_open_in(b->context, src.v[i], O_RDONLY | O_NONBLOCK);
		rc = fd < 0 ? build_fail(b, -fd, "cannot read %s in the build context", src.v[i])
			    : hash_open(b, h, fd, src.v[i], 0, &files);
		if (fd >= 0)
			close(fd);
	}
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	if (rc == 0 && !EVP_DigestFinal_ex(h, md, &mdlen))
		rc = build_fail(b, EIO, "cannot hash the step");
	EVP_MD_CTX_free(h);
	free(canon);
	char key[TEMPLATE_BUILD_KEY_LEN + 1], parent[PATH_MAX];
	for (int i = 0; rc == 0 && i < TEMPLATE_BUILD_KEY_LEN / 2; i++)
		snprintf(key + 2 * i, 3, "%02x", md[i]);
	snprintf(parent, sizeof(parent), "%s/build", b->cache_dir);
	if (rc == 0) {
		bool cached = cache_has(parent, key);
		build_step_event(b, s, cached);
		struct fill f = { .b = b, .s = s, .src = &src };
		struct err e = { 0 };
		/* held for the rest of the build, which reads it (the builder's exit lets go): no
		 * prune takes it away meanwhile (cache_prune.h) */
		int got = cache_hold(parent, key, fill_step, &f, &e);
		if (got < 0) {
			if (!b->msg[0])
				build_fail(b, -got, "%s", e.msg);
			rc = got;
		}
	}
	free_sources(&src);
	if (rc < 0)
		return rc;
	snprintf(b->key, sizeof(b->key), "%s", key);
	snprintf(b->from, sizeof(b->from), "%s%s", TEMPLATE_BUILD_PREFIX, key);
	snprintf(b->rootfs, sizeof(b->rootfs), "%s/%s/rootfs", parent, key);
	b->changed = true;
	return 0;
}

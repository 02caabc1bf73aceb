/*
 * daemon/store/template.c - building and finding template root filesystems
 * (see template.h).
 */
#include "daemon/store/template.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/host/dir.h"
#include "lib/host/hash.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "daemon/store/store.h"

#define TEMPLATE_SUITE "bookworm"
#define TEMPLATE_VARIANT "minbase"
#define TEMPLATE_PACKAGES "python3,bash,coreutils,procps,ca-certificates,sudo"
#define TEMPLATE_RECIPE 3 /* bump when the way the template is made changes */
/* The account E2B's templates have, made in every template built here: uid and gid 1000, its
 * home owned by it, bash its shell, root's through sudo without a password (as in E2B's base
 * template: the sandbox is the user's own). Run by mmdebstrap in the finished root ("$1"). */
#define TEMPLATE_USER_HOOK \
	"--customize-hook=chroot \"$1\" useradd --uid 1000 --user-group --create-home --home-dir /home/user " \
	"--shell /bin/bash user && chmod 0755 \"$1/home/user\" && " \
	"echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' > \"$1/etc/sudoers.d/user\" && chmod 0440 \"$1/etc/sudoers.d/user\""

/* The host's apt source files, the inputs that decide what gets installed. */
static int apt_sources(char paths[][300], int max)
{
	int n = 0;
	if (access("/etc/apt/sources.list", R_OK) == 0) {
		struct stat st;
		if (stat("/etc/apt/sources.list", &st) == 0 && st.st_size > 0)
			snprintf(paths[n++], 300, "/etc/apt/sources.list");
	}
	struct dirent **ents;
	int k = scandir("/etc/apt/sources.list.d", &ents, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		const char *nm = ents[i]->d_name;
		size_t l = strlen(nm);
		bool want = (l > 5 && strcmp(nm + l - 5, ".list") == 0) || (l > 8 && strcmp(nm + l - 8, ".sources") == 0);
		if (want && n < max)
			snprintf(paths[n++], 300, "/etc/apt/sources.list.d/%s", nm);
		free(ents[i]);
	}
	if (k >= 0)
		free(ents);
	return n;
}

static void add_file(struct buf *b, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char chunk[4096];
	ssize_t r;
	buf_put(b, path, strlen(path) + 1);
	while ((r = read(fd, chunk, sizeof(chunk))) > 0)
		buf_put(b, chunk, (size_t)r);
	close(fd);
}

/* The packages a template holds: the default's, then its own. */
static void package_list(const char *extra, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s", TEMPLATE_PACKAGES, *extra ? "," : "", extra);
}

int template_key(const char *extra, char out[65])
{
	struct buf b = { 0 };
	char recipe[TEMPLATE_EXTRA_MAX + 256], packages[TEMPLATE_EXTRA_MAX + 64], version[128] = "";
	char *argv[] = { "mmdebstrap", "--version", NULL };
	spawn_capture(argv, version, sizeof(version));
	package_list(extra, packages, sizeof(packages));
	snprintf(recipe, sizeof(recipe), "recipe=%d suite=%s variant=%s packages=%s mmdebstrap=%s", TEMPLATE_RECIPE,
		 TEMPLATE_SUITE, TEMPLATE_VARIANT, packages, version);
	buf_put(&b, recipe, strlen(recipe) + 1);
	char paths[32][300];
	int n = apt_sources(paths, 32);
	for (int i = 0; i < n; i++)
		add_file(&b, paths[i]);
	int rc = hash_sha256_hex(buf_head(&b), buf_avail(&b), out);
	buf_free(&b);
	return rc;
}

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

bool template_name_ok(const char *s)
{
	size_t n = strlen(s), name = strspn(s, NAME_CHARS);
	if (n < 1 || n > TEMPLATE_NAME_MAX || !isalnum((unsigned char)s[0]))
		return false;
	if (name == n)
		return true;
	const char *tag = s + name + 1; /* NAME:TAG, as Docker's: the tag [A-Za-z0-9_][A-Za-z0-9._-]* */
	return s[name] == ':' && (isalnum((unsigned char)tag[0]) || tag[0] == '_') && strspn(tag, NAME_CHARS) == strlen(tag);
}

void template_name_canon(char *s)
{
	size_t n = strlen(s), k = strlen(TEMPLATE_TAG_DEFAULT) + 1;
	if (n > k && s[n - k] == ':' && strcmp(s + n - k + 1, TEMPLATE_TAG_DEFAULT) == 0)
		s[n - k] = '\0';
}

/* Debian Policy 5.6.1: lower-case letters, digits, '+', '-' and '.', at least two characters,
 * starting with a letter or digit. Nothing else can reach mmdebstrap's command line. */
static bool package_ok(const char *s)
{
	size_t n = strlen(s);
	return n >= 2 && (islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])) &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789+-.") == n;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the default template holds package p already: a set that adds only such packages is
 * the default's, and shares its build. */
static bool in_default(const char *p)
{
	size_t n = strlen(p);
	for (const char *q = TEMPLATE_PACKAGES; *q;) {
		size_t k = strcspn(q, ",");
		if (k == n && strncmp(q, p, n) == 0)
			return true;
		q += k + (q[k] == ',');
	}
	return false;
}

int template_parse(const char *arg, struct template_spec *t, struct err *e)
{
	const char *eq = strchr(arg, '=');
	size_t nl = eq ? (size_t)(eq - arg) : strlen(arg);
	memset(t, 0, sizeof(*t));
	if (!eq)
		return err_set(e, ERR_INVALID, EINVAL, "'%s' is not NAME=PKG[,PKG...]", arg);
	if (nl > TEMPLATE_NAME_MAX)
		return err_set(e, ERR_INVALID, EINVAL, "a template's name is at most %d bytes",
			       TEMPLATE_NAME_MAX);
	memcpy(t->name, arg, nl);
	if (!template_name_ok(t->name))
		return err_set(e, ERR_INVALID, EINVAL,
			       "bad template name '%s': letters, digits, '.', '_' and '-', starting with a letter or digit, "
			       "and a :TAG of the same",
			       t->name);
	template_name_canon(t->name);
	if (strcmp(t->name, TEMPLATE_DEFAULT) == 0)
		return err_set(e, ERR_INVALID, EINVAL, "'default' is the template spaced always makes");
	if (strchr(eq + 1, ':')) { /* no package name holds one: an image */
		if (!template_is_image(eq + 1))
			return err_set(e, ERR_INVALID, EINVAL,
				       "template %s: '%s' is not an image (oci-archive:FILE, docker-archive:FILE, "
				       "oci:DIR[:REF], docker://REF)",
				       t->name, eq + 1);
		if (strlen(eq + 1) > TEMPLATE_SOURCE_MAX)
			return err_set(e, ERR_INVALID, EINVAL, "template %s: the image is over %d bytes",
				       t->name, TEMPLATE_SOURCE_MAX);
		snprintf(t->source, sizeof(t->source), "%s", eq + 1);
		return 0;
	}
	char list[TEMPLATE_EXTRA_MAX + 1];
	if (strlen(eq + 1) > TEMPLATE_EXTRA_MAX)
		return err_set(e, ERR_INVALID, EINVAL, "template %s: the package list is over %d bytes",
			       t->name, TEMPLATE_EXTRA_MAX);
	snprintf(list, sizeof(list), "%s", eq + 1);
	char *pkgs[TEMPLATE_EXTRA_MAX / 3 + 1];
	size_t n = 0;
	for (char *p = list, *end;; p = end + 1) {
		end = strchr(p, ',');
		if (end)
			*end = '\0';
		if (!package_ok(p))
			return err_set(e, ERR_INVALID, EINVAL, "template %s: '%s' is not a Debian package name",
				       t->name, p);
		pkgs[n++] = p;
		if (!end)
			break;
	}
	qsort(pkgs, n, sizeof(pkgs[0]), by_name);
	size_t off = 0;
	for (size_t i = 0; i < n; i++)
		if ((i == 0 || strcmp(pkgs[i], pkgs[i - 1]) != 0) && !in_default(pkgs[i]))
			off += (size_t)snprintf(t->extra + off, sizeof(t->extra) - off, "%s%s", off ? "," : "", pkgs[i]);
	return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int build(const char *tmpdir, const char *packages, const char *logpath, struct err *e)
{
	char rootfs[700], include[TEMPLATE_EXTRA_MAX + 80];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmpdir);
	snprintf(include, sizeof(include), "--include=%s", packages);
	char *argv[48] = { "mmdebstrap", "--variant=" TEMPLATE_VARIANT, include, "--mode=root", "--quiet",
			   TEMPLATE_USER_HOOK, TEMPLATE_SUITE, rootfs };
	int argc = 8;
	char paths[32][300];
	int n = apt_sources(paths, 32);
	for (int i = 0; i < n && argc < 46; i++)
		argv[argc++] = paths[i];
	argv[argc] = NULL;
	int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = spawn_run(argv, log, log);
	if (log >= 0)
		close(log);
	if (rc != 0)
		return err_set(e, ERR_INTERNAL, EIO, "mmdebstrap failed (status %d); see %s", rc, logpath);
	/* The working directory commands start in. */
	char work[800];
	snprintf(work, sizeof(work), "%s/work", rootfs);
	/* whoever a command runs as starts there: 0755 whatever spaced's umask (077) */
	if (mkdir(work, 0755) < 0 || chmod(work, 0755) < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot create %s: %s", work, strerror(errno));
	return 0;
}

int template_ensure(struct daemon *d, const struct template_spec *t, struct err *e)
{
	char key[65], dir[700], tmp[760], lockpath[720], logpath[720], rootfs[720];
	char packages[TEMPLATE_EXTRA_MAX + 64];
	if (t->source[0])
		return template_import(d, t, e);
	int rc = template_key(t->extra, key);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot compute the template key");
	package_list(t->extra, packages, sizeof(packages));
	snprintf(dir, sizeof(dir), "%s/templates/%s", d->cfg.cache_dir, key);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(lockpath, sizeof(lockpath), "%s.lock", dir);
	snprintf(logpath, sizeof(logpath), "%s.log", dir);
	char parent[600];
	snprintf(parent, sizeof(parent), "%s/templates", d->cfg.cache_dir);
	if ((rc = mkdir_p(parent, 0755)) < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot create %s: %s", parent, strerror(-rc));

	if ((rc = template_use(d, key)) < 0) /* before looking: a release sees it (template_release) */
		return err_set(e, ERR_INTERNAL, -rc, "cannot mark the template's files as used: %s", strerror(-rc));
	int lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		rc = -errno;
		if (lock >= 0)
			close(lock);
		return err_set(e, ERR_INTERNAL, -rc, "cannot lock %s", lockpath);
	}
	struct stat st;
	if (stat(rootfs, &st) != 0) {
		log_info("building template %s (%s) into %s (this takes a minute or more)", t->name, packages, dir);
		snprintf(tmp, sizeof(tmp), "%s.tmp", dir);
		char *rm[] = { "rm", "-rf", tmp, NULL };
		spawn_run(rm, -1, -1);
		if ((rc = mkdir_p(tmp, 0755)) < 0)
			rc = err_set(e, ERR_INTERNAL, -rc, "cannot create %s: %s", tmp, strerror(-rc));
		else if ((rc = build(tmp, packages, logpath, e)) == 0 && rename(tmp, dir) < 0)
			rc = err_set(e, ERR_INTERNAL, errno, "cannot rename %s: %s", tmp, strerror(errno));
		if (rc < 0)
			spawn_run(rm, -1, -1);
		else
			log_info("template %s ready", t->name);
	}
	close(lock);
	if (rc < 0)
		return rc;
	char source[TEMPLATE_EXTRA_MAX + 128];
	snprintf(source, sizeof(source), "debian:%s %s (mmdebstrap): %s", TEMPLATE_SUITE, TEMPLATE_VARIANT, packages);
	rc = store_put_template(d->store, t->name, key, rootfs, source, "{}");
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot record the template");
	template_put_info(d, t->name, rootfs,
			  json_pack("[{s:s, s:s, s:s}]", "made_by", "mmdebstrap", "suite", TEMPLATE_SUITE, "packages", packages));
	return 0;
}


bool template_is_build_step(const char *name)
{
	size_t pl = strlen(TEMPLATE_BUILD_PREFIX);
	if (strncmp(name, TEMPLATE_BUILD_PREFIX, pl) != 0 || strlen(name + pl) != TEMPLATE_BUILD_KEY_LEN)
		return false;
	return strspn(name + pl, "0123456789abcdef") == TEMPLATE_BUILD_KEY_LEN;
}

int template_rootfs(struct daemon *d, const char *name, char *out, size_t n)
{
	if (template_is_build_step(name)) {
		snprintf(out, n, "%s/build/%s/rootfs", d->cfg.cache_dir, name + strlen(TEMPLATE_BUILD_PREFIX));
		return access(out, F_OK) == 0 ? 0 : -ENOENT;
	}
	return store_template_path(d->store, name, out, n);
}

/*
 * builder/fs.c - see fs.h.
 */
#include "builder/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define OVERLAY_XATTR "trusted.overlay."
#define OPAQUE_XATTR "trusted.overlay.opaque"
#define XATTR_LIST_MAX 65536
#define XATTR_VALUE_MAX 65536

static int fail(char *msg, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, FS_MSG_MAX, fmt, ap);
	va_end(ap);
	if (n >= 0 && n < FS_MSG_MAX)
		snprintf(msg + n, (size_t)(FS_MSG_MAX - n), ": %s", strerror(err));
	return -err;
}

int fs_open_in(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

int fs_mkdirs(int root, const char *path, char *msg)
{
	char prefix[PATH_MAX];
	size_t len = 0;
	prefix[len++] = '/';
	prefix[len] = '\0';
	int fd = fs_open_in(root, "/", O_RDONLY | O_DIRECTORY);
	for (const char *p = path; fd >= 0;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			return fd;
		if (len + n + 2 > sizeof(prefix)) {
			close(fd);
			return fail(msg, ENAMETOOLONG, "%s", path);
		}
		char name[NAME_MAX + 1];
		if (n > NAME_MAX) {
			close(fd);
			return fail(msg, ENAMETOOLONG, "%s", path);
		}
		memcpy(name, p, n);
		name[n] = '\0';
		memcpy(prefix + len, p, n);
		len += n;
		prefix[len] = '\0';
		p += n;
		int next = fs_open_in(root, prefix, O_RDONLY | O_DIRECTORY);
		if (next == -ENOENT) {
			/* fd is the directory the name is in, as resolved inside root */
			if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
				int err = errno;
				close(fd);
				return fail(msg, err, "cannot create %s", prefix);
			}
			next = fs_open_in(root, prefix, O_RDONLY | O_DIRECTORY);
		}
		close(fd);
		if (next < 0)
			return fail(msg, -next, "cannot open %s as a directory", prefix);
		fd = next;
		prefix[len++] = '/';
		prefix[len] = '\0';
	}
	return fd < 0 ? fail(msg, -fd, "cannot open the root") : fd;
}

/* Calls fn for each entry of directory fd (but "." and ".."); stops at its first failure. */
static int each_entry(int fd, int (*fn)(int fd, const char *name, void *ctx), void *ctx, char *msg)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!dir) {
		int err = errno;
		if (dup_fd >= 0)
			close(dup_fd);
		return fail(msg, err, "cannot read a directory");
	}
	rewinddir(dir);
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (errno = 0, de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		rc = fn(fd, de->d_name, ctx);
	}
	if (rc == 0 && errno)
		rc = fail(msg, errno, "cannot read a directory");
	closedir(dir);
	return rc;
}

struct walk {
	char *msg;
	int depth;
	int ddir;                   /* copies and layers: the directory written */
	const struct fs_owner *own; /* copies */
};

static int remove_in(int dir, const char *name, struct walk *w);

static int remove_entry(int dir, const char *name, void *ctx)
{
	return remove_in(dir, name, ctx);
}

static int remove_in(int dir, const char *name, struct walk *w)
{
	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return fail(w->msg, errno, "cannot remove %s", name);
	if (w->depth >= FS_DEPTH_MAX)
		return fail(w->msg, ELOOP, "%s: more than %d directories deep", name, FS_DEPTH_MAX);
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail(w->msg, errno, "cannot open %s", name);
	struct walk in = *w;
	in.depth++;
	int rc = each_entry(fd, remove_entry, &in, w->msg);
	close(fd);
	if (rc == 0 && unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = fail(w->msg, errno, "cannot remove %s", name);
	return rc;
}

int fs_remove_at(int dir, const char *name, char *msg)
{
	struct walk w = { .msg = msg };
	return remove_in(dir, name, &w);
}

/* Copies the extended attributes of from to to, overlayfs's own left out. */
static int copy_xattrs(int from, int to, const char *name, char *msg)
{
	char *list = malloc(XATTR_LIST_MAX), *val = malloc(XATTR_VALUE_MAX);
	int rc = list && val ? 0 : fail(msg, ENOMEM, "%s", name);
	ssize_t n = rc == 0 ? flistxattr(from, list, XATTR_LIST_MAX) : 0;
	if (n < 0 && errno != ENOTSUP)
		rc = fail(msg, errno, "cannot list the attributes of %s", name);
	for (ssize_t i = 0; rc == 0 && i < n; i += (ssize_t)strlen(list + i) + 1) {
		const char *key = list + i;
		if (strncmp(key, OVERLAY_XATTR, strlen(OVERLAY_XATTR)) == 0)
			continue;
		ssize_t vn = fgetxattr(from, key, val, XATTR_VALUE_MAX);
		if (vn < 0 || fsetxattr(to, key, val, (size_t)vn, 0) < 0)
			rc = fail(msg, errno, "cannot copy attribute %s of %s", key, name);
	}
	free(list);
	free(val);
	return rc;
}

/* Owner, mode, attributes and times of st onto fd (in that order: a chown clears set-id
 * bits and file capabilities). */
static int finish_fd(int from, int fd, const struct stat *st, const struct fs_owner *own, const char *name,
		     char *msg)
{
	uid_t uid = own && own->uid >= 0 ? (uid_t)own->uid : st->st_uid;
	gid_t gid = own && own->gid >= 0 ? (gid_t)own->gid : st->st_gid;
	mode_t mode = own && own->chmod >= 0 ? (mode_t)own->chmod : st->st_mode & 07777;
	if (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0)
		return fail(msg, errno, "cannot set the owner and mode of %s", name);
	int rc = copy_xattrs(from, fd, name, msg);
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	if (rc == 0 && futimens(fd, ts) < 0)
		rc = fail(msg, errno, "cannot set the times of %s", name);
	return rc;
}

static int copy_data(int in, int out, const char *name, char *msg)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return fail(msg, errno, "cannot copy %s", name);
		break;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0)
			return fail(msg, errno, "cannot read %s", name);
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0)
				return fail(msg, errno, "cannot write %s", name);
			off += w;
		}
	}
}

static int copy_in(int sdir, const char *sname, int ddir, const char *dname, struct walk *w);

static int copy_child(int sfd, const char *name, void *ctx)
{
	struct walk *w = ctx;
	return copy_in(sfd, name, w->ddir, name, w);
}

static int copy_dir(int sdir, const char *sname, int ddir, const char *dname, const struct stat *st, struct walk *w)
{
	struct stat dt;
	if (fstatat(ddir, dname, &dt, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(dt.st_mode)) {
		int rc = remove_in(ddir, dname, w);
		if (rc < 0)
			return rc;
	}
	if (mkdirat(ddir, dname, 0700) < 0 && errno != EEXIST)
		return fail(w->msg, errno, "cannot create %s", dname);
	if (w->depth >= FS_DEPTH_MAX)
		return fail(w->msg, ELOOP, "%s: more than %d directories deep", sname, FS_DEPTH_MAX);
	int sfd = openat(sdir, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int dfd = openat(ddir, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc = sfd < 0 || dfd < 0 ? fail(w->msg, errno, "cannot open %s", sfd < 0 ? sname : dname) : 0;
	if (rc == 0) {
		struct walk in = *w;
		in.depth++;
		in.ddir = dfd;
		rc = each_entry(sfd, copy_child, &in, w->msg);
	}
	if (rc == 0)
		rc = finish_fd(sfd, dfd, st, w->own, dname, w->msg);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

static int copy_in(int sdir, const char *sname, int ddir, const char *dname, struct walk *w)
{
	struct stat st;
	if (fstatat(sdir, sname, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(w->msg, errno, "cannot read %s", sname);
	if (S_ISDIR(st.st_mode))
		return copy_dir(sdir, sname, ddir, dname, &st, w);
	if (S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		return 0; /* a socket is no file to keep; a whiteout hides nothing in a copy; and a device
			   * a sandbox made would be a device of the host's in the cache */
	int rc = remove_in(ddir, dname, w);
	if (rc < 0)
		return rc;
	uid_t uid = w->own && w->own->uid >= 0 ? (uid_t)w->own->uid : st.st_uid;
	gid_t gid = w->own && w->own->gid >= 0 ? (gid_t)w->own->gid : st.st_gid;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(sdir, sname, target, sizeof(target) - 1);
		if (n < 0)
			return fail(w->msg, errno, "cannot read link %s", sname);
		target[n] = '\0';
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		if (symlinkat(target, ddir, dname) < 0 || fchownat(ddir, dname, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    utimensat(ddir, dname, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(w->msg, errno, "cannot make link %s", dname);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) { /* a fifo: made, not opened */
		mode_t mode = w->own && w->own->chmod >= 0 ? (mode_t)w->own->chmod : st.st_mode & 07777;
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		if (mknodat(ddir, dname, (st.st_mode & S_IFMT) | mode, st.st_rdev) < 0 ||
		    fchownat(ddir, dname, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fchmodat(ddir, dname, mode, 0) < 0 || utimensat(ddir, dname, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(w->msg, errno, "cannot make %s", dname);
		return 0;
	}
	int in = openat(sdir, sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return fail(w->msg, errno, "cannot open %s", sname);
	int out = openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	rc = out < 0 ? fail(w->msg, errno, "cannot create %s", dname) : copy_data(in, out, dname, w->msg);
	if (rc == 0)
		rc = finish_fd(in, out, &st, w->own, dname, w->msg);
	close(in);
	if (out >= 0)
		close(out);
	return rc;
}

int fs_copy_at(int sdir, const char *sname, int ddir, const char *dname, const struct fs_owner *own, char *msg)
{
	struct walk w = { .msg = msg, .own = own };
	return copy_in(sdir, sname, ddir, dname, &w);
}

int fs_copy_file(int in, int ddir, const char *dname, const struct fs_owner *own, char *msg)
{
	struct walk w = { .msg = msg, .own = own };
	struct stat st;
	if (fstat(in, &st) < 0)
		return fail(msg, errno, "cannot read %s", dname);
	if (!S_ISREG(st.st_mode))
		return fail(msg, EINVAL, "%s is not a regular file", dname);
	int rc = remove_in(ddir, dname, &w);
	if (rc < 0)
		return rc;
	int out = openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	rc = out < 0 ? fail(msg, errno, "cannot create %s", dname) : copy_data(in, out, dname, msg);
	if (rc == 0)
		rc = finish_fd(in, out, &st, own, dname, msg);
	if (out >= 0)
		close(out);
	return rc;
}

static int apply_in(int upper, int dest, struct walk *w);

static int apply_entry(int upper, const char *name, void *ctx)
{
	struct walk *w = ctx;
	struct stat st, dt;
	if (fstatat(upper, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(w->msg, errno, "cannot read %s", name);
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0))
		return remove_in(w->ddir, name, w); /* a whiteout: the name was removed */
	if (!S_ISDIR(st.st_mode))
		return copy_in(upper, name, w->ddir, name, w);
	int sfd = openat(upper, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return fail(w->msg, errno, "cannot open %s", name);
	char opaque[2] = "";
	bool replaces = fgetxattr(sfd, OPAQUE_XATTR, opaque, sizeof(opaque)) == 1 && opaque[0] == 'y';
	bool merges = !replaces && fstatat(w->ddir, name, &dt, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(dt.st_mode);
	int rc = 0;
	if (!merges) {
		close(sfd);
		return (rc = remove_in(w->ddir, name, w)) < 0 ? rc : copy_in(upper, name, w->ddir, name, w);
	}
	int dfd = openat(w->ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		rc = fail(w->msg, errno, "cannot open %s", name);
	else if (w->depth >= FS_DEPTH_MAX)
		rc = fail(w->msg, ELOOP, "%s: more than %d directories deep", name, FS_DEPTH_MAX);
	if (rc == 0) {
		struct walk in = *w;
		in.depth++;
		in.ddir = dfd;
		rc = apply_in(sfd, dfd, &in);
	}
	if (rc == 0)
		rc = finish_fd(sfd, dfd, &st, NULL, name, w->msg);
	close(sfd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

static int apply_in(int upper, int dest, struct walk *w)
{
	w->ddir = dest;
	return each_entry(upper, apply_entry, w, w->msg);
}

int fs_apply_layer(int upper, int dest, char *msg)
{
	struct walk w = { .msg = msg };
	return apply_in(upper, dest, &w);
}

/*
 * agent/files.c - file operations answered by one frame: H_STAT, H_MKDIR,
 * H_REMOVE, H_RENAME and H_SYNC, plus the helpers the transfers share
 * (mkdir -p, A_STAT encoding, path arguments).
 *
 * Each handler reads its path with frame_str, runs the system calls inline
 * (they are quick, except sync(2), which is the point of H_SYNC) and answers
 * A_OK / A_STAT, or A_ERROR with the errno and "<op> <path>: <reason>".
 * Paths must be absolute, or relative to the home of the user the request
 * names (fsuser.h): the agent's own working directory is no business of the
 * host's. A request that names a user runs its system calls as that user.
 */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "fsuser.h"

#define REMOVE_MAX_FDS 32 /* directory fds nftw may hold open */

int files_args(struct agent *a, const struct frame *f, size_t off, struct files_req *r, int npaths)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < npaths; i++)
		if (!(r->given[i] = frame_str(f, &off)))
			return -EPROTO;
	const char *spec = off < f->len ? (const char *)f->payload + off : "";
	int err = fsuser_arg(f, &off, &r->user);
	if (err == -EPROTO)
		return err;
	if (err < 0)
		return conn_send_error(a, f->chan, EINVAL, "user %s: %s", spec,
				       err == -ENOENT ? "no such user in the sandbox's /etc/passwd"
				       : err == -EINVAL ? "ids are numbers below 4294967295"
							: strerror(-err)) < 0 ? -ENOMEM : 0;
	for (int i = 0; i < npaths; i++) {
		const char *given = r->given[i];
		r->path[i] = strlen(given) < PATH_MAX ? fsuser_path(&r->user, given, r->buf[i], PATH_MAX) : NULL;
		if (!r->path[i])
			return conn_send_error(a, f->chan, EINVAL,
					       "path must be absolute (or relative with a user) and shorter than %d bytes: %s",
					       PATH_MAX, given) < 0 ? -ENOMEM : 0;
	}
	return 1;
}

const char *files_basename(const char *path, char *buf, size_t size)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	size_t start = n;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (start == n)
		return "/";
	size_t len = n - start;
	if (len >= size)
		len = size - 1;
	memcpy(buf, path + start, len);
	buf[len] = '\0';
	return buf;
}

static uint32_t stat_type(mode_t m)
{
	if (S_ISREG(m))
		return SP_TYPE_FILE;
	if (S_ISDIR(m))
		return SP_TYPE_DIR;
	if (S_ISLNK(m))
		return SP_TYPE_LINK;
	return SP_TYPE_OTHER;
}

int files_send_stat(struct agent *a, uint32_t chan, const struct stat *st, const char *name, int dirfd,
		    const char *rel, const char *path)
{
	char target[PATH_MAX + 1] = "";
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(dirfd, rel, target, PATH_MAX);
		target[n > 0 ? n : 0] = '\0';
	}
	const char *owner = user_name_of(&a->names, st->st_uid);
	size_t lo = strlen(owner) + 1;
	char group[USER_NAME_MAX];
	snprintf(group, sizeof(group), "%s", user_group_name_of(&a->names, st->st_gid));
	size_t ln = strlen(name) + 1, lg = strlen(group) + 1, lt = strlen(target) + 1, lp = strlen(path) + 1;
	size_t len = sizeof(struct sp_stat) + ln + sizeof(struct sp_stat_ext) + lo + lg + lt + lp;
	if (len > SP_MAX_PAYLOAD)
		return -ENAMETOOLONG; /* never: names and paths are bounded far below */
	struct outframe *o = conn_frame_alloc(len);
	if (!o)
		return -ENOMEM;
	uint8_t *b = conn_frame_payload(o);
	frame_put_u64(b + offsetof(struct sp_stat, size), (uint64_t)st->st_size);
	frame_put_u64(b + offsetof(struct sp_stat, mtime), (uint64_t)(int64_t)st->st_mtim.tv_sec);
	frame_put_u32(b + offsetof(struct sp_stat, mode), st->st_mode & 07777);
	frame_put_u32(b + offsetof(struct sp_stat, type), stat_type(st->st_mode));
	frame_put_u32(b + offsetof(struct sp_stat, uid), st->st_uid);
	frame_put_u32(b + offsetof(struct sp_stat, gid), st->st_gid);
	uint8_t *p = b + sizeof(struct sp_stat);
	memcpy(p, name, ln);
	p += ln;
	frame_put_u32(p + offsetof(struct sp_stat_ext, mtime_nsec), (uint32_t)st->st_mtim.tv_nsec);
	frame_put_u32(p + offsetof(struct sp_stat_ext, rsvd), 0);
	p += sizeof(struct sp_stat_ext);
	memcpy(p, owner, lo);
	memcpy(p + lo, group, lg);
	memcpy(p + lo + lg, target, lt);
	memcpy(p + lo + lg + lt, path, lp);
	conn_frame_queue(a, o, SP_A_STAT, chan, len, NULL);
	return 0;
}

int files_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(buf))
		return n ? -ENAMETOOLONG : -ENOENT;
	memcpy(buf, path, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	for (char *p = buf + 1;; p++) {
		bool last = *p == '\0';
		if (*p != '/' && !last)
			continue;
		char c = *p;
		*p = '\0';
		if (p > buf && p[-1] != '/') { /* skip "//" */
			if (mkdir(buf, last ? mode : 0755) == 0) {
				if (last && chmod(buf, mode) < 0)
					return -errno;
			} else if (errno != EEXIST) {
				return -errno;
			} else {
				struct stat st;
				if (stat(buf, &st) < 0)
					return -errno;
				if (!S_ISDIR(st.st_mode))
					return last ? -EEXIST : -ENOTDIR;
			}
		}
		*p = c;
		if (last)
			break;
	}
	return 0;
}

int files_stat(struct agent *a, const struct frame *f)
{
	struct files_req r;
	char name[NAME_MAX + 1];
	struct stat st;
	int rc = files_args(a, f, 0, &r, 1);
	if (rc <= 0)
		return rc;
	const char *path = r.path[0];
	int err = fsuser_enter(&r.user);
	if (err == 0 && lstat(path, &st) < 0)
		err = -errno;
	fsuser_leave(&r.user);
	if (err < 0)
		return conn_send_error(a, f->chan, -err, "stat %s: %s", path, strerror(-err));
	return files_send_stat(a, f->chan, &st, files_basename(path, name, sizeof(name)), AT_FDCWD, path, path);
}

int files_mkdir(struct agent *a, const struct frame *f)
{
	uint32_t mode = frame_get_u32(f->payload + offsetof(struct sp_mode, mode)) & 07777;
	struct files_req r;
	int rc = files_args(a, f, sizeof(struct sp_mode), &r, 1);
	if (rc <= 0)
		return rc;
	const char *path = r.path[0];
	int err = fsuser_enter(&r.user);
	if (err == 0)
		err = files_mkdir_p(path, mode ? mode : 0755);
	fsuser_leave(&r.user);
	if (err < 0)
		return conn_send_error(a, f->chan, -err, "mkdir %s: %s", path, strerror(-err));
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, path);
}

/* nftw has no user pointer: the first error of a removal is kept here, and
 * only for the duration of one files_remove call. */
static int remove_errno;

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	int r = flag == FTW_DP ? rmdir(path) : unlink(path);
	if (r < 0 && errno != ENOENT) {
		remove_errno = errno;
		return 1; /* stop the walk */
	}
	return 0;
}

/* Removes path (a whole tree for a directory); returns 0 or -errno. */
static int remove_path(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return -errno;
	remove_errno = 0;
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) < 0)
			remove_errno = errno;
	} else if (nftw(path, remove_one, REMOVE_MAX_FDS, FTW_DEPTH | FTW_PHYS) < 0 &&
		   !remove_errno) {
		remove_errno = errno;
	}
	return -remove_errno;
}

int files_remove(struct agent *a, const struct frame *f)
{
	struct files_req r;
	int rc = files_args(a, f, 0, &r, 1);
	if (rc <= 0)
		return rc;
	const char *path = r.path[0];
	int err = fsuser_enter(&r.user);
	if (err == 0)
		err = remove_path(path);
	fsuser_leave(&r.user);
	remove_errno = -err;
	if (remove_errno)
		return conn_send_error(a, f->chan, remove_errno, "remove %s: %s", path,
				       strerror(remove_errno));
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

int files_rename(struct agent *a, const struct frame *f)
{
	struct files_req r;
	int rc = files_args(a, f, 0, &r, 2);
	if (rc <= 0)
		return rc;
	const char *from = r.path[0], *to = r.path[1];
	int err = fsuser_enter(&r.user);
	if (err == 0 && rename(from, to) < 0)
		err = -errno;
	fsuser_leave(&r.user);
	if (err < 0)
		return conn_send_error(a, f->chan, -err, "rename %s to %s: %s", from, to, strerror(-err));
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

int files_sync(struct agent *a, const struct frame *f)
{
	sync();
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

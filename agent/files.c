/*
 * agent/files.c - file operations answered by one frame: H_STAT, H_MKDIR,
 * H_REMOVE, H_RENAME and H_SYNC, plus the helpers the transfers share
 * (mkdir -p, A_STAT encoding, path arguments).
 *
 * Each handler reads its path with frame_str, runs the system calls inline
 * (they are quick, except sync(2), which is the point of H_SYNC) and answers
 * A_OK / A_STAT, or A_ERROR with the errno and "<op> <path>: <reason>".
 * Paths must be absolute: the agent's own working directory is no business
 * of the host's.
 */
#include "files.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define REMOVE_MAX_FDS 32 /* directory fds nftw may hold open */

const char *files_path_arg(const struct frame *f, size_t *off)
{
	return frame_str(f, off);
}

/* Answers EINVAL and returns false for a path the agent refuses. */
static bool path_ok(struct agent *a, uint32_t tag, const char *path)
{
	if (path[0] == '/' && strlen(path) < PATH_MAX)
		return true;
	conn_send_error(a, tag, EINVAL, "path must be absolute and shorter than %d bytes: %s",
			PATH_MAX, path);
	return false;
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

int files_send_stat(struct agent *a, uint32_t chan, const struct stat *st, const char *name)
{
	uint8_t b[sizeof(struct sp_stat)];
	frame_put_u64(b + offsetof(struct sp_stat, size), (uint64_t)st->st_size);
	frame_put_u64(b + offsetof(struct sp_stat, mtime), (uint64_t)(int64_t)st->st_mtime);
	frame_put_u32(b + offsetof(struct sp_stat, mode), st->st_mode & 07777);
	frame_put_u32(b + offsetof(struct sp_stat, type), stat_type(st->st_mode));
	frame_put_u32(b + offsetof(struct sp_stat, uid), st->st_uid);
	frame_put_u32(b + offsetof(struct sp_stat, gid), st->st_gid);
	return conn_send(a, SP_A_STAT, chan, b, sizeof(b), name);
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
	size_t off = 0;
	const char *path = files_path_arg(f, &off);
	char name[NAME_MAX + 1];
	struct stat st;
	if (!path)
		return -EPROTO;
	if (!path_ok(a, f->chan, path))
		return 0;
	if (lstat(path, &st) < 0)
		return conn_send_error(a, f->chan, errno, "stat %s: %s", path, strerror(errno));
	return files_send_stat(a, f->chan, &st, files_basename(path, name, sizeof(name)));
}

int files_mkdir(struct agent *a, const struct frame *f)
{
	size_t off = sizeof(struct sp_mode);
	uint32_t mode = frame_get_u32(f->payload + offsetof(struct sp_mode, mode)) & 07777;
	const char *path = files_path_arg(f, &off);
	if (!path)
		return -EPROTO;
	if (!path_ok(a, f->chan, path))
		return 0;
	int err = files_mkdir_p(path, mode ? mode : 0755);
	if (err < 0)
		return conn_send_error(a, f->chan, -err, "mkdir %s: %s", path, strerror(-err));
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
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

int files_remove(struct agent *a, const struct frame *f)
{
	size_t off = 0;
	const char *path = files_path_arg(f, &off);
	struct stat st;
	if (!path)
		return -EPROTO;
	if (!path_ok(a, f->chan, path))
		return 0;
	if (lstat(path, &st) < 0)
		return conn_send_error(a, f->chan, errno, "remove %s: %s", path, strerror(errno));
	remove_errno = 0;
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) < 0)
			remove_errno = errno;
	} else if (nftw(path, remove_one, REMOVE_MAX_FDS, FTW_DEPTH | FTW_PHYS) < 0 &&
		   !remove_errno) {
		remove_errno = errno;
	}
	if (remove_errno)
		return conn_send_error(a, f->chan, remove_errno, "remove %s: %s", path,
				       strerror(remove_errno));
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

int files_rename(struct agent *a, const struct frame *f)
{
	size_t off = 0;
	const char *from = frame_str(f, &off);
	const char *to = frame_str(f, &off);
	if (!from || !to)
		return -EPROTO;
	if (!path_ok(a, f->chan, from) || !path_ok(a, f->chan, to))
		return 0;
	if (rename(from, to) < 0)
		return conn_send_error(a, f->chan, errno, "rename %s to %s: %s", from, to,
				       strerror(errno));
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

int files_sync(struct agent *a, const struct frame *f)
{
	sync();
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

/*
 * agent/xfer.c - downloads, uploads and listings: requests that live across
 * many frames under the host's tag.
 *
 * Download (H_FREAD): A_STAT of the file, then A_DATA chunks while the tag
 * has credit (SP_WINDOW at first, H_CREDIT adds), then A_END; read errors end
 * it with A_ERROR. Only regular files are read; a directory is EISDIR.
 *
 * Upload (H_FWRITE): parent directories are made, bytes go into a new
 * temporary file ".<name>.space-<random>" beside the target, A_OK says to
 * start. Every H_DATA is written at once and returned as A_CREDIT; H_END sets
 * the mode and renames the temporary file over the target, so a reader never
 * sees half a file, then answers A_END. With SP_FWRITE_APPEND the target
 * itself is opened for appending instead. H_ABORT or a dropped connection
 * removes the temporary file.
 *
 * Listing (H_LIST): the names are read and sorted at once, then sent as one
 * A_STAT each (lstat at the time of sending; entries gone by then are
 * skipped) while the outgoing queue has room, then A_END.
 */
#include "xfer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "files.h"

#define TMP_NAME_KEEP 200 /* bytes of the target's name kept in the temporary name */

void xfer_init(struct agent *a)
{
	memset(&a->xfers, 0, sizeof(a->xfers));
	for (unsigned i = 0; i < AGENT_MAX_XFERS; i++)
		a->xfers.slots[i].fd = -1;
}

static struct xfer *xfer_find(struct agent *a, uint32_t tag, enum xfer_kind kind)
{
	for (unsigned i = 0; i < AGENT_MAX_XFERS; i++) {
		struct xfer *x = &a->xfers.slots[i];
		if (x->kind != XFER_FREE && x->tag == tag && (kind == XFER_FREE || x->kind == kind))
			return x;
	}
	return NULL;
}

/* A free slot for tag, or NULL after answering EBUSY / EAGAIN. */
static struct xfer *xfer_new(struct agent *a, uint32_t tag)
{
	if (xfer_find(a, tag, XFER_FREE)) {
		conn_send_error(a, tag, EBUSY, "tag %#x is already in use", tag);
		return NULL;
	}
	for (unsigned i = 0; i < AGENT_MAX_XFERS; i++) {
		struct xfer *x = &a->xfers.slots[i];
		if (x->kind == XFER_FREE) {
			x->tag = tag;
			return x;
		}
	}
	conn_send_error(a, tag, EAGAIN, "too many transfers in progress (%u)", AGENT_MAX_XFERS);
	return NULL;
}

/* Ends a transfer; an unfinished upload's temporary file is removed. */
static void xfer_free(struct xfer *x)
{
	if (x->fd >= 0)
		close(x->fd);
	if (x->tmp)
		unlink(x->tmp);
	for (size_t i = 0; i < x->nnames; i++)
		free(x->names[i]);
	free(x->names);
	free(x->tmp);
	free(x->target);
	free(x->dir);
	*x = (struct xfer){ .kind = XFER_FREE, .fd = -1 };
}

void xfer_abandon_all(struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_XFERS; i++)
		if (a->xfers.slots[i].kind != XFER_FREE)
			xfer_free(&a->xfers.slots[i]);
}

/* ---- download ---- */

int xfer_fread(struct agent *a, const struct frame *f)
{
	struct files_req r;
	char name[NAME_MAX + 1];
	struct stat st;
	int rc = files_args(a, f, 0, &r, 1);
	if (rc <= 0)
		return rc;
	const char *path = r.path[0];
	struct xfer *x = xfer_new(a, f->chan);
	if (!x)
		return 0;
	int fd = -1, err = fsuser_enter(&r.user);
	if (err == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0)
		err = -errno;
	fsuser_leave(&r.user);
	if (err < 0)
		return conn_send_error(a, f->chan, -err, "open %s: %s", path, strerror(-err));
	if (fstat(fd, &st) < 0)
		err = errno;
	else if (S_ISDIR(st.st_mode))
		err = EISDIR;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	if (err) {
		close(fd);
		return conn_send_error(a, f->chan, err, "read %s: %s", path,
				       err == EINVAL ? "not a regular file" : strerror(err));
	}
	x->kind = XFER_READ;
	x->fd = fd;
	x->credit = SP_WINDOW;
	return files_send_stat(a, f->chan, &st, files_basename(path, name, sizeof(name)), AT_FDCWD, path, path);
}

/* True when the file has no byte at the current offset (probed, not consumed). */
static bool at_eof(int fd)
{
	uint8_t b;
	off_t pos = lseek(fd, 0, SEEK_CUR);
	return pos >= 0 && pread(fd, &b, 1, pos) == 0;
}

/* Sends one chunk of a download, or its end. */
static void read_step(struct agent *a, struct xfer *x)
{
	size_t want = x->credit < SP_MAX_PAYLOAD ? (size_t)x->credit : SP_MAX_PAYLOAD;
	struct outframe *o = conn_frame_alloc(want);
	if (!o)
		return;
	ssize_t n = read(x->fd, conn_frame_payload(o), want);
	if (n > 0) {
		conn_frame_queue(a, o, SP_A_DATA, x->tag, (size_t)n, NULL);
		x->credit -= (uint64_t)n;
		/* the end needs no credit: when the window closes exactly at
		 * the end of the file, say so now */
		if (x->credit == 0 && at_eof(x->fd)) {
			conn_send(a, SP_A_END, x->tag, NULL, 0, NULL);
			xfer_free(x);
		}
		return;
	}
	free(o);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0)
		conn_send_error(a, x->tag, errno, "read: %s", strerror(errno));
	else
		conn_send(a, SP_A_END, x->tag, NULL, 0, NULL);
	xfer_free(x);
}

void xfer_credit(struct agent *a, uint32_t tag, uint32_t bytes)
{
	struct xfer *x = xfer_find(a, tag, XFER_READ);
	if (!x)
		return;
	x->credit += bytes;
	if (x->credit > (1ull << 30))
		x->credit = 1ull << 30;
}

/* ---- upload ---- */

static char *tmp_path_for(const char *dir, const char *base)
{
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint64_t)getpid() ^ ((uint64_t)agent_now_ms() << 16) ^ (uintptr_t)&rnd;
	char *s = NULL;
	if (asprintf(&s, "%s/.%.*s.space-%016llx", strcmp(dir, "/") ? dir : "", TMP_NAME_KEEP,
		     base, (unsigned long long)rnd) < 0)
		return NULL;
	return s;
}

/* Opens the file an upload writes into. Returns 0 or -errno. */
static int upload_open(struct xfer *x, const char *path, uint32_t flags)
{
	char dir[PATH_MAX], name[NAME_MAX + 1];
	const char *base = files_basename(path, name, sizeof(name));
	size_t n = strlen(path);
	if (path[n - 1] == '/' || strcmp(base, "/") == 0)
		return -EISDIR;
	memcpy(dir, path, n + 1);
	*strrchr(dir, '/') = '\0';
	int err = files_mkdir_p(*dir ? dir : "/", 0755);
	if (err < 0)
		return err;
	if (!(x->target = strdup(path)))
		return -ENOMEM;
	if (flags & SP_FWRITE_APPEND) {
		x->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
		x->chmod = x->fd >= 0;
		if (x->fd < 0 && errno == EEXIST)
			x->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
		return x->fd < 0 ? -errno : 0;
	}
	if (!(x->tmp = tmp_path_for(*dir ? dir : "/", base)))
		return -ENOMEM;
	x->fd = open(x->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
	if (x->fd < 0) {
		err = -errno;
		free(x->tmp);
		x->tmp = NULL;
		return err;
	}
	x->chmod = true;
	return 0;
}

int xfer_fwrite(struct agent *a, const struct frame *f)
{
	uint32_t mode = frame_get_u32(f->payload + offsetof(struct sp_fwrite, mode)) & 07777;
	uint32_t flags = frame_get_u32(f->payload + offsetof(struct sp_fwrite, flags));
	struct files_req r;
	int rc = files_args(a, f, sizeof(struct sp_fwrite), &r, 1);
	if (rc <= 0)
		return rc;
	const char *path = r.path[0];
	struct xfer *x = xfer_new(a, f->chan);
	if (!x)
		return 0;
	x->kind = XFER_WRITE;
	x->mode = mode ? mode : 0644;
	x->user = r.user;
	int err = fsuser_enter(&x->user);
	if (err == 0)
		err = upload_open(x, path, flags);
	fsuser_leave(&x->user);
	if (err < 0) {
		xfer_free(x);
		return conn_send_error(a, f->chan, -err, "write %s: %s", path, strerror(-err));
	}
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, path);
}

/* Fails an upload: A_ERROR, temporary file removed. */
static int upload_fail(struct agent *a, struct xfer *x, const char *what, int err)
{
	int r = conn_send_error(a, x->tag, err, "%s %s: %s", what, x->target, strerror(err));
	xfer_free(x);
	return r;
}

int xfer_data(struct agent *a, const struct frame *f)
{
	struct xfer *x = xfer_find(a, f->chan, XFER_WRITE);
	if (!x)
		return 0; /* an upload that failed or was aborted: drop the rest */
	for (size_t done = 0; done < f->len;) {
		ssize_t w = write(x->fd, f->payload + done, f->len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return upload_fail(a, x, "write", errno);
		done += (size_t)w;
	}
	uint8_t c[sizeof(struct sp_credit)];
	frame_put_u32(c, f->len);
	return f->len ? conn_send(a, SP_A_CREDIT, f->chan, c, sizeof(c), NULL) : 0;
}

int xfer_end(struct agent *a, const struct frame *f)
{
	struct xfer *x = xfer_find(a, f->chan, XFER_WRITE);
	if (!x)
		return 0;
	if (x->chmod && fchmod(x->fd, x->mode) < 0)
		return upload_fail(a, x, "chmod", errno);
	int fd = x->fd;
	x->fd = -1;
	if (close(fd) < 0)
		return upload_fail(a, x, "write", errno);
	if (x->tmp) {
		int err = fsuser_enter(&x->user);
		if (err == 0 && rename(x->tmp, x->target) < 0)
			err = -errno;
		fsuser_leave(&x->user);
		if (err < 0)
			return upload_fail(a, x, "rename into", -err);
		free(x->tmp);
		x->tmp = NULL;
	}
	xfer_free(x);
	return conn_send(a, SP_A_END, f->chan, NULL, 0, NULL);
}

int xfer_abort(struct agent *a, const struct frame *f)
{
	struct xfer *x = xfer_find(a, f->chan, XFER_FREE);
	if (x)
		xfer_free(x);
	return 0;
}

/* ---- listing ---- */

static int cmp_names(const void *l, const void *r)
{
	return strcmp(*(char *const *)l, *(char *const *)r);
}

/* Reads and sorts the names of the directory open at x->fd. */
static int list_read(struct xfer *x)
{
	int dfd = fcntl(x->fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int err = -errno;
		close(dfd);
		return err;
	}
	size_t cap = 0;
	int err = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (x->nnames == AGENT_LIST_MAX) {
			err = -EFBIG;
			break;
		}
		if (x->nnames == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **nn = realloc(x->names, ncap * sizeof(*nn));
			if (!nn) {
				err = -ENOMEM;
				break;
			}
			x->names = nn;
			cap = ncap;
		}
		if (!(x->names[x->nnames] = strdup(de->d_name))) {
			err = -ENOMEM;
			break;
		}
		x->nnames++;
		errno = 0;
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	if (!err)
		qsort(x->names, x->nnames, sizeof(*x->names), cmp_names);
	return err;
}

int xfer_list(struct agent *a, const struct frame *f)
{
	struct files_req r;
	int rc = files_args(a, f, 0, &r, 1);
	if (rc <= 0)
		return rc;
	const char *path = r.path[0];
	struct xfer *x = xfer_new(a, f->chan);
	if (!x)
		return 0;
	x->kind = XFER_LIST;
	x->user = r.user;
	int err = (x->dir = strdup(path)) ? fsuser_enter(&x->user) : -ENOMEM;
	if (err == 0) {
		x->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		err = x->fd < 0 ? -errno : list_read(x);
	}
	fsuser_leave(&x->user);
	if (err < 0) {
		xfer_free(x);
		return conn_send_error(a, f->chan, -err, "list %s: %s", path, strerror(-err));
	}
	return 0;
}

static void list_step(struct agent *a, struct xfer *x)
{
	for (unsigned k = 0; k < AGENT_LIST_BATCH && x->next < x->nnames && conn_has_room(a); k++) {
		const char *name = x->names[x->next++];
		char path[PATH_MAX];
		struct stat st;
		int dl = (int)strlen(x->dir);
		while (dl > 0 && x->dir[dl - 1] == '/')
			dl--; /* "/" and "/tmp/" as "" and "/tmp" */
		if (snprintf(path, sizeof(path), "%.*s/%s", dl, x->dir, name) >= (int)sizeof(path))
			continue; /* a name that makes no path: as if gone */
		int err = fsuser_enter(&x->user);
		if (err == 0 && fstatat(x->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			err = -errno;
		fsuser_leave(&x->user);
		if (err == 0)
			files_send_stat(a, x->tag, &st, name, x->fd, name, path);
	}
	if (x->next == x->nnames) {
		conn_send(a, SP_A_END, x->tag, NULL, 0, NULL);
		xfer_free(x);
	}
}

/* ---- pumping ---- */

static bool can_step(const struct agent *a, const struct xfer *x)
{
	return (x->kind == XFER_READ && x->credit) || (x->kind == XFER_LIST && conn_has_room(a));
}

void xfer_pump(struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_XFERS; i++) {
		struct xfer *x = &a->xfers.slots[i];
		if (!can_step(a, x))
			continue;
		if (x->kind == XFER_READ)
			read_step(a, x);
		else
			list_step(a, x);
	}
}

bool xfer_busy(const struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_XFERS; i++)
		if (can_step(a, &a->xfers.slots[i]))
			return true;
	return false;
}

/*
 * daemon/driver/cpio.c - the newc cpio writer (see cpio.h).
 *
 * An entry is a 110-byte ASCII header ("070701" and thirteen 8-digit hex
 * fields), the name and its NUL padded to a multiple of 4 bytes counting from
 * the header's start, then the data padded to a multiple of 4. The archive
 * ends with an entry named "TRAILER!!!".
 */
#include "daemon/driver/cpio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CPIO_HDR_SIZE 110u
#define CPIO_TRAILER "TRAILER!!!"
#define CPIO_COPY_CHUNK (64u * 1024u)

void cpio_init(struct cpio *w, int fd)
{
	*w = (struct cpio){ .fd = fd };
}

static int fail(struct cpio *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

static int put(struct cpio *w, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t r = write(w->fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(w, r < 0 ? -errno : -EIO);
		c += r;
		n -= (size_t)r;
		w->off += (uint64_t)r;
	}
	return 0;
}

/* Zero bytes up to the next multiple of 4 of the archive offset. */
static int pad4(struct cpio *w)
{
	static const char zero[4];
	size_t n = (4 - (w->off & 3)) & 3;
	return n ? put(w, zero, n) : 0;
}

static bool name_ok(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len > CPIO_NAME_MAX || name[0] == '/' || name[len - 1] == '/' ||
	    strcmp(name, CPIO_TRAILER) == 0)
		return false;
	for (const char *p = name; *p;) {
		const char *end = strchrnul(p, '/');
		size_t l = (size_t)(end - p);
		if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p = *end ? end + 1 : end;
	}
	return true;
}

/* The header and name of an entry with `size` bytes of data to follow. */
struct node {
	mode_t mode;
	uint64_t size;
	uint32_t ino, nlink;
	unsigned rdev_major, rdev_minor;
};

static int header(struct cpio *w, const char *name, const struct node *n)
{
	char hdr[CPIO_HDR_SIZE + 1];
	size_t namesize = strlen(name) + 1;
	snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", n->ino,
		 (unsigned)n->mode, 0u, 0u, n->nlink, 0u, (unsigned)n->size, 0u, 0u, n->rdev_major, n->rdev_minor,
		 (unsigned)namesize, 0u);
	if (put(w, hdr, CPIO_HDR_SIZE) < 0 || put(w, name, namesize) < 0)
		return w->err;
	return pad4(w);
}

/* Checks shared by every entry; returns 0 or the error to give. */
static int entry_check(struct cpio *w, const char *name, uint64_t size)
{
	if (w->err)
		return w->err;
	if (!name_ok(name))
		return fail(w, -EINVAL);
	if (size > CPIO_FILE_MAX)
		return fail(w, -EFBIG);
	return 0;
}

int cpio_dir(struct cpio *w, const char *name, mode_t perm)
{
	int rc = entry_check(w, name, 0);
	if (rc < 0)
		return rc;
	struct node n = { .mode = S_IFDIR | (perm & 07777), .ino = ++w->ino, .nlink = 2 };
	return header(w, name, &n);
}

int cpio_chardev(struct cpio *w, const char *name, mode_t perm, unsigned major, unsigned minor)
{
	int rc = entry_check(w, name, 0);
	if (rc < 0)
		return rc;
	struct node n = { .mode = S_IFCHR | (perm & 07777), .ino = ++w->ino, .nlink = 1,
			  .rdev_major = major, .rdev_minor = minor };
	return header(w, name, &n);
}

static struct node regular(struct cpio *w, mode_t perm, uint64_t size)
{
	return (struct node){ .mode = S_IFREG | (perm & 07777), .size = size, .ino = ++w->ino, .nlink = 1 };
}

int cpio_file(struct cpio *w, const char *name, mode_t perm, const void *data, size_t len)
{
	int rc = entry_check(w, name, len);
	if (rc < 0)
		return rc;
	struct node n = regular(w, perm, len);
	if (header(w, name, &n) < 0 || put(w, data, len) < 0)
		return w->err;
	return pad4(w);
}

int cpio_file_from(struct cpio *w, const char *name, mode_t perm, const char *path)
{
	if (w->err)
		return w->err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(w, -errno);
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0) {
		rc = fail(w, -errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fail(w, -EINVAL);
		goto out;
	}
	uint64_t size = (uint64_t)st.st_size, copied = 0;
	if ((rc = entry_check(w, name, size)) < 0)
		goto out;
	struct node n = regular(w, perm, size);
	if ((rc = header(w, name, &n)) < 0)
		goto out;
	char chunk[CPIO_COPY_CHUNK];
	while (copied < size) {
		size_t want = size - copied < sizeof(chunk) ? (size_t)(size - copied) : sizeof(chunk);
		ssize_t r = read(fd, chunk, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = fail(w, r < 0 ? -errno : -EIO); /* shrank under us */
			goto out;
		}
		if ((rc = put(w, chunk, (size_t)r)) < 0)
			goto out;
		copied += (uint64_t)r;
	}
	char extra;
	if (read(fd, &extra, 1) > 0) {
		rc = fail(w, -EIO); /* grew under us */
		goto out;
	}
	rc = pad4(w);
out:
	close(fd);
	return rc;
}

int cpio_finish(struct cpio *w)
{
	static const char zero[512];
	if (w->err)
		return w->err;
	struct node trailer = { .nlink = 1 };
	if (header(w, CPIO_TRAILER, &trailer) < 0)
		return w->err;
	size_t n = (512 - (w->off & 511)) & 511;
	return n ? put(w, zero, n) : 0;
}

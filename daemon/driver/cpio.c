/*
 * daemon/driver/cpio.c - the initramfs's archive (see cpio.h), written by libarchive's newc
 * writer.
 *
 * libarchive lays out the format (each entry's 110-byte header, the name and the data each
 * padded to 4 bytes, the "TRAILER!!!" entry); this file decides what it does not: which names
 * the kernel may be given, the entries' owners, times and inode numbers (so the same entries
 * make the same bytes), sizes the format's 8 hex digits can hold, and errors that stick. The
 * archive's blocks are CPIO_BLOCK bytes, its last one padded to a multiple of CPIO_PAD.
 */
#include "daemon/driver/cpio.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CPIO_TRAILER "TRAILER!!!"
#define CPIO_COPY_CHUNK (64u * 1024u)
#define CPIO_BLOCK (64u * 1024u) /* bytes libarchive gathers before each write */
#define CPIO_PAD 512u            /* the archive's length is a multiple of this */

static const unsigned NO_DEV[2] = { 0, 0 }; /* what is not a device node has */

static int fail(struct cpio *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

/* The error of libarchive's last failed call, kept in w. */
static int lib_fail(struct cpio *w)
{
	int e = archive_errno(w->a);
	return fail(w, e > 0 ? -e : -EIO);
}

/*
 * libarchive's writer: each block to the caller's fd; once the archive has failed, what
 * libarchive still holds (a block, the trailer it writes as it closes) goes nowhere.
 */
static la_ssize_t out_write(struct archive *a, void *arg, const void *buf, size_t n)
{
	struct cpio *w = arg;
	if (w->err)
		return (la_ssize_t)n;
	ssize_t r;
	do
		r = write(w->fd, buf, n);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		archive_set_error(a, errno, "cannot write the archive");
	return r < 0 ? -1 : r;
}

int cpio_init(struct cpio *w, int fd)
{
	*w = (struct cpio){ .fd = fd, .a = archive_write_new() };
	if (!w->a)
		return fail(w, -ENOMEM);
	if (archive_write_set_format_cpio_newc(w->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w->a, CPIO_BLOCK) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w->a, CPIO_PAD) != ARCHIVE_OK ||
	    archive_write_open2(w->a, w, NULL, out_write, NULL, NULL) != ARCHIVE_OK)
		return lib_fail(w);
	return 0;
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

/* The header of the next entry: owner root, time 0, the next inode number; nlink links, size
 * bytes of data to follow, and for a device node its numbers (dev[0] major, dev[1] minor). */
static int header(struct cpio *w, const char *name, mode_t mode, unsigned nlink, uint64_t size,
		  const unsigned dev[2])
{
	struct archive_entry *e = archive_entry_new();
	if (!e)
		return fail(w, -ENOMEM);
	archive_entry_set_pathname(e, name);
	archive_entry_set_mode(e, mode);
	archive_entry_set_ino(e, ++w->ino);
	archive_entry_set_nlink(e, nlink);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_rdevmajor(e, dev[0]);
	archive_entry_set_rdevminor(e, dev[1]);
	int rc = archive_write_header(w->a, e) == ARCHIVE_OK ? 0 : lib_fail(w);
	archive_entry_free(e);
	return rc;
}

/* Data of the entry whose header was written last. */
static int put(struct cpio *w, const void *p, size_t n)
{
	la_ssize_t r = n ? archive_write_data(w->a, p, n) : 0;
	if (r < 0)
		return lib_fail(w);
	return (size_t)r == n ? 0 : fail(w, -EIO);
}

int cpio_dir(struct cpio *w, const char *name, mode_t perm)
{
	int rc = entry_check(w, name, 0);
	return rc < 0 ? rc : header(w, name, S_IFDIR | (perm & 07777), 2, 0, NO_DEV);
}

int cpio_chardev(struct cpio *w, const char *name, mode_t perm, unsigned major, unsigned minor)
{
	int rc = entry_check(w, name, 0);
	const unsigned dev[2] = { major, minor };
	return rc < 0 ? rc : header(w, name, S_IFCHR | (perm & 07777), 1, 0, dev);
}

int cpio_file(struct cpio *w, const char *name, mode_t perm, const void *data, size_t len)
{
	int rc = entry_check(w, name, len);
	if (rc < 0 || (rc = header(w, name, S_IFREG | (perm & 07777), 1, len, NO_DEV)) < 0)
		return rc;
	return put(w, data, len);
}

/* Copies size bytes of fd into the entry begun; -EIO if fd holds fewer or more. */
static int copy_file(struct cpio *w, int fd, uint64_t size)
{
	char chunk[CPIO_COPY_CHUNK];
	for (uint64_t copied = 0; copied < size;) {
		size_t want = size - copied < sizeof(chunk) ? (size_t)(size - copied) : sizeof(chunk);
		ssize_t r = read(fd, chunk, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(w, r < 0 ? -errno : -EIO); /* shrank under us */
		int rc = put(w, chunk, (size_t)r);
		if (rc < 0)
			return rc;
		copied += (uint64_t)r;
	}
	char extra;
	return read(fd, &extra, 1) > 0 ? fail(w, -EIO) : 0; /* grew under us */
}

int cpio_file_from(struct cpio *w, const char *name, mode_t perm, const char *path)
{
	if (w->err)
		return w->err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(w, -errno);
	struct stat st;
	int rc;
	if (fstat(fd, &st) < 0)
		rc = fail(w, -errno);
	else if (!S_ISREG(st.st_mode))
		rc = fail(w, -EINVAL);
	else if ((rc = entry_check(w, name, (uint64_t)st.st_size)) == 0 &&
		 (rc = header(w, name, S_IFREG | (perm & 07777), 1, (uint64_t)st.st_size, NO_DEV)) == 0)
		rc = copy_file(w, fd, (uint64_t)st.st_size);
	close(fd);
	return rc;
}

int cpio_finish(struct cpio *w)
{
	if (!w->a)
		return w->err;
	/* closed even after an error (out_write then writes nothing): libarchive frees the block it
	 * gathers only as it closes */
	if (archive_write_close(w->a) != ARCHIVE_OK)
		lib_fail(w);
	archive_write_free(w->a);
	w->a = NULL;
	return w->err;
}

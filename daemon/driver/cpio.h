/*
 * daemon/driver/cpio.h - writing cpio archives in the "newc" format, the one
 * the Linux kernel unpacks as an initramfs (Documentation/driver-api/
 * early-userspace/buffer-format.rst).
 *
 * Entries are written to a file descriptor in the order they are added, by
 * libarchive, which gathers them into blocks: the file holds the whole archive
 * once cpio_finish has written the trailer and returned 0. Every entry has
 * uid 0, gid 0 and mtime 0, and inode numbers count up from 1, so the same
 * entries always make the same bytes (the archive can be cached by a key of
 * its inputs). Names are relative ("init", "lib/x.ko"): no leading '/', no
 * "." or ".." component, at most CPIO_NAME_MAX bytes; a parent directory must
 * be added before what it holds.
 *
 * Errors are sticky: after the first failed call every later one returns the
 * same error, so a caller may add all its entries and check cpio_finish only. A
 * failed write to the file descriptor may show first at cpio_finish. Every
 * cpio_init is ended by one cpio_finish, which releases the writer whatever
 * happened before; after an error it writes nothing more.
 */
#ifndef SPACE_DAEMON_CPIO_H
#define SPACE_DAEMON_CPIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct archive;

#define CPIO_NAME_MAX 1024u          /* bytes of an entry's name, without its NUL */
#define CPIO_FILE_MAX 0xffffffffull  /* newc stores a size in 8 hex digits */

struct cpio {
	int fd;            /* borrowed: the caller opens and closes it */
	struct archive *a; /* libarchive's writer, from cpio_init to cpio_finish, or NULL */
	uint32_t ino;      /* last inode number given */
	int err;           /* first error, or 0 */
};

/* Starts an archive on fd (positioned where the archive begins). libarchive holds w until
 * cpio_finish: it stays where it is until then. Returns 0 or -errno (-ENOMEM), which also
 * sticks. */
int cpio_init(struct cpio *w, int fd);

/* A directory entry, mode S_IFDIR | (perm & 07777). Returns 0 or -errno
 * (-EINVAL for a bad name). */
int cpio_dir(struct cpio *w, const char *name, mode_t perm);

/* A character device node, mode S_IFCHR | (perm & 07777), for the nodes the
 * kernel needs before anything mounts /dev (dev/console). */
int cpio_chardev(struct cpio *w, const char *name, mode_t perm, unsigned major, unsigned minor);

/* A regular file holding data[0..len). Returns 0 or -errno (-EFBIG past
 * CPIO_FILE_MAX). */
int cpio_file(struct cpio *w, const char *name, mode_t perm, const void *data, size_t len);

/* A regular file with the contents of the host file at path (read as it is
 * now; -EIO if it changes size while being copied). */
int cpio_file_from(struct cpio *w, const char *name, mode_t perm, const char *path);

/* Writes the trailer and pads the archive to a multiple of 512 bytes.
 * Returns 0 or the first error of the archive. */
int cpio_finish(struct cpio *w);

#endif

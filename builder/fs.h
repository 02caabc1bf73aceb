/*
 * builder/fs.h - the file work of a build, done on the host by a process that is root, on
 * files a sandbox or a build's client wrote: none of it is trusted.
 *
 * Every path inside a root filesystem being built is resolved as if that root were "/"
 * (openat2 with RESOLVE_IN_ROOT): a symbolic link an earlier step left, "/etc -> /" or
 * "x -> ../../..", never leads out of it. Trees are walked one directory descriptor at a
 * time with O_NOFOLLOW, so what is read (a sandbox's writable layer, a build's context) is
 * never followed out of either. Sockets and device nodes are not copied: a device a sandbox
 * made would be the host's in the cache (a whiteout, the device 0:0, is read as one).
 *
 * Every call returns 0 or -errno and, on failure, writes what failed into msg (FS_MSG_MAX).
 */
#ifndef SPACE_BUILDER_FS_H
#define SPACE_BUILDER_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FS_MSG_MAX 1024
#define FS_DEPTH_MAX 256 /* directories inside one another that a copy or removal walks */

/* How a copy sets what it writes: owner (uid -1: the source's), and mode (-1: the source's). */
struct fs_owner {
	long long uid, gid;
	int chmod;
};

/* Opens path (absolute or relative, inside root: root's own "/" for ".." and links) with
 * flags. Returns the descriptor or -errno. */
int fs_open_in(int root, const char *path, int flags);

/* Makes directory path inside root with every missing parent (mode 0755, owned by root), and
 * returns an O_DIRECTORY descriptor of it, or -errno (msg says which part failed). */
int fs_mkdirs(int root, const char *path, char *msg);

/* Removes name from dir (a directory with all it holds, never following a link). A name
 * that is not there is fine. */
int fs_remove_at(int dir, const char *name, char *msg);

/*
 * Copies the entry sname of directory sdir (a directory with everything in it) to dname in
 * ddir. An entry there already is replaced, unless both are directories: then the copy
 * merges into it. Owner, mode, times and extended attributes (not overlayfs's own
 * trusted.overlay.*) are kept, but for what own says. Links are copied as links.
 */
int fs_copy_at(int sdir, const char *sname, int ddir, const char *dname, const struct fs_owner *own, char *msg);

/* Copies the regular file open at in to dname in ddir, replacing what is there, as
 * fs_copy_at copies one. */
int fs_copy_file(int in, int ddir, const char *dname, const struct fs_owner *own, char *msg);

/*
 * Applies upper, the writable layer of an overlayfs mount (the upper directory of a sandbox
 * whose lower directory held what dest holds), to dest: a whiteout (character device 0:0)
 * removes its name, an opaque directory (trusted.overlay.opaque "y") replaces the one below,
 * and every other entry is copied over what dest had.
 */
int fs_apply_layer(int upper, int dest, char *msg);

#endif

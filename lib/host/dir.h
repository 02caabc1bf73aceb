/*
 * lib/host/dir.h - making directory trees, and measuring them.
 */
#ifndef SPACE_LIB_HOST_DIR_H
#define SPACE_LIB_HOST_DIR_H

#include <sys/types.h>

/* Makes path and every missing parent with mode (as mkdir -p; existing ones are fine).
 * Returns 0 or -errno (-ENAMETOOLONG past PATH_MAX). */
int dir_make(const char *path, mode_t mode);

/* The disk the tree at path takes (allocated blocks, as du), each file of several names
 * counted once, not crossing into other filesystems. Returns it, or -errno. Blocks. */
long long dir_usage(const char *path);

#endif

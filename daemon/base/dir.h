/*
 * daemon/base/dir.h - making directory trees.
 */
#ifndef SPACE_DAEMON_DIR_H
#define SPACE_DAEMON_DIR_H

#include <sys/types.h>

/* Makes path and every missing parent with mode (as mkdir -p; existing ones are fine).
 * Returns 0 or -errno (-ENAMETOOLONG past PATH_MAX). */
int dir_make(const char *path, mode_t mode);

#endif

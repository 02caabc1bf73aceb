/*
 * daemon/base/dir.c - see dir.h.
 */
#include "daemon/base/dir.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

int dir_make(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

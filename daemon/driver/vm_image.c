/*
 * daemon/driver/vm_image.c - template disk images' names and their removal (see vm_image.h).
 */
#include "daemon/driver/vm_image.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/host/hash.h"

int vm_image_name(const char *real_rootfs, char *name, size_t n)
{
	char recipe[4200], key[65];
	int len = snprintf(recipe, sizeof(recipe), "recipe=%d erofs %s", VM_IMAGE_RECIPE, real_rootfs);
	if (len < 0 || (size_t)len >= sizeof(recipe))
		return -ENAMETOOLONG;
	int rc = hash_sha256_hex(recipe, (size_t)len, key);
	if (rc < 0)
		return rc;
	return snprintf(name, n, "%s.erofs", key) < (int)n ? 0 : -ENAMETOOLONG;
}

int vm_image_remove(const char *cache_dir, const char *real_rootfs)
{
	static const char *const beside[] = { "", ".bytes", ".lock" };
	char name[80], path[4200];
	int rc = vm_image_name(real_rootfs, name, sizeof(name));
	if (rc < 0)
		return rc;
	int found = 0;
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s/%s%s", cache_dir, VM_IMAGE_DIR, name, beside[i]) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		if (unlink(path) == 0)
			found |= i == 0;
		else if (errno != ENOENT)
			rc = -errno;
	}
	return rc < 0 ? rc : found;
}

/*
 * daemon/driver/vm_image.h - the name of a template's disk image for microVMs in the machine's
 * cache (<cache>/images/<key>.erofs, made by vm_guest_template_image from the template's files),
 * and its removal with those files.
 */
#ifndef SPACE_DAEMON_VM_IMAGE_H
#define SPACE_DAEMON_VM_IMAGE_H

#include <stddef.h>

#define VM_IMAGE_RECIPE 1 /* bump when template images are made differently */
#define VM_IMAGE_DIR "images" /* their folder in the cache */

/* The file name (<key>.erofs) of the image of the template whose files are at real_rootfs (a
 * path realpath gave), into name. Returns 0 or -errno. */
int vm_image_name(const char *real_rootfs, char *name, size_t n);

/* Removes the image of real_rootfs, and its size and lock beside it, from cache_dir: called as
 * the template's files leave the cache, when no state dir uses them. Returns 1 when there was
 * one, 0 when there was none, or -errno. */
int vm_image_remove(const char *cache_dir, const char *real_rootfs);

#endif

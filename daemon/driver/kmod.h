/*
 * daemon/driver/kmod.h - kernel modules of a guest kernel: their names, what
 * their .modinfo section says, and the order to load a set of them in.
 *
 * The guest's init loads modules itself (finit_module), with no modprobe and
 * no modules.dep (Debian's kernel package leaves depmod to its postinst, so
 * the .deb holds none). The order is computed here, on the host, from each
 * module's own `depends=` field, and written into the initramfs. Soft
 * dependencies (`softdep=`) are not followed: the modules the guest uses
 * have none that are not built in.
 *
 * Nothing here touches the file system except through the lookup callback
 * the caller gives, so the ordering is testable without a kernel.
 */
#ifndef SPACE_DAEMON_KMOD_H
#define SPACE_DAEMON_KMOD_H

#include <stdbool.h>
#include <stddef.h>

#define KMOD_NAME_MAX 56u      /* the kernel's MODULE_NAME_LEN, NUL included */
#define KMOD_MAX 64u           /* modules one order may hold, built-in ones included */
#define KMOD_DEPENDS_MAX 1024u /* bytes of one module's depends= value */

/*
 * The value of `key` in the .modinfo section of a module image (an ELF64
 * little-endian relocatable object, image[0..len)), copied with its NUL into
 * out[0..n). Returns 0, -ENOENT when the key is absent, -ENOEXEC when the
 * image is not such an object or its sections are not inside it, -ENOSPC
 * when the value does not fit.
 */
int kmod_modinfo(const void *image, size_t len, const char *key, char *out, size_t n);

/*
 * The module name of a module file path: its base name without ".ko" (or
 * ".ko.xz", ".ko.zst", ".ko.gz", then *compressed is set), with '-' made '_'
 * as the kernel does ("hw_random/virtio-rng.ko" -> "virtio_rng").
 * Returns 0, or -EINVAL when the path does not name a module file or the
 * name is longer than KMOD_NAME_MAX - 1.
 */
int kmod_name_of(const char *path, char out[KMOD_NAME_MAX], bool *compressed);

/*
 * How kmod_order learns about one module: fills depends[0..n) with its
 * depends= value (comma-separated names, possibly "") and returns 0; returns
 * 1 for a module built into the kernel (nothing to load); -ENOENT for a
 * module the kernel does not have; another -errno on failure.
 */
typedef int kmod_lookup_fn(void *ctx, const char *name, char *depends, size_t n);

struct kmod_order {
	unsigned n;
	char names[KMOD_MAX][KMOD_NAME_MAX]; /* load order: each after all it depends on */
};

/*
 * The modules to load for want[0..nwant), dependencies first, each once,
 * built-in ones left out; among independent modules, the order of want.
 * Returns 0; -ENOENT when a wanted or needed module does not exist, -ELOOP
 * when modules depend on each other in a circle, -E2BIG past KMOD_MAX
 * modules, -EINVAL for a bad name, or the lookup's error. On failure the
 * name of the module at fault is copied into bad[0..nbad) (if bad).
 */
int kmod_order(const char *const *want, unsigned nwant, kmod_lookup_fn *lookup, void *ctx,
	       struct kmod_order *out, char *bad, size_t nbad);

#endif

/*
 * daemon/driver/vm_guest.h - what a microVM boots: Debian's cloud kernel and an
 * initramfs of our own whose /init is space-agent.
 *
 * Both live in the machine's cache (lib/host/cache.h), keyed by their inputs:
 *
 *   <cache>/kernels/<release>_<version>/root/   the kernel package unpacked with
 *       dpkg-deb -x, never installed: boot/vmlinuz-<release>, lib/modules/<release>/
 *   <cache>/initramfs/<key>.img                 key: hash of the kernel, the module
 *       list, the agent's bytes and the recipe
 *
 * The kernel is the package that Debian's meta package VM_KERNEL_META depends
 * on in the host's package lists now (apt-cache, no network), fetched with
 * apt-get download: a kernel update in the archive gives a new cache entry and
 * leaves the old one for the VMs that booted from it.
 *
 * Call order: vm_guest_kernel, then vm_guest_initramfs with its result. Both
 * block for as long as a download, an unpack or a build takes (seconds): job
 * threads only, never with d->lock held. Neither logs: the caller does, with
 * the figures they return.
 */
#ifndef SPACE_DAEMON_VM_GUEST_H
#define SPACE_DAEMON_VM_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/host/err.h"
#include "daemon/driver/kmod.h"
#include "proto/agent.h"

#define VM_KERNEL_META "linux-image-cloud-amd64"

/* Module names the guest needs; kmod_order adds what they depend on and leaves out
 * what the kernel has built in (ext4, in Debian's cloud kernel). */
#define VM_GUEST_MODULES "virtio_mmio", "virtio_blk", "virtio_console", "virtio_rng", "virtio_balloon", "virtio_net", "ext4", "overlay", "erofs"

struct vm_kernel {
	char package[128];  /* linux-image-6.1.0-57-cloud-amd64 */
	char version[64];   /* the package's version: 6.1.192-3 */
	char release[96];   /* what uname -r says in the guest: 6.1.0-57-cloud-amd64 */
	char dir[640];      /* <cache>/kernels/<release>_<version> */
	char vmlinuz[800];
	char modules[800];  /* the module tree: <dir>/root/lib/modules/<release> */
	bool fetched;       /* downloaded and unpacked by this call, not found in the cache */
	uint64_t fetch_ms, unpack_ms; /* when fetched: apt-get download, dpkg-deb -x */
};

/*
 * Fills *k with the current guest kernel, downloading and unpacking it into
 * <cache_dir>/kernels first when it is not there and fetch is true (with fetch
 * false a missing kernel is an error, 503 no_kernel). Returns 0 or -errno with
 * e filled.
 */
int vm_guest_kernel(const char *cache_dir, bool fetch, struct vm_kernel *k, struct err *e);

struct vm_initramfs {
	char path[800];          /* <cache>/initramfs/<key>.img */
	struct kmod_order order; /* the modules in it, in load order */
	uint64_t bytes;
	bool built;              /* made by this call, not found in the cache */
	uint64_t build_ms;
};

/*
 * Fills *out with the initramfs for kernel k and the agent binary at agent
 * (a static executable), building it when it is not in the cache: /init (the
 * agent), dev/console, mount points for /dev, /proc and /sys, the modules of
 * VM_GUEST_MODULES with what they depend on, and the order to load them in
 * (SP_VM_MODULE_DIR, SP_VM_MODULE_ORDER: the agent's contract, proto/agent.h).
 * Returns 0 or -errno with e filled (a module the kernel lacks is named).
 */
int vm_guest_initramfs(const char *cache_dir, const struct vm_kernel *k, const char *agent,
		       struct vm_initramfs *out, struct err *e);

/*
 * The read-only block image of the template root file system at rootfs
 * (erofs, uncompressed: docs/microvm.md says why), built once with
 * mkfs.erofs into <cache_dir>/images/<key>.erofs, key hashing the rootfs's
 * real path and the recipe (a published template never changes). The path
 * goes into out; *built says whether this call made it, *build_ms how long
 * that took. Returns 0 or -errno with e filled.
 */
int vm_guest_template_image(const char *cache_dir, const char *rootfs, char *out, size_t n, bool *built,
			    uint64_t *build_ms, struct err *e);

/*
 * What a restore hands QEMU for -kernel: the first VM_STUB_PAYLOAD bytes of vmlinuz's
 * protected-mode part behind its real-mode setup, whose header QEMU's loader reads. QEMU
 * keeps the whole -kernel file (and the -initrd) in its memory for fw_cfg as long as it runs
 * (14 MiB of Debian's kernel in every VM), though a restored guest, whose kernel is in its
 * memory image, never reads them. Built once per kernel file into
 * <cache_dir>/kernel-stubs/<key> (the key hashes vmlinuz's path, size and mtime); the path
 * goes into out. Returns 0 or -errno with e filled (-ENOEXEC: not a bzImage).
 */
#define VM_STUB_PAYLOAD 4096
int vm_guest_kernel_stub(const char *cache_dir, const char *vmlinuz, char *out, size_t n, struct err *e);

/*
 * The kernel command line of a guest: its console on the first serial port
 * (quiet: the kernel's messages cost boot time under TCG), a panic that
 * ends the VM at once (with QEMU's -no-reboot; reboot=t: by a triple fault, since the
 * kernel's first ways to reset, ACPI and the keyboard controller, can take seconds or
 * hang on a microvm machine), the host's TSC frequency
 * (tsc_early_khz: under TCG the guest's TSC runs at the host's, and the
 * kernel's own calibration against the PIT, done in a few milliseconds of
 * emulated time, fails now and then on a busy host and leaves the boot
 * stalled with no clock source; measured once per host boot, in cache_dir), pages zeroed
 * when freed rather than when allocated (init_on_free=1 init_on_alloc=0: the same work,
 * but the guest's free memory reads as zero to QEMU, so a memory image leaves it out and
 * a restored guest does not hold it), under TCG user space without address randomization
 * (norandmaps: QEMU 7.2's translator finds a block it translated before by its virtual
 * address too, so with every process's libraries at new addresses each fork + exec had its
 * code translated afresh, 28 ms instead of 6; root inside can turn it back on in
 * /proc/sys/kernel/randomize_va_space), and the agent's SP_VM_INIT_ARG after "--".
 * Returns 0 or -ENOSPC.
 */
int vm_guest_cmdline(const char *cache_dir, bool tcg, char *out, size_t n);

/* The host's TSC frequency in kHz, measured against CLOCK_MONOTONIC_RAW over
 * VM_TSC_MEASURE_MS (blocks that long), or 0 when the TSC is not invariant
 * (then the guest calibrates for itself). */
#define VM_TSC_MEASURE_MS 20
unsigned vm_guest_tsc_khz(void);

/* The same, measured once per boot of the host and kept in the cache (tsc/<boot id>): the
 * command line is part of what a booted image is keyed by, and two measurements differ in
 * their last digits. */
unsigned vm_guest_tsc_khz_cached(const char *cache_dir);

#endif

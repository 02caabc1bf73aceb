/*
 * agent/fwcfg.h - reading a file of QEMU's fw_cfg device from a microVM's init.
 *
 * QEMU gives the guest named files (-fw_cfg name=...,file=...) through the fw_cfg device,
 * at I/O ports FWCFG_PORT_SEL (a 16-bit selector) and FWCFG_PORT_DATA (bytes) on x86. The
 * agent reads them itself through those ports rather than through the kernel's sysfs view:
 * sysfs lists the files and their sizes once, when its driver starts, so a guest restored
 * from an image booted elsewhere (a template's booted image) would read the sizes of the
 * machine it was booted on. The ports always answer with the running QEMU's files.
 */
#ifndef SPACE_AGENT_FWCFG_H
#define SPACE_AGENT_FWCFG_H

#include <stddef.h>
#include <stdint.h>

#define FWCFG_PORT_SEL 0x510
#define FWCFG_PORT_DATA 0x511
#define FWCFG_FILE_DIR 0x19   /* the selector of the file directory */
#define FWCFG_NAME_MAX 56     /* a file's name in the directory, NUL included */

/* One entry of the directory, as the device sends it (big-endian numbers). */
struct fwcfg_file {
	uint32_t size;
	uint16_t select;
	uint16_t reserved;
	char name[FWCFG_NAME_MAX];
} __attribute__((packed));

/* What the ports deliver: reads n bytes of the item sel, from its start. Tests replace it. */
typedef int fwcfg_read_fn(uint16_t sel, void *buf, size_t n, void *ctx);

/* Finds name in the directory that read delivers and reads the file into buf (at most max
 * bytes). Returns its length, -ENOENT when there is no such file, -EFBIG when it is larger
 * than max, or another -errno. */
long fwcfg_find_read(fwcfg_read_fn *read, void *ctx, const char *name, void *buf, size_t max);

/* The same through the device's ports (ioperm for the read's span, dropped after). */
long fwcfg_read_file(const char *name, void *buf, size_t max);

#endif

/*
 * daemon/driver/vm_boot.h - what a microVM boots from, fixed at create in its sandbox's
 * vm/boot.json (a restore must load the kernel its memory image holds), and vm/env, the
 * agent's environment, which QEMU hands the guest as a fw_cfg file.
 */
#ifndef SPACE_DAEMON_VM_BOOT_H
#define SPACE_DAEMON_VM_BOOT_H

#include <stdbool.h>

#include "lib/host/err.h"
#include "daemon/daemon.h"

struct boot {
	char kernel[800], initramfs[800], image[800], cmdline[1024];
	char booted[800]; /* the template's booted image the VM starts from ("": it boots) */
	bool net;         /* it has a network device (a tap in its edge namespace, net/net.h) */
};

/* vm/boot.json, written whole and synced / read back. 0 or -errno with e filled. */
int vm_write_boot(struct sandbox *sb, const struct boot *b, struct err *e);
int vm_read_boot(struct sandbox *sb, struct boot *b, struct err *e);

/* vm/env from sb's settings: "K=V" strings, each ended by a NUL. 0 or -errno with e filled. */
int vm_write_env(struct sandbox *sb, struct err *e);

#endif

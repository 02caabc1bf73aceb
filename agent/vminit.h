/*
 * agent/vminit.h - what the agent does first as the init of a microVM.
 *
 * The kernel runs /init of our initramfs (daemon/driver/vm_guest.c builds it)
 * as `space-agent --vm` (SP_VM_INIT_ARG): the kernel command line ends with `-- --vm`, and the
 * kernel hands what follows `--` to init. Nothing else starts the agent that
 * way (runsc gives it no arguments), so the agent knows it is a VM's init
 * without guessing from its surroundings.
 *
 * Before the agent can serve, it does what an init system would, in order:
 *   1. mounts devtmpfs on /dev, proc on /proc, sysfs on /sys;
 *   2. puts fds 0-2 on /dev/console (the kernel opened them on the
 *      initramfs's dev/console; this covers a kernel that could not);
 *   3. loads the kernel modules listed in SP_VM_MODULE_ORDER, one name a
 *      line, from SP_VM_MODULE_DIR/<name>.ko with finit_module, in that
 *      order (the host computed it from the modules' own depends=), then
 *      removes those files (the initramfs is RAM the guest would keep);
 *   4. when the VM has the template's disk (virtio-blk, serial
 *      SP_VM_TEMPLATE_SERIAL) and its own (SP_VM_DISK_SERIAL): mounts the
 *      template read-only (erofs) at /.space/lower, the disk (ext4) at
 *      /.space/disk, the overlay of the two (upper/ and work/ on the disk)
 *      at /.space/root, moves /dev, /proc and /sys into it and makes it the
 *      root (MS_MOVE onto /, chroot), as switch_root does. Without those
 *      disks the initramfs stays the root.
 *   5. brings up the loopback interface and takes its environment from QEMU's
 *      fw_cfg file SP_VM_ENV_NAME;
 *   6. puts the commands it will start in a cgroup of their own (VMINIT_CGROUP)
 *      whose processes are at most SPACE_NPROC: a fork bomb meets that limit,
 *      and the agent, outside the group, keeps half the CPU however many
 *      processes it holds. Root is exempt from RLIMIT_NPROC, so in a VM
 *      (commands run as root) the pids limit is what stops a fork bomb. Memory
 *      stays the guest's: a memory limit on the group made a process growing
 *      past it reclaim the group's own program pages over and over instead of
 *      meeting the OOM killer (an exec with a 120 s timeout went unanswered).
 * A step that fails is logged and the next one still runs (but for 4, which
 * needs 3): the agent then serves what it can, and says what went wrong on
 * the console.
 *
 * A guest restored from another one's image (a fork, a template's booted image) takes its
 * environment again when the host tells it its identity (H_IDENTITY).
 */
#ifndef SPACE_AGENT_VMINIT_H
#define SPACE_AGENT_VMINIT_H

#define VMINIT_ORDER_MAX 4096u /* bytes of the module order file */

#define VMINIT_CGROUP_ROOT "/sys/fs/cgroup"
#define VMINIT_CGROUP VMINIT_CGROUP_ROOT "/space"

/* Steps 1-6 above. Returns 0, or the first step's -errno (after running the others). */
int vminit_boot(void);

/* Step 4 alone. Returns 0 when the overlay is the root, -ENOENT when the VM has no
 * template disk (nothing done), or another -errno (the initramfs is still the root). */
int vminit_root(void);

/* Loads every module named in the file at order from dir, in order; a module already
 * loaded (EEXIST) is fine. Returns the number loaded, or the first -errno. */
int vminit_load_modules(const char *dir, const char *order);

/* Step 6 alone: mounts cgroup2, makes VMINIT_CGROUP with its limits and has spawn.c start
 * every command in it (spawn_set_cgroup). 0 or -errno (commands then start beside the agent). */
int vminit_cgroup(void);

/* Brings the loopback interface up. 0 or -errno. */
int vminit_loopback(void);

/* Configures eth0, when the VM has one (a sandbox with a network): SP_NET_ADDR/30, up, the
 * default route through SP_NET_GATEWAY, no IPv6. 0, or -errno (-ENODEV: no eth0). */
int vminit_network(void);

/* Sets the agent's environment from QEMU's fw_cfg file SP_VM_ENV_NAME (agent/fwcfg.h).
 * 0, -ENOENT when QEMU has no such file, or -errno. */
int vminit_env(void);

/* A guest restored from another one's image (H_IDENTITY): the environment again
 * (vminit_env), then the commands' cgroup's limits from it. 0, -ENOENT or -errno as
 * vminit_env. */
int vminit_settings(void);

/* Runs `/bin/sh -c /bin/true` once and waits for it, so that the loader, the C library and
 * the shell are in the guest's page cache: a guest booted to become a template's booted
 * image keeps them in its memory, and no sandbox restored from it reads them from its disk
 * for its first command. Before the agent blocks SIGCHLD. */
void vminit_warm(void);

#endif

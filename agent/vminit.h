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
 *      order (the host computed it from the modules' own depends=).
 * A step that fails is logged and the next one still runs: the agent then
 * serves what it can, and says what went wrong on the console.
 */
#ifndef SPACE_AGENT_VMINIT_H
#define SPACE_AGENT_VMINIT_H

#define VMINIT_ORDER_MAX 4096u /* bytes of the module order file */

/* Steps 1-3 above. Returns 0, or the first step's -errno (after running the others). */
int vminit_boot(void);

/* Loads every module named in the file at order from dir, in order; a module already
 * loaded (EEXIST) is fine. Returns the number loaded, or the first -errno. */
int vminit_load_modules(const char *dir, const char *order);

#endif

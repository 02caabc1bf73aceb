/*
 * daemon/driver/vm_log.h - what a microVM prints on the host, within a bound.
 *
 * A guest's serial console and QEMU's own messages are written by QEMU, which
 * the guest drives: root inside can write to /dev/ttyS0 for as long as it
 * likes. So QEMU never writes a file of the host. It writes into two pipes,
 * whose other ends a log keeper holds: a process of its own (spaced itself,
 * run as `spaced VM_LOG_KEEPER_ARG VMDIR`), started beside each QEMU, that
 * outlives spaced as QEMU does and ends once QEMU's ends of the pipes are
 * closed. The keeper copies each pipe into a file of VMDIR (console.log,
 * qemu.log), keeping at most VM_LOG_MAX bytes of each: the newest half in
 * NAME, the half before it in NAME.1; what is pushed out of NAME.1 is dropped,
 * and the file that follows starts with a line counting it. While the keeper
 * holds its lock file (VMDIR/log.lock) it may still have bytes to write.
 *
 * QEMU's ends of the pipes are non-blocking: a guest that prints faster than
 * the keeper writes is held back by its serial port, and a message of QEMU's
 * that finds its pipe full is lost rather than stalling QEMU.
 */
#ifndef SPACE_DAEMON_DRIVER_VM_LOG_H
#define SPACE_DAEMON_DRIVER_VM_LOG_H

#include <sys/types.h>

#define VM_LOG_MAX (1024 * 1024) /* bytes of one log a VM's sandbox keeps: console.log, qemu.log */
#define VM_LOG_KEEPER_ARG "--vm-log-keeper"
#define VM_LOG_SETTLE_MS 2000 /* how long vm_log_settle waits for a keeper to finish */

/* The two streams, in the keeper's descriptor order (3, 4). */
enum { VM_LOG_CONSOLE, VM_LOG_QEMU, VM_LOG_STREAMS };

/*
 * Starts the keeper of vmdir's logs. On success fills qemu_ends[VM_LOG_STREAMS] with the
 * write ends QEMU is to be given (close-on-exec, non-blocking; the caller closes them once
 * QEMU has its copies) and returns the keeper's pid; else -errno.
 */
pid_t vm_log_start(const char *vmdir, int qemu_ends[VM_LOG_STREAMS]);

/* Waits, at most VM_LOG_SETTLE_MS, until no keeper of vmdir is left to write: call it after
 * QEMU ended and before reading its logs. Blocks: never with d->lock held. */
void vm_log_settle(const char *vmdir);

/* The keeper's own main: argv after VM_LOG_KEEPER_ARG is the VM's folder. Returns its exit
 * status. */
int vm_log_keep(const char *vmdir);

#endif

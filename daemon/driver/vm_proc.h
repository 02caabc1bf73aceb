/*
 * daemon/driver/vm_proc.h - a microVM's QEMU as a host process, for driver_vm.c: found in
 * $PATH with its accelerator picked, found again by its pid file and command line, confined
 * in its cgroups, killed, and its last words read.
 */
#ifndef SPACE_DAEMON_VM_PROC_H
#define SPACE_DAEMON_VM_PROC_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/un.h>

#include "lib/host/err.h"
#include "daemon/daemon.h"

#define QEMU "qemu-system-x86_64"
#define VM_GONE_MS 10000 /* for QEMU to exit after quit, or after SIGKILL */

/* <sb's dir>/leaf into out. */
void vm_path(char *out, size_t n, const struct sandbox *sb, const char *leaf);

/* Up to n-1 bytes of the file at p into buf, NUL-terminated; their count, or 0. */
ssize_t vm_read_small(const char *p, char *buf, size_t n);

/* QEMU's pid for sb, when its pid file names a live QEMU of this sandbox; else 0. */
pid_t vm_qemu_pid(struct sandbox *sb);

/* Writes vm/qemu.pid whole. */
int vm_write_pid(struct sandbox *sb, pid_t pid, struct err *e);

/* Ends sb's QEMU if one runs (child: the one just started; 0: the pid file's), and waits. */
int vm_kill_qemu(struct sandbox *sb, pid_t child, struct err *e);

/* Puts pid into sb's cgroups: memory for guest RAM plus overhead_mb, CPU time, tasks. */
int vm_confine(struct sandbox *sb, int overhead_mb, pid_t pid, struct err *e);
void vm_remove_cgroups(const char *id);

/* A Unix stream socket (close-on-exec) and *sa naming path. fd or -errno with e filled. */
int vm_unix_socket(const char *path, struct sockaddr_un *sa, struct err *e);

/* Connects to a guest agent's port at sock (QEMU listening), opens a connection (H_OPEN)
 * and waits up to timeout_ms for the agent's hello; then hangs up. 0 or -errno with e filled. */
int vm_agent_hello(const char *sock, int timeout_ms, struct err *e);

/* The last line of a log file, into out ("" if none). */
void vm_last_line_of(const char *p, char *out, size_t n);

/* "kvm" or "tcg" for want ("auto", "kvm", "tcg"); -EINVAL for anything else, -ENODEV for kvm
 * on a host where it does not open. */
int vm_pick_accel(const char *want, char out[8]);

/* The first executable name in $PATH, resolved, into out; "" if there is none. */
void vm_find_in_path(const char *name, char *out, size_t n);

/* vm/held: present while spaced itself keeps the VM stopped (a pause, a checkpoint). */
void vm_set_held(const struct sandbox *sb, bool held);
bool vm_is_held(const struct sandbox *sb);

/* Free bytes (for an unprivileged writer) beside a disk image before a VM that a refused write
 * stopped is continued: QEMU retries the refused request at once, which can take a few MiB. */
#define VM_DISK_ROOM_MB 16
/* Whether the file system under sb's disk image grants QEMU VM_DISK_ROOM_MB. */
bool vm_disk_has_room(const struct sandbox *sb);

/* The number after key in a /proc file of `Key: value` lines, or 0. */
unsigned long long vm_proc_field(const char *p, const char *key);

#endif

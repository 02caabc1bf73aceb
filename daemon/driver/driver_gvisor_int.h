/*
 * daemon/driver/driver_gvisor_int.h - what the files of the gVisor driver share: its state
 * and the functions one file gives the others. The driver's interface is driver.h
 * (driver_gvisor, its table of operations).
 */
#ifndef SPACE_DAEMON_DRIVER_GVISOR_INT_H
#define SPACE_DAEMON_DRIVER_GVISOR_INT_H

#include <stddef.h>

#include "daemon/driver/driver.h"

struct driver {
	struct daemon *d;
	char root[600];      /* runsc --root */
	char runtime[128];   /* "runsc <version>" */
	char agent[700];     /* this spaced's agent, kept in <state>/agents (agent_file.h) */
	char shim[700];      /* and its shim, "" when it has none */
};

/* driver_gvisor_cg.c: the sandbox's host cgroups */

/* Raises the host memory limit of a sandbox that runs to its backstop; said, not failed, when
 * it cannot be raised. */
void gv_raise_backstop(struct sandbox *sb);
/* Removes the cgroups runsc made for container id (those that are empty). */
void gv_remove_cgroups(const char *id);
/* Makes the sandbox's memory cgroup ahead of a restore, at the backstop. */
void gv_backstop_ahead(struct sandbox *sb);
/* driver_ops.stats and .exit_reason (driver.h). */
int gv_stats(struct driver *drv, struct sandbox *sb, struct driver_stats *out);
void gv_exit_reason(struct driver *drv, struct sandbox *sb, char *buf, size_t n);

/* driver_gvisor_left.c: what sandboxes leave behind */

/* driver_ops.leftovers and .release (driver.h). */
int gv_leftovers(struct driver *drv, struct driver_leftover **out, size_t *n);
int gv_release(struct driver *drv, const struct driver_leftover *l, struct err *e);

#endif

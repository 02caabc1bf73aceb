/*
 * daemon/core/sweep.h - the sweep at start: what no record owns is released.
 *
 * A spaced that stops at the wrong moment (a crash mid-create, mid-delete, a
 * record lost) can leave things on the host no sandbox record accounts for.
 * Once adoption has decided which sandboxes exist, sweep_run finishes the
 * destroys that were under way or had failed, then releases every container,
 * mount and loop device of the driver's under the state dir, and every folder
 * under <state>/sandboxes/, that no record owns, logging each one.
 */
#ifndef SPACE_DAEMON_SWEEP_H
#define SPACE_DAEMON_SWEEP_H

#include "daemon/daemon.h"

/* Runs the sweep. Blocks (runsc, umount, rm); call once at start, after sandbox_adopt_all and
 * before the API opens, so no create is under way. Takes d->lock only to read the registry. */
void sweep_run(struct daemon *d);

#endif

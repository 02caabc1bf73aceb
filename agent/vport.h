/*
 * agent/vport.h - the agent's transport in a microVM: a virtio-serial port.
 *
 * QEMU's virtserialport named SP_AGENT_PORT appears in the guest as
 * /dev/vportNpM (devtmpfs; without udev there is no /dev/virtio-ports/<name>
 * link), and its name is in /sys/class/virtio-ports/vportNpM/name. Its other
 * end is a host Unix socket that QEMU listens on; the host connects there.
 *
 * The port has no connections of its own, only a state: whether a host is
 * connected to QEMU's socket now (poll reports POLLHUP while none is), and
 * a host that leaves and comes back quickly can go unnoticed. So a
 * connection starts when the host sends H_OPEN (conn.h: host_opens), and
 * ends with the end of file the guest reads once the host has hung up and
 * everything it sent has been read. The agent cannot hang up
 * on a host itself: when it ends a connection (a protocol error, H_DETACH)
 * it closes and reopens the port, which discards what it had not read, and
 * waits for the host's next H_OPEN (the host, getting no answers, opens again).
 *
 * The port opens only once: a second opener gets EBUSY while the agent holds
 * it (root inside can still reach it through the agent itself, by ptrace, so
 * the host treats the channel as hostile, as it does the gVisor socket).
 */
#ifndef SPACE_AGENT_VPORT_H
#define SPACE_AGENT_VPORT_H

#include <stddef.h>

#include "conn.h"

/* The port named conn.where. */
extern const struct conn_transport vport_transport;

/*
 * The device of the port called name, as "/dev/vportNpM", from
 * <sysfs>/class/virtio-ports/<dev>/name. Returns 0, -ENOENT when no port
 * has that name (yet: ports appear after virtio_console has loaded and the
 * device has told the guest about them), or another -errno.
 */
int vport_find(const char *sysfs, const char *name, char *dev, size_t n);

#endif

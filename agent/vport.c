/*
 * agent/vport.c - the virtio-serial transport (see vport.h).
 *
 * The port's descriptor is conn.dev_fd. It stays open across connections
 * when the host hung up (nothing of the old connection is left to read), and
 * is closed when the agent ends a connection, so that what the host sent and
 * the agent did not read is discarded with it. While no host is connected,
 * the port signals the host's return (SIGIO, read from the agent's signalfd),
 * so a restored or resumed VM answers its host at once rather than at the
 * next retry.
 */
#include "vport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define VPORT_NAME_MAX 256u /* bytes of a port's name QEMU allows, and then some */

int vport_find(const char *sysfs, const char *name, char *dev, size_t n)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/class/virtio-ports", sysfs);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ENOENT : -errno;
	int rc = -ENOENT;
	struct dirent *de;
	while (rc == -ENOENT && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[800], got[VPORT_NAME_MAX + 2];
		snprintf(path, sizeof(path), "%s/%s/name", dir, de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, got, sizeof(got) - 1);
		close(fd);
		if (r <= 0)
			continue;
		got[r] = '\0';
		got[strcspn(got, "\n")] = '\0';
		if (strcmp(got, name) == 0)
			rc = snprintf(dev, n, "/dev/%s", de->d_name) < (int)n ? 0 : -ENAMETOOLONG;
	}
	closedir(d);
	return rc;
}

/* The port sends the agent SIGIO (F_SETOWN) when the host's connection comes or goes, and
 * when data arrives: on only while no host is there, so a connection's traffic costs no
 * signals. Where it fails, the retry period still finds the host. */
static void signal_host(int fd, bool on)
{
	(void)fcntl(fd, F_SETFL, O_NONBLOCK | (on ? O_ASYNC : 0));
}

static int vport_reach(struct conn *c)
{
	if (c->dev_fd < 0) {
		char dev[300];
		int rc = vport_find("/sys", c->where, dev, sizeof(dev));
		if (rc < 0)
			return rc;
		int fd = open(dev, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		c->dev_fd = fd;
		(void)fcntl(fd, F_SETOWN, getpid());
	}
	/* armed before the look, so a host arriving after it is signalled */
	signal_host(c->dev_fd, true);
	struct pollfd p = { .fd = c->dev_fd, .events = POLLIN };
	if (poll(&p, 1, 0) < 0)
		return -errno;
	if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
		return -ENOTCONN; /* no host on the other end of QEMU's socket */
	signal_host(c->dev_fd, false);
	return c->dev_fd;
}

static void vport_end(struct conn *c, bool host_gone)
{
	if (host_gone) {
		signal_host(c->dev_fd, true);
		return;
	}
	close(c->dev_fd);
	c->dev_fd = -1;
}

static ssize_t vport_send(int fd, const struct iovec *iov, int n)
{
	return writev(fd, iov, n);
}

static ssize_t vport_recv(int fd, void *buf, size_t n)
{
	return read(fd, buf, n);
}

const struct conn_transport vport_transport = {
	.kind = "virtio-serial port",
	.host_opens = true,
	.reach = vport_reach,
	.end = vport_end,
	.send = vport_send,
	.recv = vport_recv,
};

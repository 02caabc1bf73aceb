/*
 * agent/vminit.c - the microVM init steps (see vminit.h).
 */
#include "vminit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

struct vm_mount {
	const char *source, *target, *type;
	unsigned long flags;
};

static const struct vm_mount vm_mounts[] = {
	{ "devtmpfs", "/dev", "devtmpfs", MS_NOSUID },
	{ "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC },
	{ "sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC },
};

static int mount_all(void)
{
	int first = 0;
	for (size_t i = 0; i < sizeof(vm_mounts) / sizeof(vm_mounts[0]); i++) {
		const struct vm_mount *m = &vm_mounts[i];
		mkdir(m->target, 0755);
		if (mount(m->source, m->target, m->type, m->flags, NULL) < 0 && errno != EBUSY) {
			agent_log("mount %s on %s: %s", m->type, m->target, strerror(errno));
			if (!first)
				first = -errno;
		}
	}
	return first;
}

/* fds 0-2 on the console, if the kernel left any of them closed. */
static int console_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int c = open("/dev/console", O_RDWR | O_NOCTTY);
		if (c < 0)
			return -errno;
		if (c != fd) {
			dup2(c, fd);
			close(c);
		}
	}
	return 0;
}

static int load_one(const char *dir, const char *name)
{
	char path[512];
	if (snprintf(path, sizeof(path), "%s/%s.ko", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST ? -errno : 0;
	close(fd);
	return rc;
}

int vminit_load_modules(const char *dir, const char *order)
{
	char list[VMINIT_ORDER_MAX + 1];
	int fd = open(order, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, list, sizeof(list));
	close(fd);
	if (n < 0)
		return -errno;
	if ((size_t)n > VMINIT_ORDER_MAX)
		return -EFBIG;
	list[n] = '\0';
	int loaded = 0;
	for (char *save = NULL, *name = strtok_r(list, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
		if (strchr(name, '/') || name[0] == '.')
			return -EINVAL;
		int rc = load_one(dir, name);
		if (rc < 0) {
			agent_log("load module %s: %s", name, strerror(-rc));
			return rc;
		}
		loaded++;
	}
	return loaded;
}

int vminit_boot(void)
{
	int first = mount_all(), rc;
	if ((rc = console_fds()) < 0) {
		agent_log("console: %s", strerror(-rc));
		if (!first)
			first = rc;
	}
	if ((rc = vminit_load_modules(SP_VM_MODULE_DIR, SP_VM_MODULE_ORDER)) < 0 && !first)
		first = rc;
	return first;
}

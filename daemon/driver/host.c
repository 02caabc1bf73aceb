/*
 * daemon/driver/host.c - mount points and loop devices below a directory, as
 * the kernel lists them, and their release (see host.h).
 */
#include "daemon/driver/host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define HOST_PATH_MAX 4096

/* Whether path lies strictly below dir (both canonical). */
static int below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

/* mountinfo writes space, tab, newline and backslash as \ooo: undo that in place. */
static void unescape(char *s)
{
	char *to = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			*to++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*to++ = *p;
		}
	}
	*to = '\0';
}

int host_mounts_below(const char *dir, int (*each)(const char *mnt, void *ctx), void *ctx)
{
	char *root = realpath(dir, NULL);
	if (!root)
		return -errno;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		int rc = -errno;
		free(root);
		return rc;
	}
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		/* id parent major:minor root mount-point options ... */
		char *save = NULL, *field = strtok_r(line, " ", &save);
		for (int i = 0; field && i < 4; i++)
			field = strtok_r(NULL, " ", &save);
		if (!field)
			continue;
		unescape(field);
		if (below(field, root))
			rc = each(field, ctx);
	}
	free(line);
	fclose(f);
	free(root);
	return rc;
}

/* The file loop device `name` (loop3) is bound to, into out; -ENXIO when it is bound to none. */
static int backing_file(const char *name, char *out, size_t n)
{
	char p[300];
	snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENXIO : -errno;
	ssize_t r = read(fd, out, n - 1);
	close(fd);
	if (r <= 0)
		return -ENXIO;
	out[r] = '\0';
	if (r > 0 && out[r - 1] == '\n')
		out[--r] = '\0';
	static const char deleted[] = " (deleted)";
	size_t k = sizeof(deleted) - 1;
	if ((size_t)r > k && strcmp(out + r - k, deleted) == 0)
		out[r - k] = '\0';
	return 0;
}

int host_loops_below(const char *dir, int (*each)(const char *dev, const char *file, void *ctx), void *ctx)
{
	char *root = realpath(dir, NULL);
	if (!root)
		return -errno;
	DIR *dp = opendir("/sys/block");
	if (!dp) {
		int rc = -errno;
		free(root);
		return rc;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(dp))) {
		char file[HOST_PATH_MAX], dev[300];
		if (strncmp(de->d_name, "loop", 4) != 0 || backing_file(de->d_name, file, sizeof(file)) < 0)
			continue;
		if (!below(file, root))
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		rc = each(dev, file, ctx);
	}
	closedir(dp);
	free(root);
	return rc;
}

int host_umount(const char *mnt)
{
	if (umount2(mnt, 0) == 0)
		return 0;
	if (errno == EINVAL || errno == ENOENT)
		return 0; /* not a mount point (any more) */
	return umount2(mnt, MNT_DETACH) == 0 ? 0 : -errno;
}

int host_loop_detach(const char *dev, const char *file)
{
	const char *name = strrchr(dev, '/');
	name = name ? name + 1 : dev;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* looked at again with the device open: it may have been released and taken meanwhile */
	char now[HOST_PATH_MAX];
	int rc = backing_file(name, now, sizeof(now));
	if (rc == -ENXIO)
		rc = 0; /* released already (an autoclear device whose mount went) */
	else if (rc == 0 && strcmp(now, file) != 0)
		rc = -ESTALE;
	else if (rc == 0 && ioctl(fd, LOOP_CLR_FD) < 0)
		rc = errno == ENXIO ? 0 : -errno;
	close(fd);
	return rc;
}

int host_weigh(struct driver *drv, struct sandbox *sb, struct err *e)
{
	(void)drv;
	char p[256], v[16];
	snprintf(p, sizeof(p), "/sys/fs/cgroup/cpu/space/%s/cpu.shares", sb->id);
	int n = snprintf(v, sizeof(v), "%d", sb->cpu_shares > 0 ? sb->cpu_shares : 1024);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	int rc = fd < 0 ? -errno : write(fd, v, (size_t)n) == n ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	return rc < 0 ? err_set(e, ERR_INTERNAL, -rc, "cannot set the CPU share of sandbox %s: %s", sb->id, strerror(-rc))
		      : 0;
}

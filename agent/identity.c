/*
 * agent/identity.c - see identity.h.
 */
#include "identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <linux/random.h>
#include <unistd.h>

#define MARK "# this sandbox's name (space)"

int identity_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > IDENTITY_NAME_MAX || name[0] == '-' || name[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
	}
	return 1;
}

/* Reads at most max bytes of path into a malloc'd, NUL-terminated *out (empty when the file
 * does not exist). Returns the length, -EFBIG past max, or -errno. */
static ssize_t read_small(const char *path, size_t max, char **out)
{
	*out = calloc(1, max + 1);
	if (!*out)
		return -ENOMEM;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	size_t len = 0;
	ssize_t r;
	while (len <= max && (r = read(fd, *out + len, max + 1 - len)) > 0)
		len += (size_t)r;
	int err = r < 0 ? errno : 0;
	close(fd);
	if (err)
		return -err;
	if (len > max)
		return -EFBIG;
	(*out)[len] = '\0';
	return (ssize_t)len;
}

/* Replaces etc/base with text by a rename, unless it holds text already. */
static int replace(const char *etc, const char *base, const char *text)
{
	char path[512], tmp[512], *old = NULL;
	snprintf(path, sizeof(path), "%s/%s", etc, base);
	snprintf(tmp, sizeof(tmp), "%s/.%s.space-new", etc, base);
	ssize_t n = read_small(path, IDENTITY_HOSTS_MAX, &old);
	bool same = n >= 0 && strcmp(old, text) == 0;
	free(old);
	if (same)
		return 0;
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text), done = 0;
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0) {
			int err = errno;
			close(fd);
			unlink(tmp);
			return -err;
		}
		done += (size_t)w;
	}
	if (fchmod(fd, 0644) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		int err = errno;
		unlink(tmp);
		return -err;
	}
	return 0;
}

/* Whether a hosts line maps address to the name localhost. */
static bool maps_localhost(const char *line, size_t len, const char *address)
{
	char buf[1024];
	if (len >= sizeof(buf))
		return false;
	memcpy(buf, line, len);
	buf[len] = '\0';
	char *hash = strchr(buf, '#');
	if (hash)
		*hash = '\0';
	char *save = NULL, *tok = strtok_r(buf, " \t", &save);
	if (!tok || strcmp(tok, address) != 0)
		return false;
	while ((tok = strtok_r(NULL, " \t", &save)))
		if (strcmp(tok, "localhost") == 0)
			return true;
	return false;
}

int identity_files(const char *etc, const char *name)
{
	if (!identity_name_ok(name))
		return -EINVAL;
	if (mkdir(etc, 0755) < 0 && errno != EEXIST)
		return -errno;
	char line[128];
	snprintf(line, sizeof(line), "%s\n", name);
	int rc = replace(etc, "hostname", line);
	if (rc < 0)
		return rc;

	char path[512], *hosts = NULL;
	snprintf(path, sizeof(path), "%s/hosts", etc);
	ssize_t n = read_small(path, IDENTITY_HOSTS_MAX, &hosts);
	if (n == -EFBIG) {
		free(hosts);
		return 0; /* not ours to rewrite */
	}
	if (n < 0) {
		free(hosts);
		return (int)n;
	}
	/* the kept lines, without our own, with what is missing around them */
	size_t cap = (size_t)n + 256;
	char *kept = malloc(cap), *out = malloc(cap + 256);
	if (!kept || !out) {
		free(hosts);
		free(kept);
		free(out);
		return -ENOMEM;
	}
	size_t k = 0;
	bool have4 = false, have6 = false;
	for (const char *p = hosts; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool ours = memmem(p, len, MARK, strlen(MARK)) != NULL;
		if (!ours) {
			have4 = have4 || maps_localhost(p, len, "127.0.0.1");
			have6 = have6 || maps_localhost(p, len, "::1");
			memcpy(kept + k, p, len);
			k += len;
			kept[k++] = '\n';
		}
		p += len + (end ? 1 : 0);
	}
	kept[k] = '\0';
	snprintf(out, cap + 256, "%s%s%s127.0.1.1\t%s\t" MARK "\n", have4 ? "" : "127.0.0.1\tlocalhost\n",
		 have6 ? "" : "::1\t\tlocalhost ip6-localhost ip6-loopback\n", kept, name);
	rc = replace(etc, "hosts", out);
	free(hosts);
	free(kept);
	free(out);
	return rc;
}

int identity_take(const char *name)
{
	if (!identity_name_ok(name))
		return -EINVAL;
	if (sethostname(name, strlen(name)) < 0)
		return -errno;
	return identity_files("/etc", name);
}

int identity_main(const char *name)
{
	if (!identity_name_ok(name)) {
		fprintf(stderr, "space-agent: not a host name: %s\n", name);
		return 2;
	}
	int rc = identity_take(name);
	if (rc < 0) {
		fprintf(stderr, "space-agent: host name %s: %s\n", name, strerror(-rc));
		return 1;
	}
	return 0;
}

int identity_machine_id(const char *etc)
{
	char p[512], tmp[520], id[33 + 1];
	snprintf(p, sizeof(p), "%s/machine-id", etc);
	struct stat st;
	if (stat(p, &st) < 0 || st.st_size == 0)
		return 0;
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	id[32] = '\n';
	id[33] = '\0';
	snprintf(tmp, sizeof(tmp), "%s.space-new", p);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	int rc = write(fd, id, 33) == 33 && fsync(fd) == 0 ? 0 : -EIO;
	close(fd);
	if (rc == 0 && rename(tmp, p) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int identity_reseed(const unsigned char *seed, unsigned n)
{
	struct {
		struct rand_pool_info info;
		unsigned char bytes[64];
	} e;
	if (n > sizeof(e.bytes))
		return -EINVAL;
	e.info.entropy_count = (int)n * 8;
	e.info.buf_size = (int)n;
	memcpy(e.bytes, seed, n);
	int fd = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = ioctl(fd, RNDADDENTROPY, &e) < 0 ? -errno : 0;
	/* credited entropy alone changes nothing the kernel hands out until its next scheduled
	 * reseed (up to a minute away), and every guest restored from one image would go on
	 * drawing the same stream: reseed now */
	if (rc == 0 && ioctl(fd, RNDRESEEDCRNG) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

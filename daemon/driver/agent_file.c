/*
 * daemon/driver/agent_file.c - the agent's and the shim's files, kept by their content (see
 * agent_file.h): copied once into <state>/agents/<sha256>, hard-linked into each sandbox dir
 * and image that uses one, removed at a start of spaced once no link is left.
 */
#include "daemon/driver/agent_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_PREFIX ".new-"   /* a keep's file before its rename */
#define COPY_CHUNK 65536     /* bytes read and written at a time */

/* Copies the file open at in into a new file at `to` (0555), synced; with md, hashes what it
 * copies into it. Returns 0 or -errno; a failed copy leaves no file. */
static int copy_into(int in, const char *to, EVP_MD_CTX *md)
{
	char *buf = malloc(COPY_CHUNK);
	int out = buf ? open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500) : -1;
	if (out < 0) {
		int rc = buf ? -errno : -ENOMEM;
		free(buf);
		return rc;
	}
	int rc = 0;
	ssize_t r;
	while (rc == 0 && (r = read(in, buf, COPY_CHUNK)) != 0) {
		if (r < 0) {
			rc = errno == EINTR ? 0 : -errno;
			continue;
		}
		if (md && !EVP_DigestUpdate(md, buf, (size_t)r))
			rc = -EIO;
		for (ssize_t w, done = 0; rc == 0 && done < r; done += w)
			if ((w = write(out, buf + done, (size_t)(r - done))) < 0)
				rc = -errno;
	}
	if (rc == 0 && (fchmod(out, 0555) < 0 || fsync(out) < 0))
		rc = -errno;
	close(out);
	free(buf);
	if (rc < 0)
		unlink(to);
	return rc;
}

static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int agent_file_keep(const char *dir, const char *src, char *out, size_t n, struct err *e)
{
	char tmp[700], hex[65];
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", dir, strerror(errno));
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return err_set(e, ERR_INTERNAL, errno, "opening %s: %s", src, strerror(errno));
	snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "%d", dir, (int)getpid());
	unlink(tmp);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int rc = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) ? copy_into(in, tmp, md) : -ENOMEM;
	if (rc == 0 && (!EVP_DigestFinal_ex(md, sum, &len) || len != 32)) {
		unlink(tmp);
		rc = -EIO;
	}
	EVP_MD_CTX_free(md);
	close(in);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "copying %s into %s: %s", src, dir, strerror(-rc));
	for (unsigned i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (snprintf(out, n, "%s/%s", dir, hex) >= (int)n) {
		unlink(tmp);
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "the path of %s's copy is too long", src);
	}
	if (access(out, F_OK) == 0) { /* kept already: that one stays, as images link it */
		unlink(tmp);
		return 0;
	}
	if (rename(tmp, out) < 0) {
		rc = -errno;
		unlink(tmp);
		return err_set(e, ERR_INTERNAL, -rc, "renaming %s: %s", tmp, strerror(-rc));
	}
	sync_dir(dir);
	return 0;
}

int agent_file_link(const char *file, const char *link_path, struct err *e)
{
	char tmp[720];
	struct stat a, b;
	if (stat(file, &a) < 0)
		return err_set(e, ERR_INTERNAL, errno, "%s: %s", file, strerror(errno));
	if (stat(link_path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.new", link_path) >= (int)sizeof(tmp))
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "%s: the path is too long", link_path);
	unlink(tmp);
	int rc = link(file, tmp) < 0 ? -errno : 0;
	if (rc == -EXDEV) { /* on another file system: a copy of its own, the same bytes */
		int in = open(file, O_RDONLY | O_CLOEXEC);
		rc = in < 0 ? -errno : copy_into(in, tmp, NULL);
		if (in >= 0)
			close(in);
	}
	if (rc == 0 && rename(tmp, link_path) < 0) {
		rc = -errno;
		unlink(tmp);
	}
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "linking %s to %s: %s", link_path, file, strerror(-rc));
	return 0;
}

/* Whether name is a kept file's: 64 lowercase hex digits. */
static bool kept_name(const char *name)
{
	return strlen(name) == 64 && strspn(name, "0123456789abcdef") == 64;
}

static bool kept_for(const char *name, const char *const keep[], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *slash = keep[i] ? strrchr(keep[i], '/') : NULL;
		if (slash && strcmp(slash + 1, name) == 0)
			return true;
	}
	return false;
}

int agent_file_sweep(const char *dir, const char *const keep[], size_t n)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(dp))) {
		struct stat st;
		bool half = strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
		if (!half && (!kept_name(de->d_name) || kept_for(de->d_name, keep, n)))
			continue;
		if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if ((half || st.st_nlink == 1) && unlinkat(dirfd(dp), de->d_name, 0) == 0)
			removed++;
	}
	closedir(dp);
	return removed;
}

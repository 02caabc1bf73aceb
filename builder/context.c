/*
 * builder/context.c - unpacks the build context the client sent (a tar stream, gzip'd or
 * not) into a folder, with libarchive's guards against entries that climb out of it ("..",
 * absolute names, paths through links), as the unprivileged user nobody in a child process:
 * a flaw in the unpacking can write nowhere nobody cannot. Owners are not kept (COPY gives
 * its files root's or --chown's); modes and times are.
 */
#include "builder/context.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

/* In the child: unpacks the archive open at fd into the working folder. Returns the exit status:
 * 0, or 1 with the reason on fd 2 (the parent's log). */
static int unpack_here(int fd)
{
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_read_support_filter_gzip(in);
	archive_read_support_filter_none(in);
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
						    ARCHIVE_EXTRACT_SECURE_NODOTDOT |
						    ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	int rc = archive_read_open_fd(in, fd, 65536) == ARCHIVE_OK ? 0 : 1;
	unsigned long long files = 0, bytes = 0;
	struct archive_entry *e;
	while (rc == 0) {
		int r = archive_read_next_header(in, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN || ++files > BUILD_CONTEXT_FILES_MAX) {
			rc = 1;
			break;
		}
		mode_t type = archive_entry_filetype(e);
		if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			archive_read_data_skip(in); /* devices, fifos, sockets: nothing a COPY takes */
			continue;
		}
		bytes += (unsigned long long)(archive_entry_size(e) > 0 ? archive_entry_size(e) : 0);
		if (bytes > BUILD_CONTEXT_BYTES_MAX) {
			fprintf(stderr, "the build context is over %llu bytes unpacked\n", (unsigned long long)BUILD_CONTEXT_BYTES_MAX);
			return 1;
		}
		if (archive_write_header(out, e) < ARCHIVE_WARN) {
			rc = 1;
			break;
		}
		const void *buf;
		size_t n;
		la_int64_t off;
		while (rc == 0 && (r = archive_read_data_block(in, &buf, &n, &off)) == ARCHIVE_OK)
			if (archive_write_data_block(out, buf, n, off) < ARCHIVE_WARN)
				rc = 1;
		if (r < ARCHIVE_WARN || archive_write_finish_entry(out) < ARCHIVE_WARN)
			rc = 1;
	}
	if (files > BUILD_CONTEXT_FILES_MAX)
		fprintf(stderr, "the build context holds more than %d files\n", BUILD_CONTEXT_FILES_MAX);
	else if (rc)
		fprintf(stderr, "%s\n", archive_error_string(archive_errno(out) ? out : in) ?: archive_error_string(in) ?: "bad archive");
	archive_read_free(in);
	if (archive_write_close(out) != ARCHIVE_OK)
		rc = 1;
	archive_write_free(out);
	return rc;
}

int context_unpack(const char *archive, const char *dir, const char *what, char *msg, size_t n)
{
	int fd = open(archive, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (mkdir(dir, 0700) < 0 && errno != EEXIST) || chown(dir, NOBODY, NOBODY) < 0) {
		snprintf(msg, n, "cannot prepare %s: %s", what, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		snprintf(msg, n, "cannot unpack %s: %s", what, strerror(errno));
		close(fd);
		return -EIO;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 2);
		if (chdir(dir) < 0 || setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0) {
			fprintf(stderr, "cannot become nobody: %s\n", strerror(errno));
			_exit(1);
		}
		umask(0);
		_exit(unpack_here(fd));
	}
	close(pipefd[1]);
	close(fd);
	ssize_t got = pid > 0 ? read(pipefd[0], msg, n - 1) : -1;
	close(pipefd[0]);
	msg[got > 0 ? got : 0] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	int status = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	char reason[512];
	snprintf(reason, sizeof(reason), "%s", msg[0] ? msg : "it could not be read");
	snprintf(msg, n, "%s is not a tar archive space can unpack: %s", what, reason);
	return -EINVAL;
}

/*
 * cli/cmd_cp.c - `space cp SRC DST`: copy one file into or out of a sandbox.
 *
 * Exactly one side is ID:PATH (a side is remote when it has a ':' with no
 * '/' before it; write ./a:b for a local file named a:b). A relative remote
 * PATH is taken under /work, the sandbox's working directory. `-` as the
 * local side is stdin or stdout. Bytes stream through client_upload /
 * client_download in small pieces; a file is never read whole into memory.
 * A download goes to a temporary file next to the destination, renamed over
 * it only once complete, so a failed copy leaves the destination as it was.
 * File modes travel both ways (less the umask when downloading).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "sigfwd.h"

#define CP_WORKDIR "/work"

const char cmd_cp_usage[] =
	"Usage: space cp SRC DST\n"
	"\n"
	"Copy one file between here and a sandbox; exactly one of SRC and DST is\n"
	"ID:PATH. PATH is absolute, or relative to /work. Use - as the local side for\n"
	"stdin or stdout. A DST that is a directory (or ends in /) gets SRC's name.\n"
	"\n"
	"Examples:\n"
	"  space cp data.csv 5f1c0a9e3b7d:/work/\n"
	"  space cp 5f1c0a9e3b7d:/work/out.png ./out.png\n"
	"  tar c src | space cp - 5f1c0a9e3b7d:/tmp/src.tar\n";

struct remote {
	char *id;
	char *path; /* absolute */
};

static void remote_free(struct remote *r)
{
	free(r->id);
	free(r->path);
}

/* Progress on a terminal (stderr): "NAME  12.3 MiB of 256.0 MiB  4%" (or "NAME  12.3 MiB" while
 * the size is not known), at most every CP_PROGRESS_MS and once more at the end, each line over
 * the last. */
#define CP_PROGRESS_MS 200
static const char *progress_name;
static long long progress_at_ms = -1;             /* when a line was last written, -1: never */
static long long progress_done, progress_total = -1; /* the latest figures... */
static long long progress_shown = -1;             /* ... and the bytes the last line showed */
static long long progress_size = -1;              /* a download's size, from its stat */

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void progress_show(void)
{
	if (progress_total > 0)
		fprintf(stderr, "\r\033[K%s  %.1f MiB of %.1f MiB  %d%%", progress_name, progress_done / 1048576.0,
			progress_total / 1048576.0, (int)(progress_done * 100 / progress_total));
	else
		fprintf(stderr, "\r\033[K%s  %.1f MiB", progress_name, progress_done / 1048576.0);
	progress_shown = progress_done;
	progress_at_ms = mono_ms();
}

static void on_progress(long long done, long long total)
{
	progress_done = done;
	progress_total = total > 0 ? total : progress_size; /* spaced streams a download unsized */
	if (done != progress_shown && (progress_at_ms < 0 || mono_ms() - progress_at_ms >= CP_PROGRESS_MS))
		progress_show();
}

/* Ends the progress line, if one was written: the last figures, then a new line. */
static void progress_end(void)
{
	if (progress_at_ms < 0)
		return;
	if (progress_done != progress_shown)
		progress_show();
	fputc('\n', stderr);
}

static int interrupted(void)
{
	cli_error("interrupted");
	return CLI_EXIT_INTERRUPTED;
}

/* 1 if arg is ID:PATH (filled into *r), 0 if local, negative on error. */
static int parse_side(const char *arg, struct remote *r)
{
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || memchr(arg, '/', (size_t)(colon - arg)))
		return 0;
	const char *p = colon + 1;
	r->id = strndup(arg, (size_t)(colon - arg));
	if (p[0] == '/')
		r->path = strdup(p);
	else if (asprintf(&r->path, CP_WORKDIR "/%s", p) < 0)
		r->path = NULL;
	return r->id && r->path ? 1 : -ENOMEM;
}

/* The last component of path, ignoring trailing slashes (malloc'd). */
static char *base_name(const char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *start = path + n;
	while (start > path && start[-1] != '/')
		start--;
	return strndup(start, (size_t)(path + n - start));
}

/* dir + "/" + name, without doubling a slash. */
static char *join(const char *dir, const char *name)
{
	char *out;
	size_t n = strlen(dir);

	if (asprintf(&out, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return out;
}

/* "/v1/sandboxes/ID/files<what>?path=ESC" */
static char *files_path(const struct remote *r, const char *what)
{
	char *e = client_escape(r->path), *suffix = NULL, *path = NULL;

	if (e && asprintf(&suffix, "/files%s?path=%s", what, e) >= 0)
		path = cli_sandbox_path(r->id, suffix);
	free(e);
	free(suffix);
	return path;
}

/* GET /files/stat; *entry is NULL (and 0 returned) when the path does not exist. */
static int remote_stat(struct cli *cli, const struct remote *r, json_t **entry, struct client_err *err)
{
	char *path = files_path(r, "/stat");
	int ret;

	*entry = NULL;
	if (!path)
		return -ENOMEM;
	ret = client_request(&cli->client, "GET", path, NULL, entry, err);
	free(path);
	if (ret == -EREMOTEIO && err->status == 404 && !strcmp(err->code, "not_found")) {
		/* the file is missing - unless the sandbox is: let the copy itself say which */
		return 0;
	}
	return ret;
}

static int upload(struct cli *cli, const char *src, struct remote *dst)
{
	struct client_err err = { 0 };
	json_t *entry = NULL, *reply = NULL;
	char *path = NULL;
	long long size = -1;
	int fd = STDIN_FILENO, status = 0, mode = -1;
	struct stat st;

	if (strcmp(src, "-")) {
		fd = open(src, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			status = cli_error("%s: %s", src, strerror(errno));
			goto out;
		}
		if (S_ISDIR(st.st_mode)) {
			status = cli_error("%s: is a directory (space cp copies one file)", src);
			goto out;
		}
		if (S_ISREG(st.st_mode))
			size = (long long)st.st_size;
		mode = (int)(st.st_mode & 07777);
	}

	/* ID:/dir/ and ID:/existing-dir get the source's name */
	int into_dir = dst->path[strlen(dst->path) - 1] == '/';
	if (!into_dir) {
		if (remote_stat(cli, dst, &entry, &err) < 0) {
			status = cli_report(cli, &err);
			goto out;
		}
		const char *type = json_string_value(json_object_get(entry, "type"));
		into_dir = type && !strcmp(type, "dir");
	}
	if (into_dir) {
		if (fd == STDIN_FILENO) {
			status = cli_error("%s:%s is a directory: name the file to write from stdin",
					   dst->id, dst->path);
			goto out;
		}
		char *name = base_name(src), *full = name ? join(dst->path, name) : NULL;
		free(name);
		if (!full) {
			status = cli_error("out of memory");
			goto out;
		}
		free(dst->path);
		dst->path = full;
	}

	path = files_path(dst, "");
	if (path && mode >= 0) {
		char *with_mode;
		if (asprintf(&with_mode, "%s&mode=%04o", path, (unsigned)mode) < 0)
			with_mode = NULL;
		free(path);
		path = with_mode;
	}
	if (!path) {
		status = cli_error("out of memory");
		goto out;
	}
	int r = client_upload(&cli->client, path, fd, size, &reply, &err);
	if (r) {
		status = r == -ECANCELED ? interrupted() : cli_report(cli, &err);
		goto out;
	}
	json_t *got = json_object_get(reply, "size");
	if (size >= 0 && json_is_integer(got) && json_integer_value(got) != size)
		status = cli_error("%s:%s: spaced stored %lld bytes of %lld", dst->id, dst->path,
				   (long long)json_integer_value(got), size);
out:
	if (fd > STDIN_FILENO)
		close(fd);
	json_decref(entry);
	json_decref(reply);
	free(path);
	return status;
}

/* Writes the remote file to fd; returns an exit status (0 on success). */
static int download_to(struct cli *cli, const struct remote *src, int fd)
{
	struct client_err err = { 0 };
	char *path = files_path(src, "");
	long long n;
	int status = 0;

	if (!path)
		return cli_error("out of memory");
	int r = client_download(&cli->client, path, fd, &n, &err);
	if (r)
		status = r == -ECANCELED ? interrupted() : cli_report(cli, &err);
	free(path);
	return status;
}

static int download(struct cli *cli, struct remote *src, const char *dst)
{
	struct client_err err = { 0 };
	json_t *entry = NULL;
	char *target = NULL, *tmp = NULL;
	int fd = -1, status = 0;
	mode_t mode = 0666;
	struct stat st;

	if (remote_stat(cli, src, &entry, &err) < 0) {
		status = cli_report(cli, &err);
		goto out;
	}
	const char *type = json_string_value(json_object_get(entry, "type"));
	if (json_is_integer(json_object_get(entry, "size")))
		progress_size = (long long)json_integer_value(json_object_get(entry, "size"));
	if (type && !strcmp(type, "dir")) {
		status = cli_error("%s:%s: is a directory (space cp copies one file)", src->id, src->path);
		goto out;
	}
	const char *m = json_string_value(json_object_get(entry, "mode"));
	if (m)
		mode = (mode_t)(strtoul(m, NULL, 8) & 0777);
	if (!strcmp(dst, "-")) {
		status = download_to(cli, src, STDOUT_FILENO);
		goto out;
	}

	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *name = base_name(src->path);
		target = name ? join(dst, name) : NULL;
		free(name);
	} else if (dst[strlen(dst) - 1] == '/') {
		status = cli_error("%s: no such directory", dst);
		goto out;
	} else {
		target = strdup(dst);
	}
	char *d = target ? strdup(target) : NULL, *b = target ? strdup(target) : NULL;
	if (d && b && asprintf(&tmp, "%s/.%s.space-XXXXXX", dirname(d), basename(b)) < 0)
		tmp = NULL;
	free(d);
	free(b);
	if (!tmp) {
		status = cli_error("out of memory");
		goto out;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		status = cli_error("%s: %s", target, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (stat(target, &st) == 0 && S_ISREG(st.st_mode))
		mode = st.st_mode & 07777; /* replacing a file keeps its mode, as cp does */
	else
		mode &= ~mask;
	status = download_to(cli, src, fd);
	if (!status && fchmod(fd, mode) < 0)
		status = cli_error("%s: %s", tmp, strerror(errno));
	if (close(fd) < 0 && !status)
		status = cli_error("%s: %s", tmp, strerror(errno));
	fd = -1;
	if (!status && rename(tmp, target) < 0)
		status = cli_error("%s: %s", target, strerror(errno));
	if (status)
		unlink(tmp);
out:
	if (fd >= 0)
		close(fd);
	json_decref(entry);
	free(target);
	free(tmp);
	return status;
}

int cmd_cp(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct remote src = { 0 }, dst = { 0 };
	int c, status;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(cli);
		return cli_bad_option(cli);
	}
	if (argc - optind != 2)
		return cli_usage_error(cli, "wants SRC and DST");
	const char *a = argv[optind], *b = argv[optind + 1];
	if (!a[0] || !b[0])
		return cli_usage_error(cli, "SRC and DST may not be empty");
	int ra = parse_side(a, &src), rb = parse_side(b, &dst);
	if (sigfwd_install() == 0) /* Ctrl-C and friends stop a copy (no partial download is left) */
		cli->client.cancel = sigfwd_any;
	if (isatty(STDERR_FILENO)) { /* how far the copy is, on a terminal only */
		progress_name = rb ? a : b;
		cli->client.progress = on_progress;
	}
	if (ra < 0 || rb < 0)
		status = cli_error("out of memory");
	else if (ra == rb)
		status = cli_usage_error(cli, "exactly one of SRC and DST must be ID:PATH");
	else if (rb)
		status = upload(cli, a, &dst);
	else
		status = download(cli, &src, b);
	progress_end();
	remote_free(&src);
	remote_free(&dst);
	return status;
}

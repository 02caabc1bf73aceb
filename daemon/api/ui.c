/*
 * daemon/api/ui.c - the web console's files: which names /ui serves and opening them safely.
 *
 * A name is checked against a narrow charset before it touches the filesystem, then opened
 * with openat() under the console's folder without following a link, and must be a regular
 * file: nothing outside that folder, and nothing but the console's own kinds of file, can be
 * read through /ui. The vendor files are a fixed table of Debian's paths.
 */
#include "daemon/api/ui.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UI_PREFIX "/ui"
#define UI_VENDOR "vendor/"
#define UI_INDEX "index.html"

/* The kinds of file the console is made of, by extension. */
static const struct {
	const char *ext;
	const char *type;
} types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".json", "application/json" },
	{ ".svg", "image/svg+xml" },
	{ ".png", "image/png" },
	{ ".ico", "image/x-icon" },
};

/* /ui/vendor/NAME: Debian's packages of the libraries the console uses, never copied into the
 * tree (libjs-chart.js, libjs-term.js). */
static const struct {
	const char *name;
	const char *path;
	const char *package;
} vendor[] = {
	{ "chart.js", "/usr/share/javascript/chart.js/chart.min.js", "libjs-chart.js" },
	{ "term.js", "/usr/share/javascript/term.js/term.js", "libjs-term.js" },
};

bool ui_path(const char *url)
{
	size_t n = strlen(UI_PREFIX);
	return strncmp(url, UI_PREFIX, n) == 0 && (url[n] == '\0' || url[n] == '/');
}

static const char *type_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return NULL;
}

/* Whether name may be a file of the console's folder (see ui.h). */
static bool name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > UI_NAME_MAX || name[0] == '.' || name[0] == '-' || strstr(name, ".."))
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* fd's size into f, when it is a regular file of at most UI_FILE_MAX bytes; the file is then
 * read blocking, as libmicrohttpd wants (it was opened O_NONBLOCK so that a pipe could not hold
 * the opening). what names it in errors. */
static int check_file(int fd, const char *what, struct ui_file *f, struct err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_set(e, ERR_INTERNAL, errno, "%s: %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(e, ERR_NOT_FOUND, ENOENT, "the console has no file %s", what);
	if (st.st_size > UI_FILE_MAX)
		return err_set(e, ERR_INTERNAL, EFBIG, "%s is over %d bytes", what, UI_FILE_MAX);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return err_set(e, ERR_INTERNAL, errno, "%s: %s", what, strerror(errno));
	f->size = (uint64_t)st.st_size;
	return 0;
}

static int open_vendor(const char *name, struct ui_file *f, struct err *e)
{
	for (size_t i = 0; i < sizeof(vendor) / sizeof(vendor[0]); i++) {
		if (strcmp(vendor[i].name, name) != 0)
			continue;
		/* a path of the table, not of the request: Debian's own links are followed */
		int fd = open(vendor[i].path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err_set(e, ERR_NOT_FOUND, ENOENT, "%s is missing: install Debian's %s", vendor[i].path,
				       vendor[i].package);
		int rc = check_file(fd, vendor[i].path, f, e);
		if (rc < 0) {
			close(fd);
			return rc;
		}
		f->fd = fd;
		f->content_type = type_of(vendor[i].name);
		return 0;
	}
	return err_set(e, ERR_NOT_FOUND, ENOENT, "the console has no file vendor/%s", name);
}

int ui_open(const char *dir, const char *url, struct ui_file *f, struct err *e)
{
	int rc = 0, dfd = -1, fd = -1;
	const char *name = url + strlen(UI_PREFIX);
	if (*name == '/')
		name++;
	if (!*name)
		name = UI_INDEX;
	if (strncmp(name, UI_VENDOR, strlen(UI_VENDOR)) == 0)
		return open_vendor(name + strlen(UI_VENDOR), f, e);
	if (!name_ok(name))
		return err_set(e, ERR_INVALID, EINVAL,
			       "a file of the console is named by 1 to %d of A-Z a-z 0-9 . _ - (no leading dot or dash, "
			       "no ..)", UI_NAME_MAX);
	f->content_type = type_of(name);
	if (!f->content_type)
		return err_set(e, ERR_NOT_FOUND, ENOENT, "the console has no file %s (not a kind it serves)", name);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = err_set(e, ERR_NOT_FOUND, ENOENT, "the console's folder %s cannot be opened: %s", dir,
			     strerror(errno));
		goto out;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(e, ERR_NOT_FOUND, ENOENT, "the console has no file %s", name);
		goto out;
	}
	if ((rc = check_file(fd, name, f, e)) < 0)
		goto out;
	f->fd = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

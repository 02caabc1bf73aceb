/*
 * tests/unit/daemon/api/test_ui.c - ui_path and ui_open: which names /ui serves, and that
 * none reaches outside the console's folder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/api/ui.h"
#include "daemon/api/http.h"

static char root[] = "/tmp/space-test-ui-XXXXXX";
static char dir[64];

static void put(const char *rel, const char *text)
{
	char p[200];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The status ui_open answers for url (0: opened), and what it read into body. */
static int open_status(const char *url, char *body, size_t n)
{
	struct ui_file f = { .fd = -1 };
	struct err e = { 0 };
	int rc = ui_open(dir, url, &f, &e);
	if (rc < 0) {
		assert_int_not_equal(e.kind, ERR_NONE);
		return http_status(e.kind);
	}
	assert_true(fcntl(f.fd, F_GETFD) & FD_CLOEXEC);
	ssize_t got = read(f.fd, body, n - 1);
	assert_int_equal(got, (ssize_t)f.size);
	body[got] = '\0';
	close(f.fd);
	return 0;
}

static void test_paths_of_the_console(void **state)
{
	(void)state;
	assert_true(ui_path("/ui"));
	assert_true(ui_path("/ui/"));
	assert_true(ui_path("/ui/app.js"));
	assert_false(ui_path("/uix"));
	assert_false(ui_path("/v1/ui"));
	assert_false(ui_path("/"));
}

/* /ui and /ui/ are index.html; a file is its bytes with the type of its extension. */
static void test_serves_files_by_type(void **state)
{
	(void)state;
	char body[256];
	assert_int_equal(open_status("/ui", body, sizeof(body)), 0);
	assert_string_equal(body, "<html>index</html>");
	assert_int_equal(open_status("/ui/", body, sizeof(body)), 0);
	assert_string_equal(body, "<html>index</html>");
	struct ui_file f;
	struct err e = { 0 };
	assert_int_equal(ui_open(dir, "/ui/app.js", &f, &e), 0);
	assert_string_equal(f.content_type, "text/javascript; charset=utf-8");
	close(f.fd);
	assert_int_equal(ui_open(dir, "/ui/console.css", &f, &e), 0);
	assert_string_equal(f.content_type, "text/css; charset=utf-8");
	close(f.fd);
}

/* Names that climb, hide, or lead anywhere but a regular file of the folder are refused. */
static void test_traversal_refused(void **state)
{
	(void)state;
	char body[256];
	const char *bad[] = { "/ui/../secret.html", "/ui/..", "/ui/.hidden.js", "/ui//etc/passwd", "/ui/sub/a.js",
			      "/ui/a..js", "/ui/-x.js", "/ui/a b.js", "/ui/a%2f.js", "/ui/a\\b.js" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(open_status(bad[i], body, sizeof(body)), 400);
	/* a link in the folder, even to a file the console could serve, is not followed */
	assert_int_equal(open_status("/ui/link.js", body, sizeof(body)), 404);
	assert_int_equal(open_status("/ui/sub", body, sizeof(body)), 404);   /* a folder: no type */
	assert_int_equal(open_status("/ui/dir.js", body, sizeof(body)), 404); /* a folder named .js */
	assert_int_equal(open_status("/ui/fifo.js", body, sizeof(body)), 404);
	assert_int_equal(open_status("/ui/vendor/../../etc/passwd", body, sizeof(body)), 404);
	assert_int_equal(open_status("/ui/vendor/passwd", body, sizeof(body)), 404);
}

/* A name of UI_NAME_MAX bytes is served, one more is refused; unknown kinds and files 404. */
static void test_names_at_their_limit(void **state)
{
	(void)state;
	char body[256], name[UI_NAME_MAX + 2], url[UI_NAME_MAX + 16];
	memset(name, 'a', UI_NAME_MAX - 3);
	memcpy(name + UI_NAME_MAX - 3, ".js", 4);
	put(name, "max");
	snprintf(url, sizeof(url), "/ui/%s", name);
	assert_int_equal(open_status(url, body, sizeof(body)), 0);
	assert_string_equal(body, "max");
	snprintf(url, sizeof(url), "/ui/a%s", name);
	assert_int_equal(open_status(url, body, sizeof(body)), 400);
	assert_int_equal(open_status("/ui/missing.js", body, sizeof(body)), 404);
	assert_int_equal(open_status("/ui/notes.txt", body, sizeof(body)), 404);
}

/* A file of UI_FILE_MAX bytes is served; one byte more is refused. */
static void test_files_at_their_limit(void **state)
{
	(void)state;
	char p[200];
	struct ui_file f;
	struct err e = { 0 };
	snprintf(p, sizeof(p), "%s/big.js", root);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, UI_FILE_MAX), 0);
	assert_int_equal(ui_open(dir, "/ui/big.js", &f, &e), 0);
	assert_int_equal(f.size, UI_FILE_MAX);
	assert_false(fcntl(f.fd, F_GETFL) & O_NONBLOCK);
	close(f.fd);
	assert_int_equal(ftruncate(fd, UI_FILE_MAX + 1), 0);
	close(fd);
	assert_int_equal(ui_open(dir, "/ui/big.js", &f, &e), -EFBIG);
	assert_int_equal(http_status(e.kind), 500);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	snprintf(dir, sizeof(dir), "%s", root);
	put("index.html", "<html>index</html>");
	put("app.js", "app");
	put("console.css", "css");
	put("notes.txt", "text");
	char p[200], outside[200];
	snprintf(outside, sizeof(outside), "%s.secret.js", root);
	int fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(p, sizeof(p), "%s/link.js", root);
	if (symlink(outside, p) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sub", root);
	if (mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/dir.js", root);
	if (mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/fifo.js", root);
	return mkfifo(p, 0644);
}

static int teardown(void **state)
{
	(void)state;
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s.secret.js", root, root);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_of_the_console),
		cmocka_unit_test(test_serves_files_by_type),
		cmocka_unit_test(test_traversal_refused),
		cmocka_unit_test(test_names_at_their_limit),
		cmocka_unit_test(test_files_at_their_limit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * daemon/api/ui.h - the web console's files (docs/console.md): what `GET /ui` and
 * `GET /ui/NAME` may serve, and opening it.
 *
 * The console is static files: the folder --ui names (by default build/ui beside spaced, made
 * by `make`), flat, and under /ui/vendor/ a fixed list of files of Debian's packages of
 * Chart.js and term.js. They are served on every listener without a token: they hold no
 * secret, and every call the page makes is an API request with the user's own token.
 * This module knows nothing of HTTP: http.c asks it for a file and answers.
 */
#ifndef SPACE_DAEMON_API_UI_H
#define SPACE_DAEMON_API_UI_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/host/err.h"

#define UI_NAME_MAX 64          /* bytes of a file's name in the console's folder */
#define UI_FILE_MAX (8 << 20)   /* bytes of a file served: a larger one is refused (500) */

/* Sent with everything /ui serves: scripts only from /ui, requests only to this spaced, no
 * frames. Inline style attributes are let through: the terminal colours its text with them
 * (term.js writes <span style="color: ...">), and a style runs no code. */
#define UI_CSP                                                                                         \
	"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "                \
	"frame-ancestors 'none'"

struct ui_file {
	int fd;                   /* open O_RDONLY | O_CLOEXEC, the caller's to close */
	uint64_t size;
	const char *content_type; /* static */
};

/* Whether url (a request's decoded path) is the console's: "/ui" or under "/ui/". */
bool ui_path(const char *url);

/*
 * Opens the file url names (ui_path is true of it): "/ui" and "/ui/" are dir's index.html;
 * "/ui/vendor/NAME" one of the fixed list of Debian's files; "/ui/NAME" the regular file
 * NAME of dir, NAME being 1 to UI_NAME_MAX bytes of [A-Za-z0-9._-] that starts with neither
 * a dot nor a dash, with an extension the console uses (.html .css .js .svg .png .ico .json),
 * opened without following a link. Returns 0 with *f filled, or -errno with e set: 400 for a
 * name outside those rules, 404 for no such file (a link, a folder or a missing file
 * included), 500 for one over UI_FILE_MAX or that cannot be read.
 */
int ui_open(const char *dir, const char *url, struct ui_file *f, struct err *e);

#endif

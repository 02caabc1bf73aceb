/*
 * daemon/core/recipe.h - templates spaced builds on first use, from recipes installed beside it.
 *
 * A recipe is a build context in spaced's recipes folder (--recipes, default `recipes` beside
 * the agent: build/recipes, made by `make` from sandbox/interpreter/ as
 * code-interpreter-v1): <recipes>/<NAME>/Dockerfile, the files it copies, and optionally
 * <recipes>/<NAME>/packages, one line "PKG[,PKG...]" of Debian packages its base gets first (a
 * build's --packages). A create that names a template spaced does not have, but has a recipe
 * for, waits while space-build builds it; the creates that come meanwhile wait for the same
 * build. Once the template is recorded (and cached, as every build's) each runs again as it
 * came. A build that fails, or runs past RECIPE_BUILD_TIMEOUT_S (it is then stopped), fails
 * them with its message (500); the next create tries again. A waiting create whose client
 * leaves is let go; the build goes on. [L] throughout.
 */
#ifndef SPACE_DAEMON_CORE_RECIPE_H
#define SPACE_DAEMON_CORE_RECIPE_H

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define RECIPE_BUILD_TIMEOUT_S 3600 /* a build from a recipe, at most (a first one fetches Debian's
				     * packages) */
#define RECIPE_STOP_GRACE_S 60      /* a build told to stop, killed after this */

struct op;

/* Makes op, a create of template name, wait for that template's build from its recipe. Returns
 * 1 when op waits (op->deferred: its handler runs again once the build ended), 0 when name has
 * no recipe or is there already, or -errno with *e set when the build cannot be started. */
int recipe_wait(struct daemon *d, struct op *op, const char *name, struct err *e);

/* Once a second, from the I/O thread: a waiting create whose client left is let go. */
void recipe_tick(struct daemon *d);

#endif

/*
 * lib/host/cache.h - entries of the machine's cache (--cache-dir, default
 * /var/cache/space), built once and shared by every state dir on the machine.
 *
 * An entry <parent>/<name> is a file or a directory that appears only when
 * complete: it is built under <parent>/<name>.tmp, synced, and renamed into
 * place. <parent>/<name>.lock (flock) keeps two builders of the same entry,
 * in one spaced or in two, from racing: the second waits and then finds the
 * entry made. A build that failed or was cut short by a crash leaves only a
 * .tmp, which the next builder removes first. Entries are never changed
 * once published, so readers need no lock to read them.
 *
 * Entries of the kinds a prune may remove (cache_prune.h: Dockerfile step roots, booted
 * images) are used under a hold: <name>.lock taken shared for as long as the entry is in
 * use, which a prune (taking it exclusive, without waiting) never removes. Every use
 * stamps the lock file's modification time: the entry's last use, by which a prune
 * removes the least recently used first.
 */
#ifndef SPACE_LIB_HOST_CACHE_H
#define SPACE_LIB_HOST_CACHE_H

#include <stddef.h>

#include "lib/host/err.h"

/* Makes the entry at tmp (a path that does not exist yet). Returns 0 or -errno with e filled. */
typedef int cache_build_fn(const char *tmp, void *ctx, struct err *e);

/*
 * Makes sure <parent>/<name> exists, calling build when it does not (parent
 * is created if missing). Blocks for as long as the build, or another
 * builder's, takes. Returns 1 when this call built it, 0 when it was there,
 * or -errno with e filled.
 */
int cache_get(const char *parent, const char *name, cache_build_fn *build, void *ctx, struct err *e);

/*
 * Holds the entry, made first as cache_get makes it when it is not there: returns the
 * descriptor of <name>.lock (close-on-exec) locked shared, with the entry there and stamped
 * as used, or -errno with e filled. The entry stays until the descriptor is closed (by the
 * holder, or its exit). Holders of an entry that is there never wait on each other; one that
 * a prune took away between the look and the lock is made again.
 */
int cache_hold(const char *parent, const char *name, cache_build_fn *build, void *ctx, struct err *e);

/*
 * What entry <parent>/<name> added to the cache, in bytes of disk blocks: its files but
 * those that have other names too (a step root's hard links to the step before), as
 * counted when it was made and kept beside it in <name>.bytes (counted now, and kept,
 * for an entry that has none). -1 when it cannot be read.
 */
long long cache_bytes(const char *parent, const char *name);

/* Whether <parent>/<name> is published. */
int cache_has(const char *parent, const char *name);

#endif

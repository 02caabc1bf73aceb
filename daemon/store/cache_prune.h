/*
 * daemon/store/cache_prune.h - what the machine's cache holds, and making room in it.
 *
 * Most of the cache (cache.h) can be made again from what a state dir keeps: a Dockerfile
 * step's files (build/, rebuilt by the next build that has the step) and a template's
 * booted microVM image (booted/, rebuilt by the next create that wants one). Those two
 * kinds are prunable: a prune removes their entries least recently used first, never one
 * held (cache_hold) or being built. The other kinds are not: a template's files live as
 * long as a state dir uses the template (template.h), and kernels, initramfs and template
 * disk images are what running and suspended microVMs of every state dir were started
 * with, small beside the rest (a template's image leaves with its files: template_release).
 *
 * An entry's size is what it added (cache_bytes): a step root's files that its step wrote,
 * not its hard links to the step before. The sizes add up to about what the kinds hold; an
 * entry's removal frees at most its size (less while a later step or a template still
 * links its files). Sizes are kept beside the entries, so a prune walks no files of the
 * cache; a look at the usage walks only the kinds that are not prunable (their files are
 * mostly hard links, which a size of what was added would not show).
 *
 * One prune at a time on a machine: <cache>/.prune.lock.
 */
#ifndef SPACE_DAEMON_CACHE_PRUNE_H
#define SPACE_DAEMON_CACHE_PRUNE_H

#include <stdbool.h>

#include <jansson.h>

#define CACHE_PRUNE_LOCK ".prune.lock"

/* The prunable kinds: folders of the cache. */
#define CACHE_PRUNABLE { "build", "booted" }

/* What cache_prune did. */
struct cache_pruned {
	int removed;              /* entries removed */
	long long freed;          /* their bytes */
	int busy;                 /* entries that were in the way but held or being built */
	long long kept;           /* bytes of the prunable kinds left */
};

/*
 * Every folder of the cache at dir as a JSON array of {"kind", "entries", "bytes",
 * "prunable"} and, for the prunable kinds, "in_use" (entries held or being built) and
 * "reclaimable" (bytes of the others). Returns NULL when dir cannot be read.
 */
json_t *cache_usage(const char *dir);

/*
 * Removes entries of the prunable kinds, least recently used first, until what is left of
 * them is at most keep bytes (0: every entry not in use). Never waits on a holder; waits
 * for another prune on the machine when wait is set, else returns -EBUSY. Returns 0 or
 * -errno (the cache cannot be read); *out says what was done.
 */
int cache_prune(const char *dir, long long keep, bool wait, struct cache_pruned *out);

#endif

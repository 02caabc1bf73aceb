/*
 * daemon/store/template.h - root filesystems that sandboxes start from.
 *
 * The default template (Debian minbase with python3, bash, coreutils, procps,
 * ca-certificates) is built with mmdebstrap from the host's apt sources into
 * <cache>/templates/<key>/rootfs, where key is a hash of every input of the
 * build. Any number of state dirs on the machine share the cache, so a build
 * happens once per machine and input set; a lock file keeps two builders of
 * the same key from racing, and a build becomes visible only by an atomic
 * rename when complete.
 */
#ifndef SPACE_DAEMON_TEMPLATE_H
#define SPACE_DAEMON_TEMPLATE_H

#include <stddef.h>

#include "daemon/daemon.h"
#include "daemon/base/err.h"

/* Makes sure the default template exists (building it if needed, which takes
 * about a minute) and records it in the store. Blocks. */
int template_ensure_default(struct daemon *d, struct err *e);

/* The rootfs directory of template `name` into out. Returns 0 or -ENOENT. */
int template_rootfs(struct daemon *d, const char *name, char *out, size_t n);

/* The cache key of the default template's inputs (64 hex characters + NUL). */
int template_default_key(char out[65]);

#endif

/*
 * daemon/core/volume.h - volumes: storage that outlives sandboxes.
 *
 * A volume is a named ext4 image of its size (the same images as a sandbox's disk,
 * driver/disk.h), owned by one tenant ("" for the Unix socket's administrator), in
 * <state>/volumes/<name>/disk.img, mounted once on the host at <state>/volumes/<name>/mnt
 * while it exists. A sandbox names the volumes it mounts when it is made (sb->volumes,
 * recorded with it): each read-write by one sandbox at a time, read-only by any number;
 * those mounts are the sandbox's until it is deleted, suspended or not.
 *
 * Creation is crash-safe: the image is made in a folder of its own (.new-<random>), renamed
 * to the volume's name when complete, and recorded after that; volume_start removes, at the
 * next start, every folder no record owns (a create cut short, a removal whose record went).
 */
#ifndef SPACE_DAEMON_VOLUME_H
#define SPACE_DAEMON_VOLUME_H

#include <stdbool.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

#define VOLUME_DEFAULT_MB 1024        /* a volume's size unless its create asks for another */
#define VOLUME_MIN_MB 64              /* as a sandbox's disk: smaller, ext4's own tables crowd it */
#define VOLUME_MAX_MB (256 * 1024)    /* sparse: only what is written takes host space */
#define TENANT_MAX_VOLUMES 32         /* volumes one tenant (or the administrator) may own */

struct op;

/* Letters, digits, '.', '_' and '-', starting with a letter or digit, 1..VOLUME_NAME_MAX bytes. */
bool volume_name_ok(const char *name);

/* Starts making volume `name` of size_mb for tenant ("" the administrator) with labels (an
 * object of strings, borrowed) on a job; op is answered 201 with the volume. Returns 0 or
 * -errno with *e filled (400 bad input, 409 a name taken, 429 at TENANT_MAX_VOLUMES). [L] */
int volume_create(struct daemon *d, const char *tenant, const char *name, int size_mb, const json_t *labels,
		  struct op *op, struct err *e);

/* Starts removing volume `name` on a job (op answered 204): refused (409, naming it) while any
 * sandbox mounts it. tenant NULL: the administrator, who may remove any. [L] */
int volume_remove(struct daemon *d, const char *tenant, const char *name, struct op *op, struct err *e);

/* Volume `name` as tenant (NULL: the administrator, any) may see it, with used_bytes and the
 * sandboxes that mount it; NULL with *e set (404) if there is none it may see. [L] */
json_t *volume_get(struct daemon *d, const char *tenant, const char *name, struct err *e);

/* Every volume tenant may see (NULL: all), as volume_get shows them. [L] */
json_t *volume_list(struct daemon *d, const char *tenant);

/*
 * Reads a create's "volumes" (an array of {"name", "path", "read_only"}) into out (at most
 * SANDBOX_MAX_VOLUMES), checking each: a name of a volume tenant owns (NULL: the administrator,
 * any), a path that is absolute, plain, not / and not under /proc, /sys, /dev or /.space, no path
 * or volume twice, and no read-write mount of a volume another sandbox mounts read-write. 0
 * with *n set, or -errno with *e filled (400, 404, 409 naming the holder). [L]
 */
int volume_mounts_read(struct daemon *d, const char *tenant, const json_t *list, struct sb_volume *out, int *n,
		       struct err *e);

/* At start, before sandboxes are adopted: removes the folders of volumes no record owns and
 * mounts every recorded volume on the host. Takes nothing; call before the threads. */
void volume_start(struct daemon *d);

#endif

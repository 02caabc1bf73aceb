/*
 * daemon/store/template.h - root filesystems that sandboxes start from.
 *
 * Every template is built with mmdebstrap from the host's apt sources: the
 * default one is Debian minbase with python3, bash, coreutils, procps and
 * ca-certificates, and a user `user` (uid and gid 1000, home /home/user,
 * shell bash) as E2B's templates have; a named one (spaced --template NAME=PKG,...) holds the
 * same plus its own packages. A build goes into <cache>/templates/<key>/rootfs,
 * where key is a hash of every input of the build (the package list among
 * them), so any number of state dirs on the machine share the cache and a
 * build happens once per machine and input set; a lock file keeps two
 * builders of the same key from racing, and a build becomes visible only by
 * an atomic rename when complete. The store records each template under its
 * name, and a sandbox names the template it starts from.
 *
 * A template can also come from a container image (template_oci.c): spaced --template
 * NAME=oci-archive:FILE | docker-archive:FILE | oci:DIR[:REF] | docker://REF imports it
 * with skopeo and umoci; the image's environment is every sandbox's of it, and its working
 * folder, user and command are recorded with it.
 */
#ifndef SPACE_DAEMON_TEMPLATE_H
#define SPACE_DAEMON_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"
#include "lib/host/names.h" /* TEMPLATE_DEFAULT, TEMPLATE_NAME_MAX, TEMPLATE_BUILD_* */

#define TEMPLATE_MAX_NAMED 16       /* --template flags one spaced takes */
#define TEMPLATE_SOURCE_MAX 1024    /* bytes of an image's source (transport:reference) */

/* A template to make: its name and the packages it adds to the default's. */
struct template_spec {
	char name[TEMPLATE_NAME_MAX + 1];
	char extra[TEMPLATE_EXTRA_MAX + 1]; /* Debian package names, comma-separated, sorted, each once;
					     * "" for the default template */
	char source[TEMPLATE_SOURCE_MAX + 1]; /* or an image to import (then extra is ""): see
					       * template_is_image */
	char recorded[TEMPLATE_SOURCE_MAX + 1]; /* what the record says it came from; "": source
						 * (an upload's file is no place to name) */
	bool consume;                           /* source is a file of spaced's own (an upload):
						 * removed as soon as it has been read */
};

/* Whether s is a template name: NAME or NAME:TAG, NAME [A-Za-z0-9][A-Za-z0-9._-]* and TAG
 * [A-Za-z0-9_][A-Za-z0-9._-]* (Docker's), at most TEMPLATE_NAME_MAX bytes in all. */
bool template_name_ok(const char *s);
/* Makes NAME:latest NAME, in place: the one name of that template everywhere it is kept. */
void template_name_canon(char *s);

/* Whether source names an image: oci-archive:FILE, docker-archive:FILE, oci:DIR[:REF] or
 * docker://REF (skopeo's transports). */
bool template_is_image(const char *source);

/* Whether source is docker://HOST[:PORT]/... with HOST on loopback (127.0.0.0/8, localhost,
 * [::1]): such a registry is spoken to over plain HTTP, as Docker does by default. */
bool template_loopback_registry(const char *source);

/* Imports the image t->source as template t->name (the machine's cache keeps one copy of
 * each image) and records it. Blocks. Returns 0, or -errno with e set (400 when skopeo or
 * umoci refused the image). */
int template_import(struct daemon *d, const struct template_spec *t, struct err *e);

/* Records what template name (recorded already) holds, shown with it: the disk its files at
 * rootfs take, and layers (consumed; NULL: unknown), where they came from. A failure is
 * logged: the template stands without them. Blocks (it walks the files). */
void template_put_info(struct daemon *d, const char *name, const char *rootfs, json_t *layers);

/* Parses spaced's `--template NAME=PKG[,PKG...]` (or NAME=IMAGE, template_is_image) into t: NAME a template name other than
 * "default", each PKG a Debian package name (lower-case letters, digits, '+', '-', '.'; two
 * characters at least, the first a letter or digit). The packages are sorted, and repeats and
 * those the default template holds dropped, so one set has one cache key whatever the order
 * given (and a set that adds nothing is the default's). Returns 0, or -EINVAL with
 * e's message saying what is wrong. Touches nothing outside t and e. */
int template_parse(const char *arg, struct template_spec *t, struct err *e);

/* Makes sure template t exists (building it if needed, which takes a minute or more) and
 * records it in the store under t->name. Blocks. Returns 0 or -errno with e set. */
int template_ensure(struct daemon *d, const struct template_spec *t, struct err *e);

/* The machine's cache is shared by every state dir: each one that records a template marks
 * its cache entry (<cache>/templates/<key>.users/<state dir's hash>). template_use marks it;
 * template_release takes the mark away (when no other name of this state dir has the key)
 * and removes the entry once no state dir marks it. 0 or -errno. Blocks. */
int template_use(struct daemon *d, const char *key);
int template_release(struct daemon *d, const char *key);

/* Whether name is "build/<key>": a build step's root filesystem. */
bool template_is_build_step(const char *name);

/* The rootfs directory of template `name` (a build step's too) into out. Returns 0 or -ENOENT. */
int template_rootfs(struct daemon *d, const char *name, char *out, size_t n);

/* The cache key of the inputs of a template whose own packages are `extra` ("" for the
 * default one): 64 hex characters + NUL. Returns 0 or -EIO. */
int template_key(const char *extra, char out[65]);

#endif

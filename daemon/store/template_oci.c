/*
 * daemon/store/template_oci.c - templates imported from container images (template.h).
 *
 * skopeo copies the image, from whatever transport the source names, into an OCI layout of
 * its own under the cache (an OCI archive, already such a layout in a tar file, is unpacked
 * there by the builder instead); its manifest's digest names the template's folder, so an image
 * is unpacked once per machine however many names it has. umoci unpacks it there (layers
 * in order, whiteouts applied, owners kept) as a cache entry (cache.h): rootfs/ and the
 * runtime config.json it derives from the image's, whose environment, working folder, user
 * and command become the template's defaults.
 */
#include "daemon/store/template.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon/base/log.h"
#include "lib/host/spawn.h"
#include "lib/host/cache.h"
#include "daemon/store/store.h"

static const char *const TRANSPORTS[] = { "oci-archive:", "docker-archive:", "oci:", "docker://", NULL };

bool template_is_image(const char *source)
{
	for (int i = 0; TRANSPORTS[i]; i++)
		if (strncmp(source, TRANSPORTS[i], strlen(TRANSPORTS[i])) == 0 && source[strlen(TRANSPORTS[i])])
			return true;
	return false;
}

bool template_loopback_registry(const char *source)
{
	static const char prefix[] = "docker://";
	if (strncmp(source, prefix, sizeof(prefix) - 1) != 0)
		return false;
	const char *host = source + sizeof(prefix) - 1;
	if (strncmp(host, "[::1]", 5) == 0)
		return host[5] == ':' || host[5] == '/';
	char name[64];
	size_t n = strcspn(host, ":/");
	if (n == 0 || n >= sizeof(name) || (host[n] != ':' && host[n] != '/'))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	struct in_addr a;
	return strcmp(name, "localhost") == 0 || (inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127);
}

/* Runs argv, its output into logpath; on failure, e says what failed and where to look. */
static int run_logged(char *const argv[], const char *logpath, struct err *e)
{
	FILE *log = fopen(logpath, "we");
	int rc = spawn_run(argv, log ? fileno(log) : -1, log ? fileno(log) : -1);
	if (log)
		fclose(log);
	if (rc == 0)
		return 0;
	char why[256] = "";
	FILE *f = fopen(logpath, "re");
	while (f && fgets(why, sizeof(why), f)) /* the last line says why */
		;
	if (f)
		fclose(f);
	why[strcspn(why, "\n")] = '\0';
	const char *prog = strrchr(argv[0], '/');
	return err_set(e, ERR_INVALID, EIO, "%s failed (status %d): %s", prog ? prog + 1 : argv[0], rc,
		       why[0] ? why : "no message");
}

/* The layers of the image whose manifest (hex digest) is in the OCI layout at dir, in order:
 * [{"digest", "bytes", "media_type"}...], or NULL. */
static json_t *manifest_layers(const char *dir, const char *digest)
{
	char p[800];
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", dir, digest);
	json_t *m = json_load_file(p, 0, NULL), *out = json_array(), *l;
	size_t i;
	json_array_foreach(json_object_get(m, "layers"), i, l) {
		json_array_append_new(out, json_pack("{s:s?, s:I, s:s?}", "digest", json_string_value(json_object_get(l, "digest")),
						     "bytes", json_integer_value(json_object_get(l, "size")), "media_type",
						     json_string_value(json_object_get(l, "mediaType"))));
	}
	json_decref(m);
	return out;
}

/* The digest of the one manifest of the OCI layout at dir, hex, into out. */
static int manifest_digest(const char *dir, char out[65], struct err *e)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/index.json", dir);
	json_error_t je;
	json_t *idx = json_load_file(p, 0, &je);
	const char *d = json_string_value(json_object_get(json_array_get(json_object_get(idx, "manifests"), 0), "digest"));
	int rc = 0;
	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d + 7) != 64 || strspn(d + 7, "0123456789abcdef") != 64)
		rc = err_set(e, ERR_INTERNAL, EIO, "the image copied to %s has no sha256 manifest", dir);
	else
		memcpy(out, d + 7, 65);
	json_decref(idx);
	return rc;
}

/* An OCI archive is an OCI layout in a tar file: the builder unpacks it (as a build context
 * is: as nobody, nothing outside the folder), and the index's one image is tagged "img", as
 * skopeo's copy would have it, without copying its blobs again. The index is replaced by
 * rename, never written through whatever the archive put at its name. */
static int unpack_archive(struct daemon *d, const char *archive, const char *layout, const char *logpath,
			  struct err *e)
{
	char *argv[] = { d->cfg.build_path, "--unpack-image", (char *)archive, (char *)layout, NULL };
	int rc = run_logged(argv, logpath, e);
	if (rc < 0)
		return rc;
	char p[760], tmp[780];
	snprintf(p, sizeof(p), "%s/index.json", layout);
	snprintf(tmp, sizeof(tmp), "%s/index.json.space", layout);
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	json_t *idx = fd >= 0 ? json_loadfd(fd, 0, NULL) : NULL;
	if (fd >= 0)
		close(fd);
	json_t *m = json_object_get(idx, "manifests"), *one = json_array_get(m, 0);
	if (json_array_size(m) != 1 || !json_is_object(one)) {
		rc = err_set(e, ERR_INVALID, EINVAL, "the archive is not an OCI layout of one image (%zu in its index)",
			     json_array_size(m));
	} else {
		json_t *ann = json_object_get(one, "annotations");
		if (!json_is_object(ann))
			json_object_set_new(one, "annotations", ann = json_object());
		json_object_set_new(ann, "org.opencontainers.image.ref.name", json_string("img"));
		if (json_dump_file(idx, tmp, JSON_COMPACT) < 0 || rename(tmp, p) < 0)
			rc = err_set(e, ERR_INTERNAL, errno, "cannot tag the image in %s: %s", layout, strerror(errno));
	}
	json_decref(idx);
	return rc;
}

/* umoci unpacks the layout into tmp; the layout goes at once, before the cache makes tmp
 * durable (cache_get): what is removed before its pages were written is never written. */
static int unpack(const char *tmp, void *layout, struct err *e)
{
	char image[760], logpath[800];
	snprintf(image, sizeof(image), "%s:img", (const char *)layout);
	snprintf(logpath, sizeof(logpath), "%s.unpack.log", (const char *)layout);
	char *argv[] = { "umoci", "unpack", "--image", image, (char *)tmp, NULL };
	int rc = run_logged(argv, logpath, e);
	char *rm[] = { "rm", "-rf", "--one-file-system", (char *)layout, NULL };
	spawn_run(rm, -1, -1);
	return rc;
}

/* The template's defaults from the runtime config umoci wrote: {"env": {...}, "workdir",
 * "user", "cmd": [...]}, each present when the image sets it. */
static json_t *defaults(const char *bundle)
{
	char p[760];
	snprintf(p, sizeof(p), "%s/config.json", bundle);
	json_error_t je;
	json_t *cfg = json_load_file(p, 0, &je), *out = json_object(), *env = json_object();
	json_t *proc = json_object_get(cfg, "process"), *v;
	size_t i;
	json_array_foreach(json_object_get(proc, "env"), i, v) {
		const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
		if (eq && eq > kv) {
			char *k = strndup(kv, (size_t)(eq - kv));
			if (k)
				json_object_set_new(env, k, json_string(eq + 1));
			free(k);
		}
	}
	json_object_set_new(out, "env", env);
	const char *cwd = json_string_value(json_object_get(proc, "cwd"));
	if (cwd && *cwd)
		json_object_set_new(out, "workdir", json_string(cwd));
	json_t *user = json_object_get(proc, "user");
	if (json_is_integer(json_object_get(user, "uid"))) {
		char u[48];
		snprintf(u, sizeof(u), "%lld:%lld", (long long)json_integer_value(json_object_get(user, "uid")),
			 (long long)json_integer_value(json_object_get(user, "gid")));
		json_object_set_new(out, "user", json_string(u));
	}
	json_t *args = json_object_get(proc, "args");
	if (json_array_size(args) > 0)
		json_object_set(out, "cmd", args);
	json_decref(cfg);
	return out;
}

int template_import(struct daemon *d, const struct template_spec *t, struct err *e)
{
	char parent[600], layout[700], dest[760], logpath[800], digest[65], name[80];
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return err_set(e, ERR_INTERNAL, EIO, "no randomness for a folder name");
	snprintf(parent, sizeof(parent), "%s/templates", d->cfg.cache_dir);
	snprintf(layout, sizeof(layout), "%s/pull-%02x%02x%02x%02x%02x%02x%02x%02x", parent, r[0], r[1], r[2], r[3],
		 r[4], r[5], r[6], r[7]);
	snprintf(dest, sizeof(dest), "oci:%s:img", layout);
	snprintf(logpath, sizeof(logpath), "%s.log", layout);
	log_info("importing template %s from %s", t->name, t->source);
	/* the operator names the image (spaced --template): its signature policy is not asked */
	char *copy[8] = { "skopeo", "--insecure-policy", "copy", "--quiet" };
	int argc = 4;
	if (template_loopback_registry(t->source))
		copy[argc++] = "--src-tls-verify=false";
	copy[argc++] = (char *)t->source;
	copy[argc++] = dest;
	copy[argc] = NULL;
	char *rm[] = { "rm", "-rf", layout, NULL };
	int rc = mkdir(parent, 0755) < 0 && errno != EEXIST
			 ? err_set(e, ERR_INTERNAL, errno, "cannot create %s: %s", parent, strerror(errno))
			 : 0;
	json_t *layers = NULL;
	/* an archive here is unpacked, not copied: skopeo would untar it and copy its blobs too */
	bool archive = strncmp(t->source, "oci-archive:", 12) == 0 && access(d->cfg.build_path, X_OK) == 0;
	if (rc == 0)
		rc = archive ? unpack_archive(d, t->source + 12, layout, logpath, e) : run_logged(copy, logpath, e);
	if (archive && t->consume) /* an upload of spaced's own: read, and not to be made durable */
		unlink(t->source + 12);
	if (rc == 0 && (rc = manifest_digest(layout, digest, e)) == 0) {
		layers = manifest_layers(layout, digest);
		snprintf(name, sizeof(name), "oci-%s", digest);
		/* marked before it is looked for: a release sees it (template_release) */
		if ((rc = template_use(d, name)) < 0)
			rc = err_set(e, ERR_INTERNAL, -rc, "cannot mark the template's files as used: %s", strerror(-rc));
		else
			rc = cache_get(parent, name, unpack, layout, e);
	}
	spawn_run(rm, -1, -1);
	if (rc < 0) {
		json_decref(layers);
		return rc;
	}
	unlink(logpath);
	char bundle[700], rootfs[720];
	snprintf(bundle, sizeof(bundle), "%s/%s", parent, name);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", bundle);
	json_t *cfg = defaults(bundle);
	char *text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(cfg);
	rc = text ? store_put_template(d->store, t->name, name, rootfs, t->recorded[0] ? t->recorded : t->source, text)
		  : -ENOMEM;
	free(text);
	if (rc < 0) {
		json_decref(layers);
		return err_set(e, ERR_INTERNAL, -rc, "cannot record the template");
	}
	template_put_info(d, t->name, rootfs, layers);
	log_info("template %s ready (image sha256:%.12s)", t->name, digest);
	return 0;
}

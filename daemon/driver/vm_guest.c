/*
 * daemon/driver/vm_guest.c - the guest kernel in the cache and the initramfs
 * built for it (see vm_guest.h).
 *
 * The kernel: apt-cache names the package the meta package depends on and its
 * exact version; apt-get download fetches the .deb into the entry being built
 * (in a folder owned by apt's own download user, as apt does for its archive
 * cache); dpkg-deb -x unpacks it beside; the .deb is removed and the entry is
 * published (lib/host/cache.c). Names and versions from apt are checked
 * against Debian's character sets before they become paths or arguments.
 *
 * The initramfs: the module tree is indexed by module name, each wanted
 * module's .modinfo gives what it depends on (kmod_order), and the archive is
 * written with daemon/driver/cpio.c (libarchive's newc writer), uncompressed:
 * under TCG the kernel would spend longer decompressing it than it saves
 * reading it.
 */
#include "daemon/driver/vm_guest.h"
#include "daemon/driver/vm_image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "daemon/base/clock.h"
#include "lib/host/hash.h"
#include "lib/host/spawn.h"
#include "daemon/driver/cpio.h"
#include "lib/host/cache.h"

#define VM_GUEST_RECIPE 2                  /* bump when the initramfs is made differently */
#define VM_APT_SHOW_MAX (64u * 1024u)      /* bytes of apt-cache show read */
#define VM_AGENT_MAX (64u * 1024u * 1024u) /* a larger agent binary is refused */
#define VM_MODULE_MAX (64u * 1024u * 1024u)
#define VM_KERNEL_MODULES_MAX 16384u       /* module files indexed in one kernel */
#define VM_APT_USER "_apt"

/* Debian package names: [a-z0-9][a-z0-9+.-]+; versions: [A-Za-z0-9.+~:-]. */
static bool valid_chars(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr(extra, *s)))
			return false;
	return true;
}

/*
 * From apt-cache show's record of the meta package, the first dependency's
 * name and exact version: "Depends: linux-image-6.1.0-57-cloud-amd64 (= 6.1.192-3)".
 */
static int parse_depends(const char *show, struct vm_kernel *k)
{
	const char *line = strstr(show, "\nDepends: ");
	if (!line && strncmp(show, "Depends: ", 9) == 0)
		line = show - 1;
	if (!line)
		return -ENOENT;
	line += strlen("\nDepends: ");
	char pkg[sizeof(k->package)], ver[sizeof(k->version)];
	if (sscanf(line, "%127[^ ,|\n] (= %63[^)\n])", pkg, ver) != 2)
		return -EINVAL;
	const char *prefix = "linux-image-";
	if (!valid_chars(pkg, "+.-") || !valid_chars(ver, "ABCDEFGHIJKLMNOPQRSTUVWXYZ.+~:-") ||
	    strncmp(pkg, prefix, strlen(prefix)) != 0 || !pkg[strlen(prefix)])
		return -EINVAL;
	snprintf(k->package, sizeof(k->package), "%s", pkg);
	snprintf(k->version, sizeof(k->version), "%s", ver);
	snprintf(k->release, sizeof(k->release), "%s", pkg + strlen(prefix));
	return 0;
}

static int resolve(struct vm_kernel *k, struct err *e)
{
	char *show = malloc(VM_APT_SHOW_MAX);
	if (!show)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	char *argv[] = { "apt-cache", "show", "--no-all-versions", VM_KERNEL_META, NULL };
	int rc = spawn_capture(argv, show, VM_APT_SHOW_MAX);
	if (rc != 0)
		rc = err_set(e, ERR_NO_KERNEL, rc < 0 ? -rc : ENOENT,
			     "apt-cache show %s failed (%d): is it in the host's apt sources?", VM_KERNEL_META, rc);
	else if ((rc = parse_depends(show, k)) < 0)
		rc = err_set(e, ERR_NO_KERNEL, -rc, "apt-cache show %s names no kernel package of an exact version",
			     VM_KERNEL_META);
	free(show);
	return rc;
}

static void kernel_paths(const char *dir, struct vm_kernel *k)
{
	snprintf(k->vmlinuz, sizeof(k->vmlinuz), "%s/root/boot/vmlinuz-%s", dir, k->release);
	snprintf(k->modules, sizeof(k->modules), "%s/root/lib/modules/%s", dir, k->release);
}

/* Opens path for apt's output (appended: one log per kernel entry). */
static int open_log(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* The one .deb apt-get download left in dir, into out. */
static int find_deb(const char *dir, char *out, size_t n)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int rc = -ENOENT;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 4 && strcmp(de->d_name + l - 4, ".deb") == 0) {
			rc = snprintf(out, n, "%s/%s", dir, de->d_name) < (int)n ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	closedir(d);
	return rc;
}

struct kernel_build {
	struct vm_kernel *k;
	char log[700];
};

static int kernel_build(const char *tmp, void *ctx, struct err *e)
{
	struct kernel_build *b = ctx;
	struct vm_kernel *k = b->k;
	char debdir[PATH_MAX], deb[PATH_MAX], root[PATH_MAX];
	snprintf(debdir, sizeof(debdir), "%s/deb", tmp);
	snprintf(root, sizeof(root), "%s/root", tmp);
	if (mkdir(tmp, 0755) < 0 || mkdir(debdir, 0755) < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot create %s: %s", debdir, strerror(errno));
	/* apt downloads as its own user where it can write; as root (with a warning) otherwise */
	struct passwd *apt = getpwnam(VM_APT_USER);
	if (apt && chown(debdir, apt->pw_uid, 0) < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot chown %s: %s", debdir, strerror(errno));

	char spec[sizeof(k->package) + sizeof(k->version) + 2];
	snprintf(spec, sizeof(spec), "%s=%s", k->package, k->version);
	char *download[] = { "apt-get", "download", "-q", spec, NULL };
	int log = open_log(b->log);
	int64_t t0 = mono_ms();
	int rc = spawn_run_in(debdir, download, log, log);
	int64_t t1 = mono_ms();
	if (rc != 0) {
		if (log >= 0)
			close(log);
		return err_set(e, ERR_NO_KERNEL, rc < 0 ? -rc : EIO, "apt-get download %s failed (status %d); see %s",
			       spec, rc, b->log);
	}
	if ((rc = find_deb(debdir, deb, sizeof(deb))) < 0) {
		if (log >= 0)
			close(log);
		return err_set(e, ERR_NO_KERNEL, -rc, "apt-get download %s left no .deb in %s", spec, debdir);
	}
	char *unpack[] = { "dpkg-deb", "-x", deb, root, NULL };
	rc = spawn_run(unpack, log, log);
	int64_t t2 = mono_ms();
	if (log >= 0)
		close(log);
	if (rc != 0)
		return err_set(e, ERR_INTERNAL, rc < 0 ? -rc : EIO, "dpkg-deb -x %s failed (status %d); see %s", deb,
			       rc, b->log);
	char *rm[] = { "rm", "-rf", debdir, NULL };
	spawn_run(rm, -1, -1);

	kernel_paths(tmp, k);
	struct stat st;
	if (stat(k->vmlinuz, &st) < 0 || stat(k->modules, &st) < 0)
		return err_set(e, ERR_NO_KERNEL, ENOENT, "%s has no %s or no %s", deb, k->vmlinuz, k->modules);
	k->fetch_ms = (uint64_t)(t1 - t0);
	k->unpack_ms = (uint64_t)(t2 - t1);
	return 0;
}

int vm_guest_kernel(const char *cache_dir, bool fetch, struct vm_kernel *k, struct err *e)
{
	memset(k, 0, sizeof(*k));
	int rc = resolve(k, e);
	if (rc < 0)
		return rc;
	char parent[PATH_MAX], name[sizeof(k->release) + sizeof(k->version) + 2];
	snprintf(parent, sizeof(parent), "%s/kernels", cache_dir);
	snprintf(name, sizeof(name), "%s_%s", k->release, k->version);
	if (snprintf(k->dir, sizeof(k->dir), "%s/%s", parent, name) >= (int)sizeof(k->dir))
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "cache path too long: %s", parent);
	if (!fetch && !cache_has(parent, name))
		return err_set(e, ERR_NO_KERNEL, ENOENT, "the guest kernel %s %s is not in %s", k->package,
			       k->version, parent);
	struct kernel_build b = { .k = k };
	snprintf(b.log, sizeof(b.log), "%s.log", k->dir);
	rc = cache_get(parent, name, kernel_build, &b, e);
	if (rc < 0)
		return rc;
	k->fetched = rc == 1;
	kernel_paths(k->dir, k);
	return 0;
}

/* The whole of a file of at most max bytes, malloc'd, into *buf and *len. */
static int read_all(const char *path, size_t max, unsigned char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = 0;
	unsigned char *b = NULL;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		rc = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		goto out;
	}
	size_t size = (size_t)st.st_size, got = 0;
	if (!(b = malloc(size ? size : 1))) {
		rc = -ENOMEM;
		goto out;
	}
	while (got < size) {
		ssize_t r = read(fd, b + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)r;
	}
	*buf = b;
	*len = size;
	b = NULL;
out:
	free(b);
	close(fd);
	return rc;
}

/* The modules of one kernel by name: its module files, and the ones built in. */
struct modfile {
	char name[KMOD_NAME_MAX];
	bool compressed;
	char *path;
};

struct modindex {
	struct modfile *files;
	unsigned nfiles, cap;
	char *builtin; /* modules.builtin: one path a line */
	int err;       /* first error of the walk */
};

static void index_add(struct modindex *ix, const char *path)
{
	struct modfile m = { .path = NULL };
	if (kmod_name_of(path, m.name, &m.compressed) < 0)
		return;
	if (ix->nfiles == VM_KERNEL_MODULES_MAX) {
		ix->err = -E2BIG;
		return;
	}
	if (ix->nfiles == ix->cap) {
		unsigned cap = ix->cap ? 2 * ix->cap : 1024;
		struct modfile *f = realloc(ix->files, cap * sizeof(*f));
		if (!f) {
			ix->err = -ENOMEM;
			return;
		}
		ix->files = f;
		ix->cap = cap;
	}
	if (!(m.path = strdup(path))) {
		ix->err = -ENOMEM;
		return;
	}
	ix->files[ix->nfiles++] = m;
}

/* Indexes every module file below dir (the kernel/ tree is six levels deep). */
static void index_dir(struct modindex *ix, const char *dir, int depth)
{
	if (depth > 16 || ix->err)
		return;
	DIR *d = opendir(dir);
	if (!d) {
		ix->err = -errno;
		return;
	}
	struct dirent *de;
	while (!ix->err && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (de->d_type == DT_DIR)
			index_dir(ix, path, depth + 1);
		else if (de->d_type == DT_REG)
			index_add(ix, path);
	}
	closedir(d);
}

static void index_free(struct modindex *ix)
{
	for (unsigned i = 0; i < ix->nfiles; i++)
		free(ix->files[i].path);
	free(ix->files);
	free(ix->builtin);
}

static const struct modfile *index_find(const struct modindex *ix, const char *name)
{
	for (unsigned i = 0; i < ix->nfiles; i++)
		if (strcmp(ix->files[i].name, name) == 0)
			return &ix->files[i];
	return NULL;
}

static bool index_builtin(const struct modindex *ix, const char *name)
{
	if (!ix->builtin)
		return false;
	char copy[PATH_MAX];
	for (const char *p = ix->builtin; *p;) {
		const char *end = strchrnul(p, '\n');
		size_t l = (size_t)(end - p);
		char got[KMOD_NAME_MAX];
		bool z;
		if (l < sizeof(copy)) {
			memcpy(copy, p, l);
			copy[l] = '\0';
			if (kmod_name_of(copy, got, &z) == 0 && strcmp(got, name) == 0)
				return true;
		}
		p = *end ? end + 1 : end;
	}
	return false;
}

static int module_lookup(void *ctx, const char *name, char *depends, size_t n)
{
	const struct modindex *ix = ctx;
	const struct modfile *m = index_find(ix, name);
	if (!m)
		return index_builtin(ix, name) ? 1 : -ENOENT;
	if (m->compressed)
		return -EPROTONOSUPPORT; /* Debian 12's kernels do not compress their modules */
	unsigned char *img;
	size_t len;
	int rc = read_all(m->path, VM_MODULE_MAX, &img, &len);
	if (rc < 0)
		return rc;
	rc = kmod_modinfo(img, len, "depends", depends, n);
	free(img);
	if (rc == -ENOENT) {
		depends[0] = '\0'; /* no depends= at all: depends on nothing */
		rc = 0;
	}
	return rc;
}

static int load_index(const struct vm_kernel *k, struct modindex *ix, struct err *e)
{
	char path[PATH_MAX];
	memset(ix, 0, sizeof(*ix));
	snprintf(path, sizeof(path), "%s/kernel", k->modules);
	index_dir(ix, path, 0);
	if (ix->err < 0)
		return err_set(e, ERR_INTERNAL, -ix->err, "cannot index the modules in %s: %s", path,
			       strerror(-ix->err));
	snprintf(path, sizeof(path), "%s/modules.builtin", k->modules);
	unsigned char *b;
	size_t len;
	if (read_all(path, VM_MODULE_MAX, &b, &len) == 0) {
		ix->builtin = realloc(b, len + 1);
		if (!ix->builtin) {
			free(b);
			return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
		}
		ix->builtin[len] = '\0';
	}
	return 0;
}

struct initramfs_build {
	const struct vm_kernel *k;
	const struct modindex *ix;
	const struct kmod_order *order;
	const unsigned char *agent;
	size_t agent_len;
};

/* The archive's entries; errors stick in w and are read at cpio_finish. */
static void initramfs_write(struct cpio *w, const struct initramfs_build *b)
{
	char name[PATH_MAX], order[KMOD_MAX * KMOD_NAME_MAX + 1] = "";
	size_t used = 0;
	cpio_dir(w, "dev", 0755);
	cpio_chardev(w, "dev/console", 0600, 5, 1);
	cpio_dir(w, "proc", 0555);
	cpio_dir(w, "sys", 0555);
	cpio_dir(w, ".space", 0755);
	cpio_dir(w, SP_VM_MODULE_DIR + 1, 0755);
	for (unsigned i = 0; i < b->order->n; i++) {
		const char *mod = b->order->names[i];
		snprintf(name, sizeof(name), "%s/%s.ko", SP_VM_MODULE_DIR + 1, mod);
		cpio_file_from(w, name, 0644, index_find(b->ix, mod)->path);
		used += (size_t)snprintf(order + used, sizeof(order) - used, "%s\n", mod);
	}
	cpio_file(w, SP_VM_MODULE_ORDER + 1, 0644, order, used);
	cpio_file(w, "init", 0755, b->agent, b->agent_len);
}

static int initramfs_build(const char *tmp, void *ctx, struct err *e)
{
	const struct initramfs_build *b = ctx;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot create %s: %s", tmp, strerror(errno));
	struct cpio w;
	cpio_init(&w, fd);
	initramfs_write(&w, b);
	int rc = cpio_finish(&w);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot write %s: %s", tmp, strerror(-rc));
	return 0;
}

static int order_error(struct err *e, int rc, const char *bad, const struct vm_kernel *k)
{
	switch (rc) {
	case -ENOENT:
		return err_set(e, ERR_NO_KERNEL, ENOENT, "kernel %s has no module %s", k->release, bad);
	case -EPROTONOSUPPORT:
		return err_set(e, ERR_NO_KERNEL, EPROTONOSUPPORT, "module %s of %s is compressed; not supported",
			       bad, k->release);
	case -ELOOP:
		return err_set(e, ERR_NO_KERNEL, ELOOP, "module %s of %s depends on itself", bad, k->release);
	default:
		return err_set(e, ERR_INTERNAL, -rc, "cannot order the modules of %s at %s: %s", k->release, bad,
			       strerror(-rc));
	}
}

/* The cache key: every input of the archive, hashed. */
static int initramfs_key(const struct initramfs_build *b, char key[65])
{
	char recipe[KMOD_MAX * KMOD_NAME_MAX + 1024];
	size_t used = (size_t)snprintf(recipe, sizeof(recipe), "recipe=%d kernel=%s %s modules=", VM_GUEST_RECIPE,
				       b->k->package, b->k->version);
	for (unsigned i = 0; i < b->order->n && used < sizeof(recipe); i++)
		used += (size_t)snprintf(recipe + used, sizeof(recipe) - used, "%s,", b->order->names[i]);
	if (used >= sizeof(recipe))
		return -ENAMETOOLONG;
	unsigned char *all = malloc(used + b->agent_len);
	if (!all)
		return -ENOMEM;
	memcpy(all, recipe, used);
	memcpy(all + used, b->agent, b->agent_len);
	int rc = hash_sha256_hex(all, used + b->agent_len, key);
	free(all);
	return rc;
}

int vm_guest_initramfs(const char *cache_dir, const struct vm_kernel *k, const char *agent,
		       struct vm_initramfs *out, struct err *e)
{
	memset(out, 0, sizeof(*out));
	struct modindex ix;
	unsigned char *bin = NULL;
	size_t bin_len = 0;
	int rc = load_index(k, &ix, e);
	if (rc < 0)
		goto out;
	static const char *const want[] = { VM_GUEST_MODULES };
	char bad[KMOD_NAME_MAX] = "";
	if ((rc = kmod_order(want, sizeof(want) / sizeof(want[0]), module_lookup, &ix, &out->order, bad,
			     sizeof(bad))) < 0) {
		rc = order_error(e, rc, bad, k);
		goto out;
	}
	if ((rc = read_all(agent, VM_AGENT_MAX, &bin, &bin_len)) < 0) {
		rc = err_set(e, ERR_INTERNAL, -rc, "cannot read the agent %s: %s", agent, strerror(-rc));
		goto out;
	}
	struct initramfs_build b = { .k = k, .ix = &ix, .order = &out->order, .agent = bin, .agent_len = bin_len };
	char key[65], parent[PATH_MAX], name[80];
	if ((rc = initramfs_key(&b, key)) < 0) {
		rc = err_set(e, ERR_INTERNAL, -rc, "cannot compute the initramfs key");
		goto out;
	}
	snprintf(parent, sizeof(parent), "%s/initramfs", cache_dir);
	snprintf(name, sizeof(name), "%s.img", key);
	int64_t t0 = mono_ms();
	if ((rc = cache_get(parent, name, initramfs_build, &b, e)) < 0)
		goto out;
	out->built = rc == 1;
	out->build_ms = out->built ? (uint64_t)(mono_ms() - t0) : 0;
	snprintf(out->path, sizeof(out->path), "%s/%s", parent, name);
	struct stat st;
	out->bytes = stat(out->path, &st) == 0 ? (uint64_t)st.st_size : 0;
	rc = 0;
out:
	free(bin);
	index_free(&ix);
	return rc;
}

static int image_build(const char *tmp, void *ctx, struct err *e)
{
	const char *rootfs = ctx;
	char *argv[] = { "mkfs.erofs", "-d0", (char *)tmp, (char *)rootfs, NULL };
	int rc = spawn_run(argv, -1, -1);
	if (rc != 0)
		return err_set(e, ERR_INTERNAL, rc < 0 ? -rc : EIO,
			       "mkfs.erofs of %s failed (status %d): is erofs-utils installed?", rootfs, rc);
	return 0;
}

int vm_guest_template_image(const char *cache_dir, const char *rootfs, char *out, size_t n, bool *built,
			    uint64_t *build_ms, struct err *e)
{
	char real[PATH_MAX], parent[PATH_MAX], name[80];
	if (!realpath(rootfs, real))
		return err_set(e, ERR_INTERNAL, errno, "template %s: %s", rootfs, strerror(errno));
	int rc = vm_image_name(real, name, sizeof(name));
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot compute the image key");
	snprintf(parent, sizeof(parent), "%s/%s", cache_dir, VM_IMAGE_DIR);
	int64_t t0 = mono_ms();
	if ((rc = cache_get(parent, name, image_build, real, e)) < 0)
		return rc;
	*built = rc == 1;
	*build_ms = *built ? (uint64_t)(mono_ms() - t0) : 0;
	if (snprintf(out, n, "%s/%s", parent, name) >= (int)n)
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "cache path too long: %s", parent);
	return 0;
}

/* Whether /proc/cpuinfo's flags say the TSC ticks at one rate whatever the CPU does. */
static bool tsc_invariant(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return false;
	char line[4096];
	bool constant = false, nonstop = false;
	while (fgets(line, sizeof(line), f) && strncmp(line, "flags", 5) != 0)
		;
	if (strncmp(line, "flags", 5) == 0) {
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
	}
	fclose(f);
	return constant && nonstop;
}

static uint64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

unsigned vm_guest_tsc_khz(void)
{
	if (!tsc_invariant())
		return 0;
	uint64_t n0 = raw_ns(), t0 = __rdtsc();
	struct timespec span = { .tv_nsec = VM_TSC_MEASURE_MS * 1000000L };
	while (nanosleep(&span, &span) < 0 && errno == EINTR)
		;
	uint64_t n1 = raw_ns(), t1 = __rdtsc();
	if (n1 <= n0 || t1 <= t0)
		return 0;
	return (unsigned)((t1 - t0) * 1000000u / (n1 - n0));
}

/* The measured frequency, written as the cache entry at tmp. */
static int tsc_build(const char *tmp, void *ctx, struct err *e)
{
	(void)ctx;
	char text[32];
	int len = snprintf(text, sizeof(text), "%u\n", vm_guest_tsc_khz());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	int rc = fd >= 0 && write(fd, text, (size_t)len) == len && fsync(fd) == 0 ? 0 : -EIO;
	if (fd >= 0)
		close(fd);
	return rc < 0 ? err_set(e, ERR_INTERNAL, EIO, "writing %s", tmp) : 0;
}

unsigned vm_guest_tsc_khz_cached(const char *cache_dir)
{
	char boot_id[64] = "", parent[PATH_MAX], path[PATH_MAX + 64], text[32] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, boot_id, sizeof(boot_id) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return vm_guest_tsc_khz();
	boot_id[n] = '\0';
	boot_id[strcspn(boot_id, "\n")] = '\0';
	snprintf(parent, sizeof(parent), "%s/tsc", cache_dir);
	struct err e = { 0 };
	if (cache_get(parent, boot_id, tsc_build, NULL, &e) < 0)
		return vm_guest_tsc_khz();
	snprintf(path, sizeof(path), "%s/%s", parent, boot_id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	return n > 0 ? (unsigned)strtoul(text, NULL, 10) : vm_guest_tsc_khz();
}

static int stub_build(const char *tmp, void *ctx, struct err *e)
{
	const char *vmlinuz = ctx;
	uint8_t *buf = malloc(64u * 1024 + VM_STUB_PAYLOAD);
	int in = open(vmlinuz, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	ssize_t got = buf && in >= 0 ? pread(in, buf, 64u * 1024 + VM_STUB_PAYLOAD, 0) : -1;
	if (got < 0x220) {
		rc = err_set(e, ERR_INTERNAL, got < 0 ? errno : ENOEXEC, "reading %s: %s", vmlinuz,
			     got < 0 ? strerror(errno) : "too short for a kernel");
	} else if (memcmp(buf + 0x202, "HdrS", 4) != 0) {
		rc = err_set(e, ERR_INTERNAL, ENOEXEC, "%s is not a bzImage (no HdrS header)", vmlinuz);
	} else {
		/* setup_sects at 0x1f1, 0 meaning 4 (the boot protocol), then the boot sector */
		size_t setup = ((size_t)(buf[0x1f1] ? buf[0x1f1] : 4) + 1) * 512, len = setup + VM_STUB_PAYLOAD;
		if ((size_t)got < len)
			rc = err_set(e, ERR_INTERNAL, ENOEXEC, "%s ends inside its setup", vmlinuz);
		else if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444)) < 0 ||
			 write(out, buf, len) != (ssize_t)len || fsync(out) < 0)
			rc = err_set(e, ERR_INTERNAL, errno, "writing %s: %s", tmp, strerror(errno));
	}
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	free(buf);
	return rc;
}

int vm_guest_kernel_stub(const char *cache_dir, const char *vmlinuz, char *out, size_t n, struct err *e)
{
	struct stat st;
	if (stat(vmlinuz, &st) < 0)
		return err_set(e, ERR_INTERNAL, errno, "%s: %s", vmlinuz, strerror(errno));
	char id[PATH_MAX + 64], key[65], parent[PATH_MAX];
	int len = snprintf(id, sizeof(id), "%s\n%lld\n%lld.%09ld", vmlinuz, (long long)st.st_size,
			   (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (len < 0 || (size_t)len >= sizeof(id) || hash_sha256_hex(id, (size_t)len, key) < 0)
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "no key for %s", vmlinuz);
	key[32] = '\0';
	snprintf(parent, sizeof(parent), "%s/kernel-stubs", cache_dir);
	int rc = cache_get(parent, key, stub_build, (void *)vmlinuz, e);
	if (rc < 0)
		return rc;
	return snprintf(out, n, "%s/%s", parent, key) < (int)n ? 0 : err_set(e, ERR_INTERNAL, ENAMETOOLONG, "path");
}

int vm_guest_cmdline(const char *cache_dir, bool tcg, char *out, size_t n)
{
	char tsc[40] = "";
	unsigned khz = vm_guest_tsc_khz_cached(cache_dir);
	if (khz)
		snprintf(tsc, sizeof(tsc), " tsc_early_khz=%u", khz);
	int len = snprintf(out, n, "console=ttyS0 quiet panic=-1 reboot=t init_on_alloc=0 init_on_free=1%s%s -- %s",
			   tcg ? " norandmaps" : "", tsc, SP_VM_INIT_ARG);
	return len >= 0 && (size_t)len < n ? 0 : -ENOSPC;
}

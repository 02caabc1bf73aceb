/*
 * daemon/driver/kmod.c - module names, .modinfo and load order (see kmod.h).
 *
 * The ELF reader checks every offset and size against the image before it
 * reads: a module file comes from a package download, and a truncated or
 * damaged one must be an error, not a read past the end.
 */
#include "daemon/driver/kmod.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Whether [off, off + size) lies inside [0, len). */
static bool inside(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* The .modinfo section of the image into *sec, *secsz. Returns 0 or -ENOEXEC. */
static int modinfo_section(const unsigned char *img, size_t len, const char **sec, size_t *secsz)
{
	Elf64_Ehdr eh;
	if (len < sizeof(eh))
		return -ENOEXEC;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_REL || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_shstrndx >= eh.e_shnum || !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), len))
		return -ENOEXEC;
	Elf64_Shdr strs;
	memcpy(&strs, img + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof(strs));
	if (strs.sh_type == SHT_NOBITS || !inside(strs.sh_offset, strs.sh_size, len))
		return -ENOEXEC;
	const char *names = (const char *)img + strs.sh_offset;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, img + eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr), sizeof(sh));
		static const char want[] = ".modinfo";
		if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < sizeof(want) ||
		    memcmp(names + sh.sh_name, want, sizeof(want)) != 0)
			continue;
		if (sh.sh_type == SHT_NOBITS || !inside(sh.sh_offset, sh.sh_size, len))
			return -ENOEXEC;
		*sec = (const char *)img + sh.sh_offset;
		*secsz = sh.sh_size;
		return 0;
	}
	return -ENOEXEC;
}

int kmod_modinfo(const void *image, size_t len, const char *key, char *out, size_t n)
{
	const char *sec;
	size_t secsz;
	int rc = modinfo_section(image, len, &sec, &secsz);
	if (rc < 0)
		return rc;
	size_t klen = strlen(key);
	/* NUL-separated "key=value" strings, with NUL padding between some of them */
	for (size_t off = 0; off < secsz;) {
		const char *s = sec + off;
		const char *end = memchr(s, '\0', secsz - off);
		size_t slen = end ? (size_t)(end - s) : secsz - off;
		if (slen > klen && memcmp(s, key, klen) == 0 && s[klen] == '=') {
			size_t vlen = slen - klen - 1;
			if (vlen + 1 > n)
				return -ENOSPC;
			memcpy(out, s + klen + 1, vlen);
			out[vlen] = '\0';
			return 0;
		}
		off += slen + 1;
	}
	return -ENOENT;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t l = strlen(suffix);
	return len >= l && memcmp(s + len - l, suffix, l) == 0;
}

int kmod_name_of(const char *path, char out[KMOD_NAME_MAX], bool *compressed)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t len = strlen(base);
	static const char *const packed[] = { ".ko.xz", ".ko.zst", ".ko.gz" };
	*compressed = false;
	if (ends_with(base, len, ".ko")) {
		len -= 3;
	} else {
		size_t i = 0;
		for (; i < sizeof(packed) / sizeof(packed[0]) && !ends_with(base, len, packed[i]); i++)
			;
		if (i == sizeof(packed) / sizeof(packed[0]))
			return -EINVAL;
		len -= strlen(packed[i]);
		*compressed = true;
	}
	if (len == 0 || len >= KMOD_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		out[i] = base[i] == '-' ? '_' : base[i];
	out[len] = '\0';
	return 0;
}

/* The walk's record of every module it has met, loaded or built in. */
struct walk {
	kmod_lookup_fn *lookup;
	void *ctx;
	struct kmod_order *out;
	unsigned nseen;
	struct {
		char name[KMOD_NAME_MAX];
		bool done; /* false while its dependencies are being visited */
	} seen[KMOD_MAX];
	char *bad;
	size_t nbad;
};

static int blame(struct walk *w, const char *name, int err)
{
	if (w->bad && w->nbad)
		snprintf(w->bad, w->nbad, "%s", name);
	return err;
}

/* Visits name and, first, everything it depends on; the recursion is bounded by KMOD_MAX,
 * since every level adds a module to w->seen. */
static int visit(struct walk *w, const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len >= KMOD_NAME_MAX || strchr(name, '/'))
		return blame(w, name, -EINVAL);
	for (unsigned i = 0; i < w->nseen; i++)
		if (strcmp(w->seen[i].name, name) == 0)
			return w->seen[i].done ? 0 : blame(w, name, -ELOOP);
	if (w->nseen == KMOD_MAX)
		return blame(w, name, -E2BIG);
	unsigned me = w->nseen++;
	memcpy(w->seen[me].name, name, len + 1);
	w->seen[me].done = false;

	char deps[KMOD_DEPENDS_MAX];
	int rc = w->lookup(w->ctx, name, deps, sizeof(deps));
	if (rc < 0)
		return blame(w, name, rc);
	if (rc == 0) {
		for (char *save = NULL, *d = strtok_r(deps, ",", &save); d; d = strtok_r(NULL, ",", &save))
			if ((rc = visit(w, d)) < 0)
				return rc;
		memcpy(w->out->names[w->out->n++], name, len + 1);
	}
	w->seen[me].done = true;
	return 0;
}

int kmod_order(const char *const *want, unsigned nwant, kmod_lookup_fn *lookup, void *ctx,
	       struct kmod_order *out, char *bad, size_t nbad)
{
	struct walk w;
	memset(&w, 0, sizeof(w));
	w.lookup = lookup;
	w.ctx = ctx;
	w.out = out;
	w.bad = bad;
	w.nbad = nbad;
	out->n = 0;
	for (unsigned i = 0; i < nwant; i++) {
		int rc = visit(&w, want[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

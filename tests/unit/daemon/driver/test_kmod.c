/*
 * tests/unit/daemon/driver/test_kmod.c - kernel modules (daemon/driver/kmod.c):
 * .modinfo read from a module image made here byte by byte, damaged images
 * refused rather than read past their end, module names from file names, and
 * the load order over a table that stands for a kernel (the virtio family as
 * Debian's 6.1 cloud kernel has it, built-in modules, missing ones, circles).
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/driver/kmod.h"

/* A relocatable ELF64 object with sections: null, .shstrtab, .text, .modinfo. */
static size_t make_module(unsigned char *img, size_t cap, const char *modinfo, size_t mlen)
{
	static const char shstr[] = "\0.shstrtab\0.text\0.modinfo";
	size_t off_str = sizeof(Elf64_Ehdr), off_mi = off_str + sizeof(shstr);
	size_t off_sh = (off_mi + mlen + 7) & ~(size_t)7;
	size_t total = off_sh + 4 * sizeof(Elf64_Shdr);
	assert_true(total <= cap);
	memset(img, 0, total);
	Elf64_Ehdr eh = { .e_type = ET_REL, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_shoff = off_sh, .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 4, .e_shstrndx = 1 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + off_str, shstr, sizeof(shstr));
	memcpy(img + off_mi, modinfo, mlen);
	Elf64_Shdr sh[4] = {
		{ 0 },
		{ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = off_str, .sh_size = sizeof(shstr) },
		{ .sh_name = 11, .sh_type = SHT_NOBITS, .sh_offset = 0, .sh_size = 1u << 20 },
		{ .sh_name = 17, .sh_type = SHT_PROGBITS, .sh_offset = off_mi, .sh_size = mlen },
	};
	memcpy(img + off_sh, sh, sizeof(sh));
	return total;
}

/* As Debian's virtio_mmio.ko has it, with the NUL padding modpost leaves between entries. */
static const char MODINFO[] = "alias=of:N*T*Cvirtio,mmio\0license=GPL\0\0\0"
			      "depends=virtio,virtio_ring\0retpoline=Y\0intree=Y\0name=virtio_mmio\0"
			      "vermagic=6.1.0-57-cloud-amd64 SMP preempt mod_unload modversions ";

static void modinfo_fields(void **state)
{
	unsigned char img[4096];
	size_t n = make_module(img, sizeof(img), MODINFO, sizeof(MODINFO));
	char v[128];
	assert_int_equal(kmod_modinfo(img, n, "depends", v, sizeof(v)), 0);
	assert_string_equal(v, "virtio,virtio_ring");
	assert_int_equal(kmod_modinfo(img, n, "name", v, sizeof(v)), 0);
	assert_string_equal(v, "virtio_mmio");
	/* the last string of the section has no NUL of its own */
	assert_int_equal(kmod_modinfo(img, n, "vermagic", v, sizeof(v)), 0);
	assert_string_equal(v, "6.1.0-57-cloud-amd64 SMP preempt mod_unload modversions ");
	assert_int_equal(kmod_modinfo(img, n, "softdep", v, sizeof(v)), -ENOENT);
	assert_int_equal(kmod_modinfo(img, n, "dep", v, sizeof(v)), -ENOENT); /* a prefix is no key */
	assert_int_equal(kmod_modinfo(img, n, "name", v, 11), -ENOSPC);
	assert_int_equal(kmod_modinfo(img, n, "name", v, 12), 0);

	/* an empty value: a module that depends on nothing */
	static const char none[] = "depends=\0name=virtio_ring";
	n = make_module(img, sizeof(img), none, sizeof(none));
	assert_int_equal(kmod_modinfo(img, n, "depends", v, sizeof(v)), 0);
	assert_string_equal(v, "");
}

static void damaged_images(void **state)
{
	unsigned char img[4096];
	size_t n = make_module(img, sizeof(img), MODINFO, sizeof(MODINFO));
	char v[128];
	/* the section headers come last: every truncation is refused, never read past */
	for (size_t cut = 0; cut < n; cut++) {
		unsigned char *copy = malloc(cut ? cut : 1);
		memcpy(copy, img, cut);
		int rc = kmod_modinfo(copy, cut, "depends", v, sizeof(v));
		assert_int_equal(rc, -ENOEXEC);
		free(copy);
	}
	Elf64_Ehdr eh;
	unsigned char bad[4096];
#define DAMAGE(stmt)                                                              \
	do {                                                                      \
		memcpy(bad, img, n);                                              \
		memcpy(&eh, bad, sizeof(eh));                                     \
		stmt;                                                             \
		memcpy(bad, &eh, sizeof(eh));                                     \
		assert_int_equal(kmod_modinfo(bad, n, "depends", v, sizeof(v)), -ENOEXEC); \
	} while (0)
	DAMAGE(eh.e_ident[0] = 0);
	DAMAGE(eh.e_ident[EI_CLASS] = ELFCLASS32);
	DAMAGE(eh.e_ident[EI_DATA] = ELFDATA2MSB);
	DAMAGE(eh.e_type = ET_EXEC);
	DAMAGE(eh.e_shstrndx = 4);
	DAMAGE(eh.e_shoff = (Elf64_Off)-8);
	DAMAGE(eh.e_shnum = 0xffff);
	DAMAGE(eh.e_shentsize = 32);
	/* the .modinfo header pointing outside the image */
	memcpy(bad, img, n);
	memcpy(&eh, bad, sizeof(eh));
	Elf64_Shdr sh;
	size_t at = eh.e_shoff + 3 * sizeof(Elf64_Shdr);
	memcpy(&sh, bad + at, sizeof(sh));
	sh.sh_size = (Elf64_Xword)-1;
	memcpy(bad + at, &sh, sizeof(sh));
	assert_int_equal(kmod_modinfo(bad, n, "depends", v, sizeof(v)), -ENOEXEC);
	/* a section name offset past the string table */
	memcpy(bad, img, n);
	sh.sh_size = sizeof(MODINFO);
	sh.sh_name = 0x7fffffff;
	memcpy(bad + at, &sh, sizeof(sh));
	assert_int_equal(kmod_modinfo(bad, n, "depends", v, sizeof(v)), -ENOEXEC);
}

static void names(void **state)
{
	char out[KMOD_NAME_MAX];
	bool z;
	assert_int_equal(kmod_name_of("kernel/drivers/char/hw_random/virtio-rng.ko", out, &z), 0);
	assert_string_equal(out, "virtio_rng");
	assert_false(z);
	assert_int_equal(kmod_name_of("virtio_mmio.ko.xz", out, &z), 0);
	assert_string_equal(out, "virtio_mmio");
	assert_true(z);
	assert_int_equal(kmod_name_of("a/b/overlay.ko.zst", out, &z), 0);
	assert_string_equal(out, "overlay");
	assert_true(z);
	assert_int_equal(kmod_name_of("modules.dep", out, &z), -EINVAL);
	assert_int_equal(kmod_name_of("dir/.ko", out, &z), -EINVAL);
	assert_int_equal(kmod_name_of("x.ko.bz2", out, &z), -EINVAL);
	char longest[KMOD_NAME_MAX + 4];
	memset(longest, 'm', KMOD_NAME_MAX - 1);
	strcpy(longest + KMOD_NAME_MAX - 1, ".ko");
	assert_int_equal(kmod_name_of(longest, out, &z), 0);
	assert_int_equal(strlen(out), KMOD_NAME_MAX - 1);
	memset(longest, 'm', KMOD_NAME_MAX);
	strcpy(longest + KMOD_NAME_MAX, ".ko");
	assert_int_equal(kmod_name_of(longest, out, &z), -EINVAL);
}

/* A kernel as a table: name, depends (NULL: built in). */
struct fake_mod {
	const char *name, *depends;
};

struct fake_kernel {
	const struct fake_mod *mods;
	unsigned lookups;
};

static int fake_lookup(void *ctx, const char *name, char *depends, size_t n)
{
	struct fake_kernel *k = ctx;
	k->lookups++;
	for (const struct fake_mod *m = k->mods; m->name; m++)
		if (strcmp(m->name, name) == 0) {
			if (!m->depends)
				return 1;
			snprintf(depends, n, "%s", m->depends);
			return 0;
		}
	return -ENOENT;
}

static const struct fake_mod DEBIAN_61[] = {
	{ "virtio_ring", "" },
	{ "virtio", "virtio_ring" },
	{ "virtio_mmio", "virtio,virtio_ring" },
	{ "virtio_blk", "virtio,virtio_ring" },
	{ "virtio_console", "virtio,virtio_ring" },
	{ "virtio_rng", "virtio,virtio_ring" },
	{ "overlay", "" },
	{ "erofs", "libcrc32c" },
	{ "libcrc32c", "" },
	{ "ext4", NULL },
	{ "crc32c_generic", NULL },
	{ "rng_core", NULL },
	{ NULL, NULL },
};

static unsigned position(const struct kmod_order *o, const char *name)
{
	for (unsigned i = 0; i < o->n; i++)
		if (strcmp(o->names[i], name) == 0)
			return i;
	fail_msg("%s is not in the order", name);
	return 0;
}

static void order_of_the_guest(void **state)
{
	struct fake_kernel k = { DEBIAN_61, 0 };
	const char *want[] = { "virtio_mmio", "virtio_blk", "virtio_console", "ext4", "overlay", "erofs" };
	struct kmod_order o;
	char bad[KMOD_NAME_MAX] = "";
	assert_int_equal(kmod_order(want, 6, fake_lookup, &k, &o, bad, sizeof(bad)), 0);
	const char *expect[] = { "virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console",
				 "overlay", "libcrc32c", "erofs" };
	assert_int_equal(o.n, 8);
	for (unsigned i = 0; i < 8; i++)
		assert_string_equal(o.names[i], expect[i]);
	/* each module looked up once, however many depend on it */
	assert_int_equal(k.lookups, 9);

	/* asked for in another order: still every module after what it depends on */
	const char *rev[] = { "erofs", "virtio_console", "virtio_ring", "virtio_mmio" };
	assert_int_equal(kmod_order(rev, 4, fake_lookup, &k, &o, bad, sizeof(bad)), 0);
	assert_int_equal(o.n, 6);
	assert_true(position(&o, "libcrc32c") < position(&o, "erofs"));
	assert_true(position(&o, "virtio_ring") < position(&o, "virtio"));
	assert_true(position(&o, "virtio") < position(&o, "virtio_console"));
	assert_true(position(&o, "virtio") < position(&o, "virtio_mmio"));

	/* only built-in modules: nothing to load */
	const char *builtin[] = { "ext4", "crc32c_generic" };
	assert_int_equal(kmod_order(builtin, 2, fake_lookup, &k, &o, bad, sizeof(bad)), 0);
	assert_int_equal(o.n, 0);
}

static void order_failures(void **state)
{
	static const struct fake_mod broken[] = {
		{ "a", "b" }, { "b", "c" }, { "c", "a" },   /* a circle */
		{ "self", "self" },
		{ "needs_ghost", "virtio,ghost" }, { "virtio", "" },
		{ "bad_dep", "x/y" },
		{ NULL, NULL },
	};
	struct fake_kernel k = { broken, 0 };
	struct kmod_order o;
	char bad[KMOD_NAME_MAX];
	const char *circle[] = { "a" };
	assert_int_equal(kmod_order(circle, 1, fake_lookup, &k, &o, bad, sizeof(bad)), -ELOOP);
	assert_string_equal(bad, "a");
	const char *self[] = { "self" };
	assert_int_equal(kmod_order(self, 1, fake_lookup, &k, &o, bad, sizeof(bad)), -ELOOP);
	const char *ghost[] = { "needs_ghost" };
	assert_int_equal(kmod_order(ghost, 1, fake_lookup, &k, &o, bad, sizeof(bad)), -ENOENT);
	assert_string_equal(bad, "ghost");
	const char *missing[] = { "nowhere" };
	assert_int_equal(kmod_order(missing, 1, fake_lookup, &k, &o, NULL, 0), -ENOENT);
	const char *slash[] = { "bad_dep" };
	assert_int_equal(kmod_order(slash, 1, fake_lookup, &k, &o, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "x/y");
}

/* A chain of KMOD_MAX modules fits; one more is refused, not a deeper recursion. */
static char chain_names[KMOD_MAX + 1][16];

static int chain_lookup(void *ctx, const char *name, char *depends, size_t n)
{
	unsigned i = (unsigned)atoi(name + 1), last = *(unsigned *)ctx;
	if (i == last)
		snprintf(depends, n, "%s", "");
	else
		snprintf(depends, n, "m%u", i + 1);
	return 0;
}

static void order_limit(void **state)
{
	for (unsigned i = 0; i <= KMOD_MAX; i++)
		snprintf(chain_names[i], sizeof(chain_names[i]), "m%u", i);
	struct kmod_order o;
	char bad[KMOD_NAME_MAX];
	const char *want[] = { "m1" };
	unsigned last = KMOD_MAX;
	assert_int_equal(kmod_order(want, 1, chain_lookup, &last, &o, bad, sizeof(bad)), 0);
	assert_int_equal(o.n, KMOD_MAX);
	assert_string_equal(o.names[0], chain_names[KMOD_MAX]);
	assert_string_equal(o.names[KMOD_MAX - 1], "m1");
	last = KMOD_MAX + 1;
	assert_int_equal(kmod_order(want, 1, chain_lookup, &last, &o, bad, sizeof(bad)), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(modinfo_fields),
		cmocka_unit_test(damaged_images),
		cmocka_unit_test(names),
		cmocka_unit_test(order_of_the_guest),
		cmocka_unit_test(order_failures),
		cmocka_unit_test(order_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

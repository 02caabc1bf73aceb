/*
 * tests/vm/guest.c - space-vm-guest: prepares what a microVM boots, through
 * the daemon's own code (daemon/driver/vm_guest.c), and says where it is.
 *
 *   space-vm-guest [--cache-dir DIR] [--agent PATH] [--no-fetch] [--template ROOTFS|default]
 *
 * Prints one JSON object: the kernel (package, version, release, vmlinuz,
 * fetched, fetch_ms, unpack_ms), the initramfs (path, bytes, modules in
 * load order, built, build_ms), the kernel command line, and with --template
 * the template's erofs image (path, built, build_ms; "default" is the
 * default template's rootfs in the cache, which spaced builds at its start). With --no-fetch a kernel missing from the
 * cache is an error instead of a download, so a test never reaches the
 * network (`make vm-guest` is the setup step that may). Exit status 0, or 1
 * with the error on stderr.
 */
#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/driver/vm_guest.h"
#include "daemon/store/template.h"

int main(int argc, char **argv)
{
	const char *cache = "/var/cache/space", *agent = "build/space-agent", *template = NULL;
	bool fetch = true;
	static const struct option opts[] = {
		{ "cache-dir", required_argument, NULL, 'c' },
		{ "agent", required_argument, NULL, 'a' },
		{ "no-fetch", no_argument, NULL, 'n' },
		{ "template", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cache = optarg; break;
		case 'a': agent = optarg; break;
		case 'n': fetch = false; break;
		case 't': template = optarg; break;
		default:
			fprintf(stderr, "usage: space-vm-guest [--cache-dir DIR] [--agent PATH] [--no-fetch] "
					"[--template ROOTFS|default]\n");
			return 2;
		}
	}
	struct err e = { 0 };
	struct vm_kernel k;
	struct vm_initramfs ir;
	if (vm_guest_kernel(cache, fetch, &k, &e) < 0 || vm_guest_initramfs(cache, &k, agent, &ir, &e) < 0) {
		fprintf(stderr, "space-vm-guest: %s\n", e.msg);
		return 1;
	}
	json_t *image = json_null();
	if (template) {
		char rootfs[PATH_MAX], key[65], path[PATH_MAX];
		bool built;
		uint64_t ms;
		snprintf(rootfs, sizeof(rootfs), "%s", template);
		if (strcmp(template, "default") == 0) {
			if (template_key("", key) < 0)
				return 1;
			snprintf(rootfs, sizeof(rootfs), "%s/templates/%s/rootfs", cache, key);
		}
		/* a missing template is said, not fatal: only the tests that boot on it need it */
		if (vm_guest_template_image(cache, rootfs, path, sizeof(path), &built, &ms, &e) < 0)
			image = json_pack("{s:s,s:s}", "rootfs", rootfs, "error", e.msg);
		else
			image = json_pack("{s:s,s:s,s:b,s:I}", "rootfs", rootfs, "path", path, "built", built,
					  "build_ms", (json_int_t)ms);
	}
	char cmdline[256];
	if (vm_guest_cmdline(cache, true, cmdline, sizeof(cmdline)) < 0) /* the tests run QEMU's TCG */
		return 1;
	json_t *mods = json_array();
	for (unsigned i = 0; i < ir.order.n; i++)
		json_array_append_new(mods, json_string(ir.order.names[i]));
	json_t *o = json_pack("{s:{s:s,s:s,s:s,s:s,s:s,s:b,s:I,s:I},s:{s:s,s:I,s:o,s:b,s:I},s:s,s:o}",
			      "kernel", "package", k.package, "version", k.version, "release", k.release,
			      "vmlinuz", k.vmlinuz, "modules", k.modules, "fetched", k.fetched,
			      "fetch_ms", (json_int_t)k.fetch_ms, "unpack_ms", (json_int_t)k.unpack_ms,
			      "initramfs", "path", ir.path, "bytes", (json_int_t)ir.bytes, "modules", mods,
			      "built", ir.built, "build_ms", (json_int_t)ir.build_ms, "cmdline", cmdline, "template_image", image);
	if (!o)
		return 1;
	char *text = json_dumps(o, JSON_INDENT(2));
	puts(text);
	free(text);
	json_decref(o);
	return 0;
}

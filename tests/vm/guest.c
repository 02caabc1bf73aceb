/*
 * tests/vm/guest.c - space-vm-guest: prepares what a microVM boots, through
 * the daemon's own code (daemon/driver/vm_guest.c), and says where it is.
 *
 *   space-vm-guest [--cache-dir DIR] [--agent PATH] [--no-fetch]
 *
 * Prints one JSON object: the kernel (package, version, release, vmlinuz,
 * fetched, fetch_ms, unpack_ms), the initramfs (path, bytes, modules in
 * load order, built, build_ms) and the kernel command line. With --no-fetch a kernel missing from the
 * cache is an error instead of a download, so a test never reaches the
 * network (`make vm-guest` is the setup step that may). Exit status 0, or 1
 * with the error on stderr.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/driver/vm_guest.h"

int main(int argc, char **argv)
{
	const char *cache = "/var/cache/space", *agent = "build/space-agent";
	bool fetch = true;
	static const struct option opts[] = {
		{ "cache-dir", required_argument, NULL, 'c' },
		{ "agent", required_argument, NULL, 'a' },
		{ "no-fetch", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cache = optarg; break;
		case 'a': agent = optarg; break;
		case 'n': fetch = false; break;
		default:
			fprintf(stderr, "usage: space-vm-guest [--cache-dir DIR] [--agent PATH] [--no-fetch]\n");
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
	char cmdline[256];
	if (vm_guest_cmdline(cmdline, sizeof(cmdline)) < 0)
		return 1;
	json_t *mods = json_array();
	for (unsigned i = 0; i < ir.order.n; i++)
		json_array_append_new(mods, json_string(ir.order.names[i]));
	json_t *o = json_pack("{s:{s:s,s:s,s:s,s:s,s:s,s:b,s:I,s:I},s:{s:s,s:I,s:o,s:b,s:I},s:s}",
			      "kernel", "package", k.package, "version", k.version, "release", k.release,
			      "vmlinuz", k.vmlinuz, "modules", k.modules, "fetched", k.fetched,
			      "fetch_ms", (json_int_t)k.fetch_ms, "unpack_ms", (json_int_t)k.unpack_ms,
			      "initramfs", "path", ir.path, "bytes", (json_int_t)ir.bytes, "modules", mods,
			      "built", ir.built, "build_ms", (json_int_t)ir.build_ms, "cmdline", cmdline);
	if (!o)
		return 1;
	char *text = json_dumps(o, JSON_INDENT(2));
	puts(text);
	free(text);
	json_decref(o);
	return 0;
}

/*
 * daemon/driver/vm_boot.c - what a microVM boots from (see vm_boot.h).
 */
#include "daemon/driver/vm_boot.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "daemon/driver/oci.h"
#include "daemon/driver/vm_proc.h"


int vm_write_boot(struct sandbox *sb, const struct boot *b, struct err *e)
{
	char p[720];
	vm_path(p, sizeof(p), sb, "vm/boot.json");
	json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:b}", "kernel", b->kernel, "initramfs", b->initramfs, "image",
			      b->image, "cmdline", b->cmdline, "booted", b->booted, "net", b->net);
	int rc = j && json_dump_file(j, p, JSON_INDENT(1)) == 0 ? 0 : -EIO;
	json_decref(j);
	int fd = rc == 0 ? open(p, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		rc = fsync(fd) == 0 ? 0 : -errno;
		close(fd);
	}
	return rc < 0 ? err_set(e, ERR_INTERNAL, -rc, "writing %s: %s", p, strerror(-rc)) : 0;
}

int vm_read_boot(struct sandbox *sb, struct boot *b, struct err *e)
{
	char p[720];
	vm_path(p, sizeof(p), sb, "vm/boot.json");
	json_error_t je;
	json_t *j = json_load_file(p, 0, &je);
	const char *k = json_string_value(json_object_get(j, "kernel"));
	const char *i = json_string_value(json_object_get(j, "initramfs"));
	const char *m = json_string_value(json_object_get(j, "image"));
	const char *c = json_string_value(json_object_get(j, "cmdline"));
	int rc = 0;
	if (!k || !i || !m || !c)
		rc = err_set(e, ERR_INTERNAL, EIO, "%s is missing or damaged: %s", p, j ? "a field is missing" : je.text);
	else {
		snprintf(b->kernel, sizeof(b->kernel), "%s", k);
		snprintf(b->initramfs, sizeof(b->initramfs), "%s", i);
		snprintf(b->image, sizeof(b->image), "%s", m);
		snprintf(b->cmdline, sizeof(b->cmdline), "%s", c);
		const char *w = json_string_value(json_object_get(j, "booted")); /* none before booted images */
		snprintf(b->booted, sizeof(b->booted), "%s", w ? w : "");
		b->net = json_is_true(json_object_get(j, "net")); /* none before sandboxes had networks */
	}
	json_decref(j);
	return rc;
}

/* vm/env: the agent's environment, read by it from QEMU's fw_cfg (SP_VM_ENV_NAME). The
 * guest kernel has its own OOM killer: the agent's watcher, gVisor's, stays off. */
int vm_write_env(struct sandbox *sb, struct err *e)
{
	struct oci_params op = { .id = sb->id, .env = sb->conf.env, .cpus = sb->conf.cpus, .memory_mb = sb->conf.memory_mb,
				 .pids = DEFAULT_PIDS_LIMIT, .nproc = SANDBOX_NPROC };
	json_t *env = oci_env(&op);
	char p[720];
	vm_path(p, sizeof(p), sb, "vm/env");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd >= 0 && env ? 0 : -EIO;
	size_t i;
	json_t *v;
	json_array_foreach(env, i, v) {
		const char *kv = json_string_value(v);
		if (rc == 0 && (!kv || write(fd, kv, strlen(kv) + 1) != (ssize_t)(strlen(kv) + 1)))
			rc = -EIO;
	}
	static const char off[] = "SPACE_MEMORY_WATCH=off";
	if (rc == 0 && write(fd, off, sizeof(off)) != (ssize_t)sizeof(off))
		rc = -EIO;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	json_decref(env);
	return rc < 0 ? err_set(e, ERR_INTERNAL, -rc, "writing %s: %s", p, strerror(-rc)) : 0;
}

/*
 * daemon/driver/oci.c - builds the OCI spec runsc runs (see oci.h).
 *
 * The process is space-agent as PID 1; the sandbox's environment reaches it
 * through process.env and it hands it to every command. Limits go to
 * linux.resources, which runsc applies to the host cgroup of the sandbox.
 */
#include "daemon/driver/oci.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *mount(const char *dst, const char *type, const char *src, const char *opts)
{
	json_t *m = json_pack("{s:s, s:s, s:s}", "destination", dst, "type", type, "source", src);
	if (opts) {
		json_t *o = json_array();
		char buf[256];
		snprintf(buf, sizeof(buf), "%s", opts);
		for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			json_array_append_new(o, json_string(t));
		json_object_set_new(m, "options", o);
	}
	return m;
}

json_t *oci_env(const struct oci_params *p)
{
	json_t *env = p->env;
	const char *id = p->id;
	json_t *arr = json_array();
	char line[8192];
	snprintf(line, sizeof(line), "SPACE_SANDBOX_ID=%s", id);
	json_array_append_new(arr, json_string(line));
	snprintf(line, sizeof(line), "SPACE_CPUS=%d", p->cpus);
	json_array_append_new(arr, json_string(line));
	snprintf(line, sizeof(line), "SPACE_MEMORY_MB=%d", p->memory_mb);
	json_array_append_new(arr, json_string(line));
	if (getenv("SPACE_TEST_NO_MEMORY_WATCH")) /* tests of the host backstop only */
		json_array_append_new(arr, json_string("SPACE_MEMORY_WATCH=off"));
	snprintf(line, sizeof(line), "SPACE_NPROC=%d", p->nproc);
	json_array_append_new(arr, json_string(line));
	snprintf(line, sizeof(line), "SPACE_NOFILE=%d", OCI_NOFILE);
	json_array_append_new(arr, json_string(line));
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v) {
		if (!json_is_string(v))
			continue;
		snprintf(line, sizeof(line), "%s=%s", k, json_string_value(v));
		json_array_append_new(arr, json_string(line));
	}
	return arr;
}

/* What root inside a sandbox may do: Docker's default set without NET_RAW and
 * MKNOD (no raw sockets, no device nodes). gVisor enforces them in its own kernel. */
static json_t *caps(void)
{
	static const char *names[] = { "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_SETGID",
				       "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
				       "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE" };
	json_t *a = json_array();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		json_array_append_new(a, json_string(names[i]));
	return a;
}

json_t *oci_spec(const struct oci_params *p)
{
	if (!p->id || !p->rootfs || !p->agent || !p->sock_dir || p->cpus < 1 || p->memory_mb < 1 || p->pids < 1)
		return NULL;
	char cgroup[128];
	snprintf(cgroup, sizeof(cgroup), "/space/%s", p->id);

	json_t *mounts = json_array();
	json_array_append_new(mounts, mount("/proc", "proc", "proc", NULL));
	json_array_append_new(mounts, mount("/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k"));
	json_array_append_new(mounts, mount("/dev/pts", "devpts", "devpts", "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"));
	json_array_append_new(mounts, mount("/dev/shm", "tmpfs", "shm", "nosuid,noexec,nodev,mode=1777,size=65536k"));
	json_array_append_new(mounts, mount("/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro"));
	json_array_append_new(mounts, mount(OCI_AGENT_PATH, "bind", p->agent, "rbind,ro"));
	json_array_append_new(mounts, mount(OCI_SOCK_DIR, "bind", p->sock_dir, "rbind,rw"));
	if (p->shim)
		json_array_append_new(mounts, mount(OCI_SHIM_PATH, "bind", p->shim, "rbind,ro"));
	for (int i = 0; i < p->nbinds; i++)
		json_array_append_new(mounts, mount(p->binds[i].destination, "bind", p->binds[i].source,
						    p->binds[i].read_only ? "rbind,ro" : "rbind,rw"));

	json_t *ns = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}]", "type", "pid", "type", "network", "type", "ipc",
			       "type", "uts", "type", "mount");
	if (p->netns)
		json_object_set_new(json_array_get(ns, 1), "path", json_string(p->netns));
	json_t *resources = json_pack("{s:{s:I}, s:{s:I, s:I}, s:{s:I}}", "memory", "limit",
				      (json_int_t)p->memory_mb * 1024 * 1024, "cpu", "quota", (json_int_t)p->cpus * 100000,
				      "period", (json_int_t)100000, "pids", "limit", (json_int_t)p->pids);
	if (resources && p->cpu_shares > 0)
		json_object_set_new(json_object_get(resources, "cpu"), "shares", json_integer(p->cpu_shares));

	json_t *c = caps();
	json_t *capabilities = json_pack("{s:O, s:O, s:O, s:O}", "bounding", c, "effective", c, "permitted", c,
					 "inheritable", c);
	json_decref(c);
	return json_pack("{s:s, s:{s:b, s:{s:i, s:i}, s:[s], s:o, s:s, s:o, s:[{s:s, s:I, s:I}, {s:s, s:I, s:I}]},"
			 " s:{s:s, s:b}, s:s,"
			 " s:o, s:{s:o, s:o, s:s}}",
			 "ociVersion", "1.0.2",
			 "process", "terminal", 0, "user", "uid", 0, "gid", 0, "args", OCI_AGENT_PATH, "env",
			 oci_env(p), "cwd", "/", "capabilities", capabilities, "rlimits", "type", "RLIMIT_NOFILE", "hard",
			 (json_int_t)OCI_NOFILE, "soft", (json_int_t)OCI_NOFILE, "type", "RLIMIT_MEMLOCK", "hard",
			 (json_int_t)OCI_MEMLOCK, "soft", (json_int_t)OCI_MEMLOCK,
			 "root", "path", p->rootfs, "readonly", 0,
			 "hostname", p->id,
			 "mounts", mounts,
			 "linux", "namespaces", ns, "resources", resources, "cgroupsPath", cgroup);
}

/*
 * daemon/driver/oci.h - the OCI runtime spec (config.json) of a gvisor sandbox.
 *
 * Pure: builds JSON from parameters, touches no files, so it is unit-tested
 * directly.
 */
#ifndef SPACE_DAEMON_OCI_H
#define SPACE_DAEMON_OCI_H

#include <stdbool.h>
#include <jansson.h>

#include "lib/host/names.h" /* OCI_SPACE_DIR: where the mounts below live */

#define OCI_AGENT_PATH "/.space/agent"
#define OCI_SOCK_DIR "/.space/sock"
#define OCI_SHIM_PATH "/.space/shim.so"

/* A host folder bound into the sandbox (a volume's mount on the host, core/volume.h). */
struct oci_bind {
	const char *source;      /* host path */
	const char *destination; /* path inside */
	bool read_only;
};

struct oci_params {
	const char *id;          /* hostname and cgroup name */
	const char *rootfs;      /* host path of the root filesystem */
	const char *agent;       /* host path of the space-agent binary */
	const char *shim;        /* host path of libspace-shim.so, or NULL */
	const char *sock_dir;    /* host dir holding agent.sock */
	json_t *env;             /* object of strings, may be NULL */
	int cpus;
	int memory_mb;
	int pids;                /* host cgroup backstop */
	int nproc;               /* per-process RLIMIT_NPROC inside, below pids */
	int cpu_shares;          /* cgroup cpu.shares, 0: the default */
	const char *netns;       /* the network namespace to join (a path), or NULL for a new one */
	const struct oci_bind *binds; /* nbinds folders bound in after spaced's own mounts */
	int nbinds;
};

#define OCI_NOFILE 524288    /* open files per process inside a sandbox (hard; soft 1024), as Debian */
#define OCI_MEMLOCK (8 << 20) /* locked memory per process, as Linux's default */

/* Returns a new config.json object, or NULL if a parameter is invalid. */
json_t *oci_spec(const struct oci_params *p);

/* The agent's environment, as "K=V" strings: the sandbox's own and the SPACE_* settings of
 * its limits (a microVM's agent gets the same list through QEMU's fw_cfg). */
json_t *oci_env(const struct oci_params *p);

#endif

/*
 * daemon/driver/driver_gvisor.c - sandboxes as gVisor (runsc) containers.
 *
 * Layout of a sandbox dir: disk.img (the sandbox's disk: an ext4 image of
 * its disk_mb, see disk.h) mounted on layer/, which holds upper/ and work/
 * (the overlayfs writable layer); rootfs/ (the overlay of the template's
 * rootfs and layer/upper, the container's root), bundle/config.json, sock/
 * (the agent's socket, bind-mounted into the sandbox: a tmpfs of SOCK_TMPFS_OPTS,
 * so nothing written there inside lands on the host's disk) and runsc.log. runsc
 * keeps its own state under <state dir>/runsc, so a restarted spaced finds
 * its containers again; rootfs.opts records the overlay's options.
 *
 * Flags: the ptrace platform (the only one that works without VT-x here),
 * --host-uds=open so the agent can connect to its socket, and the network: gVisor's own
 * stack on the interface of the sandbox's inner namespace (--network=sandbox, net/net.h),
 * or none for a sandbox created without a network.
 *
 * The agent and the shim a sandbox mounts are its own hard links, agent and shim.so in its dir,
 * to the files kept by content in <state>/agents (agent_file.h): a checkpoint links them beside
 * its image, and a restore from an image links the image's in their place, so a sandbox
 * restored from a snapshot or a fork runs on the agent the image was made with, whatever
 * spaced's agent is now. A sandbox or an image from before these links has none, and mounts
 * the file its config names (a new one: this spaced's agent).
 *
 * The sandbox's host cgroups are driver_gvisor_cg.c's; what sandboxes leave behind, found
 * and released, driver_gvisor_left.c's.
 */
#include "daemon/driver/driver.h"
#include "daemon/driver/driver_gvisor_int.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/driver/agent_file.h"
#include "daemon/driver/disk.h"
#include "daemon/net/net.h"
#include "daemon/driver/host.h"
#include "daemon/driver/oci.h"
#include "daemon/base/clock.h"
#include "daemon/base/log.h"
#include "lib/host/spawn.h"

/* The socket folder needs one inode and no blocks; the rest is all a sandbox can put there. */
#define SOCK_TMPFS_OPTS "size=64k,nr_inodes=16,mode=0700"

/* A sandbox dir's links to its agent and shim (agent_file.h), and their names beside an image */
#define AGENT_LINK "agent"
#define SHIM_LINK "shim.so"

#define RUNSC_ARGS(drv) "runsc", "--root", (drv)->root, "--platform=ptrace", "--network=none", "--host-uds=open"

static void path(char *out, size_t n, const struct sandbox *sb, const char *leaf)
{
	snprintf(out, n, "%s/%s", sb->conf.dir, leaf);
}

/* The last line runsc wrote to the log at fd (its error, when it failed), into out. */
static void last_line(int fd, char *out, size_t n)
{
	char tail[512];
	out[0] = '\0';
	off_t end = lseek(fd, 0, SEEK_END);
	if (end <= 0)
		return;
	off_t from = end > (off_t)sizeof(tail) - 1 ? end - (off_t)sizeof(tail) + 1 : 0;
	ssize_t r = pread(fd, tail, sizeof(tail) - 1, from);
	if (r <= 0)
		return;
	tail[r] = '\0';
	while (r > 0 && (tail[r - 1] == '\n' || tail[r - 1] == ' '))
		tail[--r] = '\0';
	char *nl = strrchr(tail, '\n');
	snprintf(out, n, "%s", nl ? nl + 1 : tail);
}

/* Runs runsc with the common flags and `args`, logging into the sandbox's runsc.log. With
 * net_setup (run, restore: the commands that build the sandbox's network stack), it runs in
 * the sandbox's inner network namespace (spawn_run_netns says why it hides a folder). */
static int runsc_net(struct driver *drv, struct sandbox *sb, char *const args[], bool net_setup, struct err *e)
{
	char *argv[32] = { RUNSC_ARGS(drv) };
	int argc = 6;
	if (sb->network)
		argv[4] = "--network=sandbox";
	for (int i = 0; args[i] && argc < 31; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	char logpath[700];
	path(logpath, sizeof(logpath), sb, "runsc.log");
	int log = open(logpath, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	int rc, nsfd = -1;
	if (net_setup && sb->network && (nsfd = net_inner_open(sb)) < 0)
		rc = nsfd;
	else if (nsfd >= 0)
		rc = spawn_run_netns(argv, nsfd, true, log, log);
	else
		rc = spawn_run(argv, log, log);
	if (nsfd >= 0)
		close(nsfd);
	char why[256] = "";
	if (rc != 0 && log >= 0)
		last_line(log, why, sizeof(why));
	if (log >= 0)
		close(log);
	if (rc != 0)
		return err_set(e, ERR_INTERNAL, rc < 0 ? -rc : EIO, "runsc %s failed (status %d): %s", args[0], rc,
			       why[0] ? why : "no message");
	return 0;
}

static int runsc(struct driver *drv, struct sandbox *sb, char *const args[], struct err *e)
{
	return runsc_net(drv, sb, args, false, e);
}

static void settle_orphans(struct driver *drv);

/* The files every sandbox links to (agent_file.h): this spaced's agent and shim kept in
 * <state>/agents, and what no sandbox or image links to any more removed from there. */
static int keep_agent(struct driver *drv, struct err *e)
{
	struct daemon *d = drv->d;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/agents", d->cfg.state_dir);
	int rc = agent_file_keep(dir, d->cfg.agent_path, drv->agent, sizeof(drv->agent), e);
	if (rc == 0 && d->cfg.shim_path[0])
		rc = agent_file_keep(dir, d->cfg.shim_path, drv->shim, sizeof(drv->shim), e);
	if (rc < 0)
		return rc;
	const char *keep[] = { drv->agent, drv->shim };
	int gone = agent_file_sweep(dir, keep, 2);
	if (gone > 0)
		log_info("removed %d agent file(s) of %s no sandbox or snapshot uses any more", gone, dir);
	else if (gone < 0)
		log_warn("cannot sweep %s: %s", dir, strerror(-gone));
	return 0;
}

static int gv_init(struct daemon *d, struct driver **out, struct err *e)
{
	struct driver *drv = calloc(1, sizeof(*drv));
	if (!drv)
		return err_set(e, ERR_INTERNAL, ENOMEM, "out of memory");
	drv->d = d;
	snprintf(drv->root, sizeof(drv->root), "%s/runsc", d->cfg.state_dir);
	mkdir(drv->root, 0700);
	char ver[256] = "";
	char *argv[] = { "runsc", "--version", NULL };
	if (spawn_capture(argv, ver, sizeof(ver)) != 0) {
		free(drv);
		return err_set(e, ERR_INTERNAL, ENOENT, "runsc is not installed (apt-get install runsc)");
	}
	/* "runsc version 0.0~20221219.0\n..." -> "runsc 0.0~20221219.0" */
	char *v = strstr(ver, "version ");
	char *nl = v ? strchr(v, '\n') : NULL;
	if (nl)
		*nl = '\0';
	snprintf(drv->runtime, sizeof(drv->runtime), "runsc %s", v ? v + 8 : "unknown");
	settle_orphans(drv);
	if (keep_agent(drv, e) < 0) {
		free(drv);
		return -EIO;
	}
	*out = drv;
	return 0;
}

/* Whether process pid is a runsc command (not a sandbox's own runsc-sandbox or runsc-gofer)
 * working on the containers under root. */
static bool runsc_command_of(pid_t pid, const char *root)
{
	char p[64], args[4096];
	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, args, sizeof(args) - 1);
	close(fd);
	if (n <= 0)
		return false;
	args[n] = '\0';
	const char *base = strrchr(args, '/');
	if (strcmp(base ? base + 1 : args, "runsc") != 0)
		return false;
	char eq[700];
	snprintf(eq, sizeof(eq), "--root=%s", root);
	for (const char *a = args, *prev = ""; a < args + n; prev = a, a += strlen(a) + 1)
		if (strcmp(a, eq) == 0 || (strcmp(prev, "--root") == 0 && strcmp(a, root) == 0))
			return true;
	return false;
}

/*
 * A spaced that was killed leaves the runsc commands it had started running on (a restore, a
 * checkpoint, a delete): until they end, what runsc says of a container is about to change,
 * and adopting on it would record a state that does not last (a suspended sandbox that a
 * late restore brings back to life). So the next spaced waits for them first, up to
 * ORPHAN_WAIT_MS, and then kills what is left.
 */
#define ORPHAN_WAIT_MS 120000

static void settle_orphans(struct driver *drv)
{
	int64_t deadline = mono_ms() + ORPHAN_WAIT_MS;
	for (;;) {
		DIR *dp = opendir("/proc");
		if (!dp)
			return;
		pid_t found = 0;
		struct dirent *de;
		while (!found && (de = readdir(dp))) {
			char *end;
			long pid = strtol(de->d_name, &end, 10);
			if (!*end && pid > 0 && pid != getpid() && runsc_command_of((pid_t)pid, drv->root))
				found = (pid_t)pid;
		}
		closedir(dp);
		if (!found)
			return;
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			log_warn("runsc command %d of an earlier spaced still runs after %d s; killing it", (int)found,
				 ORPHAN_WAIT_MS / 1000);
			kill(found, SIGKILL);
		} else {
			log_info("waiting for runsc command %d of an earlier spaced to end", (int)found);
		}
		int pfd = (int)syscall(SYS_pidfd_open, found, 0);
		if (pfd < 0)
			continue; /* gone already */
		struct pollfd w = { .fd = pfd, .events = POLLIN };
		poll(&w, 1, left > 0 ? (int)left : 1000);
		close(pfd);
	}
}

static void gv_fini(struct driver *drv)
{
	free(drv);
}

static int write_file(const char *p, const char *data)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t n = strlen(data);
	ssize_t w = write(fd, data, n);
	int rc = (w == (ssize_t)n && fsync(fd) == 0) ? 0 : -EIO;
	close(fd);
	return rc;
}

/* The host directory of the writable layer, on the sandbox's disk. */
static void gv_layer(struct driver *drv, struct sandbox *sb, char *out, size_t n)
{
	(void)drv;
	path(out, n, sb, "layer/upper");
}

/* Mounts on the host the images of the volumes sb mounts (core/volume.h), each once however
 * many sandboxes bind it in, unless mounted already (after a host restart they are not). */
static int mount_volumes(struct driver *drv, struct sandbox *sb, struct err *e)
{
	for (int i = 0; i < sb->conf.nvolumes; i++) {
		char img[700], mnt[700];
		disk_volume_paths(drv->d->cfg.state_dir, sb->conf.tenant, sb->conf.volumes[i].name, NULL, img, mnt, sizeof(img));
		if (access(img, F_OK) < 0)
			return err_set(e, ERR_INTERNAL, errno, "volume %s has no image: %s", sb->conf.volumes[i].name,
				       strerror(errno));
		int rc = disk_mount_once(img, mnt, e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Mounts the sandbox's volumes, disk and root overlay unless they are mounted already (after a
 * host restart they are not); the overlay's options were recorded at create. */
static int mount_rootfs(struct driver *drv, struct sandbox *sb, struct err *e)
{
	char rootfs[700], optpath[720], opts[2200], img[700], layer[700];
	path(img, sizeof(img), sb, "disk.img");
	path(layer, sizeof(layer), sb, "layer");
	int rc = mount_volumes(drv, sb, e);
	if (rc < 0)
		return rc;
	if (!disk_mounted(layer) && (rc = disk_mount(img, layer, e)) < 0)
		return rc;
	path(rootfs, sizeof(rootfs), sb, "rootfs");
	if (disk_mounted(rootfs))
		return 0;
	path(optpath, sizeof(optpath), sb, "rootfs.opts");
	int fd = open(optpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, errno, "reading %s: %s", optpath, strerror(errno));
	ssize_t n = read(fd, opts, sizeof(opts) - 1);
	close(fd);
	if (n <= 0)
		return err_set(e, ERR_INTERNAL, EIO, "reading %s: empty", optpath);
	opts[n] = '\0';
	if (mount("overlay", rootfs, "overlay", MS_NODEV | MS_NOSUID, opts) < 0)
		return err_set(e, ERR_INTERNAL, errno, "mounting the root filesystem: %s", strerror(errno));
	return 0;
}

/* Mounts the socket folder's tmpfs unless it is mounted; with fresh, a new empty one in place
 * of whatever the sandbox left in the old (only while the sandbox does not run and before
 * spaced listens there). */
static int mount_sock(struct sandbox *sb, bool fresh, struct err *e)
{
	char sock[700];
	path(sock, sizeof(sock), sb, "sock");
	if (mkdir(sock, 0700) < 0 && errno != EEXIST)
		return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", sock, strerror(errno));
	if (disk_mounted(sock)) {
		if (!fresh)
			return 0;
		if (umount2(sock, MNT_DETACH) < 0)
			return err_set(e, ERR_INTERNAL, errno, "unmounting %s: %s", sock, strerror(errno));
	}
	if (mount("space-sock", sock, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, SOCK_TMPFS_OPTS) < 0)
		return err_set(e, ERR_INTERNAL, errno, "mounting the socket folder: %s", strerror(errno));
	return 0;
}

static int gv_prepare(struct driver *drv, struct sandbox *sb, struct err *e)
{
	int rc = mount_rootfs(drv, sb, e);
	return rc < 0 ? rc : mount_sock(sb, true, e);
}

/* Copies the contents of the directory seed into dir (cp -a), sharing blocks where it can. */
static int seed_layer(const char *seed, const char *dir, struct err *e)
{
	char from[720];
	snprintf(from, sizeof(from), "%s/.", seed);
	char *cp[] = { "cp", "-a", "--reflink=auto", from, (char *)dir, NULL };
	if (spawn_run(cp, -1, -1) != 0)
		return err_set(e, ERR_NO_SPACE, ENOSPC,
			       "cannot copy the snapshot's files onto the new sandbox's disk (is disk_mb large enough?)");
	return 0;
}

/*
 * /tmp on the sandbox's own disk, as on Debian 12, not in its memory: runsc mounts a tmpfs on
 * /tmp when the root filesystem's /tmp is empty, where a big temporary file would count
 * against the memory limit. A file in the new layer's /tmp keeps it from doing so (a sandbox
 * restored from an image keeps the mounts it had).
 */
#define TMP_MARK "/tmp/.on-disk"

static int tmp_on_disk(const char *upper, struct err *e)
{
	char tmp[760], mark[780];
	snprintf(tmp, sizeof(tmp), "%s/tmp", upper);
	snprintf(mark, sizeof(mark), "%s" TMP_MARK, upper);
	if ((mkdir(tmp, 01777) < 0 && errno != EEXIST) || chmod(tmp, 01777) < 0)
		return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", tmp, strerror(errno));
	int rc = write_file(mark, "This file keeps /tmp on the sandbox's disk rather than in its memory.\n");
	if (rc == 0 && chmod(mark, 0444) < 0)
		rc = -errno;
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "writing %s: %s", mark, strerror(-rc));
	return 0;
}

/* Links sb's own agent and shim (agent_file.h) and writes its bundle's config.json: the OCI
 * spec of its root, agent, socket folder, limits, volumes and network. */
static int write_spec(struct driver *drv, struct sandbox *sb, const char *rootfs, const char *bundle, const char *sock,
		      struct err *e)
{
	char agent[700], shim[700], cfgpath[760];
	int rc;
	path(agent, sizeof(agent), sb, AGENT_LINK);
	path(shim, sizeof(shim), sb, SHIM_LINK);
	if ((rc = agent_file_link(drv->agent, agent, e)) < 0 ||
	    (drv->shim[0] && (rc = agent_file_link(drv->shim, shim, e)) < 0))
		return rc;

	struct oci_params p = {
		.id = sb->id, .rootfs = rootfs, .agent = agent, .sock_dir = sock, .env = sb->conf.env,
		.shim = drv->shim[0] ? shim : NULL,
		.cpus = sb->conf.cpus, .memory_mb = sb->conf.memory_mb, .pids = DEFAULT_PIDS_LIMIT, .nproc = SANDBOX_NPROC,
		.cpu_shares = sb->cpu_shares,
	};
	struct oci_bind binds[SANDBOX_MAX_VOLUMES];
	char sources[SANDBOX_MAX_VOLUMES][700];
	for (int i = 0; i < sb->conf.nvolumes; i++) {
		disk_volume_paths(drv->d->cfg.state_dir, sb->conf.tenant, sb->conf.volumes[i].name, NULL, NULL, sources[i],
				  sizeof(sources[i]));
		binds[i] = (struct oci_bind){ .source = sources[i], .destination = sb->conf.volumes[i].path,
					      .read_only = sb->conf.volumes[i].read_only };
	}
	p.binds = binds;
	p.nbinds = sb->conf.nvolumes;
	char netns[700];
	if (sb->network) {
		net_inner_path(sb, netns, sizeof(netns));
		p.netns = netns;
	}
	json_t *spec = oci_spec(&p);
	char *text = spec ? json_dumps(spec, JSON_INDENT(1)) : NULL;
	json_decref(spec);
	if (!text)
		return err_set(e, ERR_INTERNAL, EINVAL, "cannot build the OCI spec");
	snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", bundle);
	rc = write_file(cfgpath, text);
	free(text);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "writing %s: %s", cfgpath, strerror(-rc));
	return 0;
}

static int gv_create(struct driver *drv, struct sandbox *sb, const char *template_rootfs, const char *seed,
		     struct err *e)
{
	char layer[700], upper[700], work[700], rootfs[700], bundle[700], sock[700], img[700];
	char blanks[600];
	path(img, sizeof(img), sb, "disk.img");
	path(layer, sizeof(layer), sb, "layer");
	path(upper, sizeof(upper), sb, "layer/upper");
	path(work, sizeof(work), sb, "layer/work");
	path(rootfs, sizeof(rootfs), sb, "rootfs");
	path(bundle, sizeof(bundle), sb, "bundle");
	path(sock, sizeof(sock), sb, "sock");
	char parent[600];
	snprintf(parent, sizeof(parent), "%s/sandboxes", drv->d->cfg.state_dir);
	mkdir(parent, 0700);
	snprintf(blanks, sizeof(blanks), "%s/disks", drv->d->cfg.state_dir);
	/* The sandbox dir keeps the host out (0700). */
	const char *dirs[] = { sb->conf.dir, layer, rootfs, bundle };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i], 0700) < 0 && errno != EEXIST)
			return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", dirs[i], strerror(errno));
	int rc = mount_sock(sb, false, e);
	if (rc < 0)
		return rc;
	rc = disk_create(blanks, img, sb->conf.disk_mb, e);
	if (rc == 0 && !disk_mounted(layer))
		rc = disk_mount(img, layer, e);
	if (rc < 0)
		return rc;
	/* the writable layer's root is the root directory users inside see: the usual 0755 */
	if ((mkdir(upper, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST))
		return err_set(e, ERR_INTERNAL, errno, "mkdir in %s: %s", layer, strerror(errno));
	chmod(upper, 0755);
	/* runsc makes missing mount points with spaced's umask (077), and every user inside must
	 * reach the shim there: /.space is made here, 0755 (a seed from a snapshot has it) */
	char space_dir[760];
	snprintf(space_dir, sizeof(space_dir), "%s" OCI_SPACE_DIR, upper);
	if (!seed && ((mkdir(space_dir, 0755) < 0 && errno != EEXIST) || chmod(space_dir, 0755) < 0))
		return err_set(e, ERR_INTERNAL, errno, "mkdir %s: %s", space_dir, strerror(errno));
	if (!seed && (rc = tmp_on_disk(upper, e)) < 0)
		return rc;
	if (seed && (rc = seed_layer(seed, upper, e)) < 0)
		return rc;

	char opts[2200], optpath[720];
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", template_rootfs, upper, work);
	path(optpath, sizeof(optpath), sb, "rootfs.opts");
	rc = write_file(optpath, opts);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "writing %s: %s", optpath, strerror(-rc));
	if ((rc = mount_rootfs(drv, sb, e)) < 0)
		return rc;
	return write_spec(drv, sb, rootfs, bundle, sock, e);
}

static int gv_start(struct driver *drv, struct sandbox *sb, struct err *e)
{
	char bundle[700];
	path(bundle, sizeof(bundle), sb, "bundle");
	char *args[] = { "run", "--detach", "--bundle", bundle, sb->id, NULL };
	int rc = sb->network ? net_ensure(drv->d, sb, true, e) : 0;
	if (rc == 0)
		rc = runsc_net(drv, sb, args, true, e);
	if (rc == 0)
		gv_raise_backstop(sb);
	return rc;
}

static enum driver_state gv_state(struct driver *drv, struct sandbox *sb);

static int gv_pause(struct driver *drv, struct sandbox *sb, struct err *e)
{
	char *args[] = { "pause", sb->id, NULL };
	return runsc(drv, sb, args, e);
}

static int gv_resume(struct driver *drv, struct sandbox *sb, struct err *e)
{
	char *args[] = { "resume", sb->id, NULL };
	return runsc(drv, sb, args, e);
}

static int gv_wake(struct driver *drv, struct sandbox *sb, struct err *e)
{
	/* runsc signals the container's init, which is the agent */
	char *args[] = { "kill", sb->id, "CONT", NULL };
	return runsc(drv, sb, args, e);
}

static int gv_pid1_state(struct driver *drv, struct sandbox *sb, char *state)
{
	/* the agent's own binary, from its read-only mount: nothing in the writable layer can stand
	 * in for it; runsc exec starts it beside PID 1, not through it */
	char out[16] = "";
	char *argv[] = { RUNSC_ARGS(drv), "exec", sb->id, OCI_AGENT_PATH, "--pid1-state", NULL };
	int rc = spawn_capture(argv, out, sizeof(out));
	if (rc != 0)
		return rc < 0 ? rc : -EIO;
	if (out[0] < 'A' || out[0] > 'z')
		return -EPROTO;
	*state = out[0];
	return 0;
}

/* Links the agent and the shim that the folder `from` holds into the folder `to`: beside an
 * image (at a checkpoint, from the sandbox's dir), or back into a sandbox's dir (at a restore,
 * from its image). Those `from` does not have (made before the links) are left as they are. */
static int link_agent(const char *from, const char *to, struct err *e)
{
	static const char *const leaves[] = { AGENT_LINK, SHIM_LINK };
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		char src[760], dst[760];
		snprintf(src, sizeof(src), "%s/%s", from, leaves[i]);
		snprintf(dst, sizeof(dst), "%s/%s", to, leaves[i]);
		int rc = access(src, F_OK) == 0 ? agent_file_link(src, dst, e) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int gv_checkpoint(struct driver *drv, struct sandbox *sb, const char *dir, int leave_running,
			 struct err *e)
{
	char opt[700];
	int rc = link_agent(sb->conf.dir, dir, e);
	if (rc < 0)
		return rc;
	snprintf(opt, sizeof(opt), "--image-path=%s", dir);
	char *args[] = { "checkpoint", opt, leave_running ? "--leave-running" : sb->id, leave_running ? sb->id : NULL,
			 NULL };
	return runsc(drv, sb, args, e);
}

static int gv_restore(struct driver *drv, struct sandbox *sb, const char *dir, struct err *e)
{
	char opt[700], bundle[700];
	int rc = mount_rootfs(drv, sb, e);
	if (rc == 0)
		rc = link_agent(dir, sb->conf.dir, e);
	if (rc < 0)
		return rc;
	gv_backstop_ahead(sb);
	snprintf(opt, sizeof(opt), "--image-path=%s", dir);
	path(bundle, sizeof(bundle), sb, "bundle");
	char *args[] = { "restore", "--detach", "--bundle", bundle, opt, sb->id, NULL };
	if (sb->network && (rc = net_ensure(drv->d, sb, true, e)) < 0)
		return rc;
	rc = runsc_net(drv, sb, args, true, e);
	if (rc == 0)
		gv_raise_backstop(sb);
	struct err we = { 0 };
	if (rc == 0 && host_weigh(drv, sb, &we) < 0) /* the bundle's share was its boot's */
		log_warn("sandbox %s: %s", sb->id, we.msg);
	return rc;
}

static int gv_rename(struct driver *drv, struct sandbox *sb, struct err *e)
{
	/* the agent's own binary beside PID 1, allowed to set the host name; nothing the
	 * sandbox runs gets that capability */
	char *args[] = { "exec", "--cap", "CAP_SYS_ADMIN", sb->id, OCI_AGENT_PATH, "--identity", sb->id, NULL };
	return runsc(drv, sb, args, e);
}

static int gv_stop(struct driver *drv, struct sandbox *sb, struct err *e)
{
	/* delete --force kills whatever still runs first; only a failed delete needs a second look
	 * (the container may be gone already, which is the goal) */
	char *del_args[] = { "delete", "--force", sb->id, NULL };
	struct err ignored = { 0 };
	if (runsc(drv, sb, del_args, &ignored) < 0 && gv_state(drv, sb) != DRV_ABSENT)
		return err_set(e, ERR_INTERNAL, EBUSY, "runsc still knows sandbox %s after delete", sb->id);
	gv_remove_cgroups(sb->id);
	return 0;
}

static int gv_destroy(struct driver *drv, struct sandbox *sb, struct err *e)
{
	char rootfs[700], layer[700], sock[700];
	/* kill and delete may fail when the container is already gone: that is the goal. */
	int rc = gv_stop(drv, sb, e);
	if (rc < 0)
		return rc;
	path(rootfs, sizeof(rootfs), sb, "rootfs");
	path(layer, sizeof(layer), sb, "layer");
	path(sock, sizeof(sock), sb, "sock");
	if (umount2(rootfs, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		return err_set(e, ERR_INTERNAL, errno, "unmounting %s: %s", rootfs, strerror(errno));
	if (disk_mounted(sock) && umount2(sock, MNT_DETACH) < 0)
		return err_set(e, ERR_INTERNAL, errno, "unmounting %s: %s", sock, strerror(errno));
	/* the disk last: the overlay above it is gone (a lazy unmount may still hold it a moment) */
	if ((rc = disk_umount(layer)) < 0 && umount2(layer, MNT_DETACH) < 0 && errno != EINVAL)
		return err_set(e, ERR_INTERNAL, -rc, "unmounting %s: %s", layer, strerror(-rc));
	if ((rc = net_remove(drv->d, sb, e)) < 0)
		return rc;
	char *rm[] = { "rm", "-rf", "--one-file-system", sb->conf.dir, NULL };
	if (spawn_run(rm, -1, -1) != 0)
		return err_set(e, ERR_INTERNAL, EIO, "cannot remove %s", sb->conf.dir);
	return 0;
}

static enum driver_state gv_state(struct driver *drv, struct sandbox *sb)
{
	char out[4096];
	char *argv[] = { RUNSC_ARGS(drv), "state", sb->id, NULL };
	if (spawn_capture(argv, out, sizeof(out)) != 0)
		return DRV_ABSENT;
	json_t *j = json_loads(out, 0, NULL);
	const char *st = json_string_value(json_object_get(j, "status"));
	enum driver_state r = DRV_STOPPED;
	if (st && strcmp(st, "running") == 0)
		r = DRV_RUNNING;
	else if (st && strcmp(st, "paused") == 0)
		r = DRV_PAUSED;
	json_decref(j);
	return r;
}

static const char *gv_runtime(struct driver *drv)
{
	return drv->runtime;
}

const struct driver_ops driver_gvisor = {
	.name = "gvisor",
	.init = gv_init,
	.fini = gv_fini,
	.create = gv_create,
	.prepare = gv_prepare,
	.start = gv_start,
	.pause = gv_pause,
	.resume = gv_resume,
	.checkpoint = gv_checkpoint,
	.restore = gv_restore,
	.rename = gv_rename,
	.wake = gv_wake,
	.pid1_state = gv_pid1_state,
	.layer = gv_layer,
	.stop = gv_stop,
	.destroy = gv_destroy,
	.state = gv_state,
	.stats = gv_stats,
	.weigh = host_weigh,
	.exit_reason = gv_exit_reason,
	.leftovers = gv_leftovers,
	.release = gv_release,
	.runtime = gv_runtime,
};

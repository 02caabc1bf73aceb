/*
 * daemon/net/net_ns.c - working inside a sandbox's network namespaces: their paths, making
 * and dropping them, and a job thread moving itself in and back out (enter, leave) to run
 * netlink steps (net_in_ns), an nft script (net_nft) or sysctl writes there, or to open or read what
 * lives there: a microVM's tap, the connections the edge tracks.
 *
 * setns of the network namespace is per thread: the netlink and nftables sockets a thread
 * opens inside belong to that namespace. A thread that cannot move back aborts spaced (leave),
 * since anything it did next would act inside a sandbox's network.
 */
#include "daemon/net/net.h"
#include "daemon/net/net_int.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_tun.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <malloc.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>


#include "daemon/base/log.h"
#include "daemon/net/link.h"

#define NSFS_MAGIC_NUMBER 0x6e736673

void net_ns_path(const struct sandbox *sb, const char *leaf, char *out, size_t n)
{
	snprintf(out, n, "%s/net/%s", sb->conf.dir, leaf);
}

void net_inner_path(const struct sandbox *sb, char *out, size_t n)
{
	net_ns_path(sb, "inner", out, n);
}

/* Moves the calling thread into the namespace bound at path; *home is the way back (leave). */
static int enter(const char *path, int *home)
{
	int nsfd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	if (nsfd < 0)
		return -errno;
	*home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*home < 0 || setns(nsfd, CLONE_NEWNET) < 0) {
		rc = -errno;
		if (*home >= 0)
			close(*home);
	}
	close(nsfd);
	return rc;
}

static void leave(int home)
{
	if (setns(home, CLONE_NEWNET) < 0) {
		log_error("cannot return a thread to spaced's network namespace: %s; stopping", strerror(errno));
		abort();
	}
	close(home);
}

bool net_is_ns(const char *path)
{
	struct statfs st;
	return statfs(path, &st) == 0 && (unsigned long)st.f_type == NSFS_MAGIC_NUMBER;
}

/* A new, empty network namespace bound at path (kept however many processes use it). */
int net_make_ns(const char *path)
{
	if (net_is_ns(path))
		return 0;
	int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		return -errno;
	int rc = 0;
	if (unshare(CLONE_NEWNET) < 0) {
		close(home);
		return -errno;
	}
	if (mount("/proc/thread-self/ns/net", path, NULL, MS_BIND, NULL) < 0)
		rc = -errno;
	leave(home);
	return rc;
}

void net_drop_ns(const char *path)
{
	if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		log_warn("cannot unmount network namespace %s: %s", path, strerror(errno));
	unlink(path);
}

int net_in_ns(const char *path, link_steps *fn, const void *arg, const char *what, bool quiet, struct err *e)
{
	int home = -1, rc = path ? enter(path, &home) : 0;
	struct link_nl nl = { 0 };
	if (rc == 0 && (rc = link_open(&nl)) == 0) {
		rc = fn(&nl, arg);
		link_close(&nl);
	}
	if (home >= 0)
		leave(home);
	if (rc < 0 && !quiet)
		err_set(e, ERR_INTERNAL, -rc, "cannot %s%s%s: %s", what, path ? " in " : "", path ? path : "",
			strerror(-rc));
	return rc;
}

int net_del_step(struct link_nl *nl, const void *name)
{
	return link_del(nl, name);
}

/* Runs an nft script (one transaction: all of it or nothing) in the namespace at path (NULL:
 * spaced's), through libnftables in this thread, whose netlink socket is made in that
 * namespace. With quiet, a failure is not filled into e. */
int net_nft(const char *path, const char *script, bool quiet, struct err *e)
{
	int home = -1, rc = path ? enter(path, &home) : 0;
	if (rc < 0)
		return quiet ? rc : err_set(e, ERR_INTERNAL, -rc, "cannot enter %s: %s", path, strerror(-rc));
	/* one thread at a time: libnftables 1.0.6 keeps tables of names in globals that every
	 * context makes and frees (two at once freed them twice: measured, spaced aborted) */
	static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&one);
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx) {
		rc = -ENOMEM;
	} else {
		nft_ctx_buffer_output(ctx);
		nft_ctx_buffer_error(ctx);
		if (nft_run_cmd_from_buffer(ctx, script) != 0) {
			rc = -EIO;
			if (!quiet) {
				const char *why = nft_ctx_get_error_buffer(ctx);
				char first[256];
				snprintf(first, sizeof(first), "%s", why && *why ? why : "no message");
				first[strcspn(first, "\n")] = '\0';
				err_set(e, ERR_INTERNAL, EIO, "nftables refused a sandbox's rules%s%s: %s", path ? " in " : "",
					path ? path : "", first);
			}
		}
		nft_ctx_free(ctx);
		/* libnftables reads the whole ruleset into memory each run (tens of MB with a hundred
		 * sandboxes' rules) and frees it in blocks glibc keeps: give them back */
		malloc_trim(0);
	}
	pthread_mutex_unlock(&one);
	if (home >= 0)
		leave(home);
	return rc;
}

/* A NFT_MSG_NEWCHAIN in the answer: the chain is there. */
static int chain_seen(const struct nlmsghdr *nlh, void *found)
{
	if ((nlh->nlmsg_type & 0xff) == NFT_MSG_NEWCHAIN)
		*(bool *)found = true;
	return MNL_CB_OK;
}

int nft_chain_exists(const char *table, const char *chain)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	int rc = 0;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		rc = -errno;
		mnl_socket_close(nl);
		return rc;
	}
	char buf[8192]; /* a chain's answer without its rules is a few hundred bytes */
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETCHAIN;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = 1;
	struct nfgenmsg *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	*g = (struct nfgenmsg){ .nfgen_family = NFPROTO_INET, .version = NFNETLINK_V0 };
	mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, table);
	mnl_attr_put_strz(nlh, NFTA_CHAIN_NAME, chain);
	unsigned int portid = mnl_socket_get_portid(nl);
	bool found = false;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		rc = -errno;
	while (rc == 0) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		int cb = n < 0 ? MNL_CB_ERROR : mnl_cb_run(buf, (size_t)n, 1, portid, chain_seen, &found);
		if (cb == MNL_CB_ERROR)
			rc = errno == ENOENT ? 0 : -(errno ? errno : EIO);
		if (cb <= MNL_CB_STOP)
			break;
	}
	mnl_socket_close(nl);
	return rc < 0 ? rc : found;
}

/* Writes value into the sysctl file rel (under /proc/sys/) of the namespace at path. */
int net_sysctls(const char *path, const char *const *rel, const char *value)
{
	int home, rc = enter(path, &home);
	if (rc < 0)
		return rc;
	for (; *rel && rc == 0; rel++) {
		char p[256];
		snprintf(p, sizeof(p), "/proc/sys/%s", *rel);
		int fd = open(p, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, value, strlen(value)) != (ssize_t)strlen(value))
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	leave(home);
	return rc;
}

/* A field "key=value" of line, its value into out. */
static bool field(const char *line, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key);
	for (const char *p = strstr(line, key); p; p = strstr(p + 1, key))
		if ((p == line || p[-1] == ' ') && p[klen] == '=') {
			snprintf(out, n, "%.*s", (int)strcspn(p + klen + 1, " \n"), p + klen + 1);
			return true;
		}
	return false;
}

bool net_flow_open(const char *line)
{
	/* "ipv4     2 tcp      6 117 TIME_WAIT src=... [ASSURED] mark=1 zone=0 use=2" */
	char family[8], proto[8], state[24];
	int pnum;
	long timeout;
	if (sscanf(line, "%7s %*d %7s %d %ld %23s", family, proto, &pnum, &timeout, state) != 5 ||
	    strcmp(proto, "tcp") != 0)
		return false;
	/* CLOSE: ended by a reset, no socket is left on either side. Every other state may hold
	 * one inside, time-wait included: which side waits there cannot be told from here when
	 * both closed at once (measured: the side whose FIN passed first was not the one left) */
	return strcmp(state, "CLOSE") != 0;
}

int net_open_flows(const struct sandbox *sb, char *first, size_t n)
{
	char edge[600], line[512];
	net_ns_path(sb, "edge", edge, sizeof(edge));
	int home, rc = enter(edge, &home);
	if (rc < 0)
		return rc;
	FILE *f = fopen("/proc/thread-self/net/nf_conntrack", "re");
	leave(home);
	if (!f)
		return errno == ENOENT ? 0 : -errno; /* no tracking yet: nothing was ever connected */
	int count = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!net_flow_open(line))
			continue;
		if (count++ == 0) {
			char state[24] = "", dst[48] = "", dport[8] = "", src[48] = "";
			sscanf(line, "%*s %*d %*s %*d %*d %23s", state);
			field(line, "src", src, sizeof(src));
			field(line, "dst", dst, sizeof(dst));
			field(line, "dport", dport, sizeof(dport));
			for (char *c = state; *c; c++)
				*c = (char)(*c == '_' ? '-' : *c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
			snprintf(first, n, "%s to %s port %s (%s)", src, dst, dport, state);
		}
	}
	fclose(f);
	return count;
}

static int tap_steps(struct link_nl *nl, const void *arg)
{
	(void)arg;
	int rc = link_tap("gw0");
	return rc < 0 ? rc : link_up(nl, "gw0");
}

int net_scratch(const char *dir, bool make, struct err *e)
{
	char net[600], edge[620];
	snprintf(net, sizeof(net), "%s/net", dir);
	snprintf(edge, sizeof(edge), "%s/edge", net);
	if (!make) {
		net_drop_ns(edge);
		rmdir(net);
		return 0;
	}
	int rc = mkdir(net, 0700) < 0 && errno != EEXIST ? -errno : net_make_ns(edge);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot make a network namespace at %s: %s", edge, strerror(-rc));
	return net_in_ns(edge, tap_steps, NULL, "make a tap", false, e);
}

int net_inner_open(const struct sandbox *sb)
{
	char in[600];
	net_inner_path(sb, in, sizeof(in));
	int fd = open(in, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int net_tap_open(const struct sandbox *sb, struct err *e)
{
	char edge[600];
	net_ns_path(sb, "edge", edge, sizeof(edge));
	int home = -1, rc = enter(edge, &home);
	if (rc < 0)
		return err_set(e, ERR_INTERNAL, -rc, "cannot enter %s's network namespace %s: %s", sb->id, edge,
			       strerror(-rc));
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "gw0");
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		fd = rc;
	}
	leave(home);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, -fd, "cannot open %s's tap: %s", sb->id, strerror(-fd));
	return fd;
}

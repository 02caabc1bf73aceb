/*
 * daemon/net/link.c - see link.h.
 */
#include "daemon/net/link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#define MSG_MAX 1024   /* a request: one link, address or route */
#define ANSWER_MAX 8192 /* an acknowledgement, or an error quoting the request */

int link_open(struct link_nl *nl)
{
	nl->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!nl->sock)
		return -errno;
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int rc = -errno;
		mnl_socket_close(nl->sock);
		nl->sock = NULL;
		return rc;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = (uint32_t)time(NULL);
	return 0;
}

void link_close(struct link_nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}

static struct nlmsghdr *start(struct link_nl *nl, char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = type;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	h->nlmsg_seq = ++nl->seq;
	return h;
}

/* Sends h and waits for its acknowledgement: 0, or the kernel's -errno. */
static int transact(struct link_nl *nl, struct nlmsghdr *h)
{
	if (mnl_socket_sendto(nl->sock, h, h->nlmsg_len) < 0)
		return -errno;
	char buf[ANSWER_MAX];
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (n < 0)
			return errno == EINTR ? -EINTR : -errno;
		int rc = mnl_cb_run(buf, (size_t)n, h->nlmsg_seq, nl->portid, NULL, NULL);
		if (rc == MNL_CB_ERROR)
			return -errno;
		if (rc == MNL_CB_STOP)
			return 0;
	}
}

/* A link message for name: by name, so no index is looked up first. */
static struct nlmsghdr *link_msg(struct link_nl *nl, char *buf, uint16_t type, uint16_t flags, const char *name,
				 struct ifinfomsg **ifi)
{
	struct nlmsghdr *h = start(nl, buf, type, flags);
	*ifi = mnl_nlmsg_put_extra_header(h, sizeof(**ifi));
	(*ifi)->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(h, IFLA_IFNAME, name);
	return h;
}

int link_veth(struct link_nl *nl, const char *name, const char *peer, int peer_ns)
{
	char buf[MSG_MAX];
	struct ifinfomsg *ifi;
	struct nlmsghdr *h = link_msg(nl, buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, name, &ifi);
	struct nlattr *info = mnl_attr_nest_start(h, IFLA_LINKINFO);
	mnl_attr_put_strz(h, IFLA_INFO_KIND, "veth");
	struct nlattr *data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
	struct nlattr *p = mnl_attr_nest_start(h, VETH_INFO_PEER);
	struct ifinfomsg *pifi = mnl_nlmsg_put_extra_header(h, sizeof(*pifi));
	pifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(h, IFLA_IFNAME, peer);
	mnl_attr_put_u32(h, IFLA_NET_NS_FD, (uint32_t)peer_ns);
	mnl_attr_nest_end(h, p);
	mnl_attr_nest_end(h, data);
	mnl_attr_nest_end(h, info);
	return transact(nl, h);
}

int link_tap(const char *name)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	int rc = ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, 1) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int link_up(struct link_nl *nl, const char *name)
{
	char buf[MSG_MAX];
	struct ifinfomsg *ifi;
	struct nlmsghdr *h = link_msg(nl, buf, RTM_NEWLINK, 0, name, &ifi);
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return transact(nl, h);
}

int link_del(struct link_nl *nl, const char *name)
{
	char buf[MSG_MAX];
	struct ifinfomsg *ifi;
	return transact(nl, link_msg(nl, buf, RTM_DELLINK, 0, name, &ifi));
}

int link_addr(struct link_nl *nl, const char *name, const char *addr, int prefix)
{
	struct in_addr a;
	unsigned idx = if_nametoindex(name);
	if (!idx)
		return -errno;
	if (inet_pton(AF_INET, addr, &a) != 1 || prefix < 0 || prefix > 32)
		return -EINVAL;
	char buf[MSG_MAX];
	struct nlmsghdr *h = start(nl, buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(h, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = idx;
	mnl_attr_put(h, IFA_LOCAL, sizeof(a), &a);
	mnl_attr_put(h, IFA_ADDRESS, sizeof(a), &a);
	return transact(nl, h);
}

int link_default_route(struct link_nl *nl, const char *dev, const char *via)
{
	struct in_addr gw;
	unsigned idx = if_nametoindex(dev);
	if (!idx)
		return -errno;
	if (inet_pton(AF_INET, via, &gw) != 1)
		return -EINVAL;
	char buf[MSG_MAX];
	struct nlmsghdr *h = start(nl, buf, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(h, sizeof(*rt));
	rt->rtm_family = AF_INET;
	rt->rtm_dst_len = 0;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	mnl_attr_put(h, RTA_GATEWAY, sizeof(gw), &gw);
	mnl_attr_put_u32(h, RTA_OIF, idx);
	return transact(nl, h);
}

int link_rule_add(struct link_nl *nl, const struct link_rule *r)
{
	struct in_addr from;
	if (inet_pton(AF_INET, r->from, &from) != 1 || r->from_len < 0 || r->from_len > 32)
		return -EINVAL;
	char buf[MSG_MAX];
	struct nlmsghdr *h = start(nl, buf, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL);
	struct fib_rule_hdr *fr = mnl_nlmsg_put_extra_header(h, sizeof(*fr));
	fr->family = AF_INET;
	fr->src_len = (uint8_t)r->from_len;
	fr->action = r->prohibit ? FR_ACT_PROHIBIT : FR_ACT_TO_TBL;
	fr->table = r->prohibit ? RT_TABLE_UNSPEC : RT_TABLE_MAIN;
	mnl_attr_put_u32(h, FRA_PRIORITY, r->prio);
	mnl_attr_put(h, FRA_SRC, sizeof(from), &from);
	if (r->iif)
		mnl_attr_put_strz(h, FRA_IIFNAME, r->iif);
	if (r->mask) {
		mnl_attr_put_u32(h, FRA_FWMARK, 0);
		mnl_attr_put_u32(h, FRA_FWMASK, r->mask);
	}
	int rc = transact(nl, h);
	return rc == -EEXIST ? 0 : rc;
}

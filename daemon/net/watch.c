/*
 * daemon/net/watch.c - the thread that puts sandboxes' rules back when they go (see net.h).
 *
 * Every NET_WATCH_MS it asks nftables whether table inet space_<tag> is whole (net_intact);
 * when it is not, whatever took it away, sandboxes already reach nothing beyond their host
 * (the routing rules refuse what the table did not mark), and the thread makes it again with
 * every sandbox's policy (net_restore), logging both. The thread owns nothing else; stopping
 * it wakes it at once.
 */
#include "daemon/net/net.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/base/log.h"

struct net_watch {
	pthread_t thread;
	int stopfd; /* an eventfd: readable once the thread is to stop */
};

static void *watch_main(void *arg)
{
	struct daemon *d = arg;
	struct pollfd stop = { .fd = d->net_watch->stopfd, .events = POLLIN };
	bool lost = false;
	for (;;) {
		int n = poll(&stop, 1, NET_WATCH_MS);
		if (n > 0 || (n < 0 && errno != EINTR))
			break; /* told to stop */
		if (net_intact(d))
			continue;
		struct err e = { 0 };
		if (!lost)
			log_warn("table inet space_%s is gone: sandboxes reach nothing beyond this host until it is back; "
				 "making it again",
				 d->net_tag);
		lost = net_restore(d, &e) < 0;
		if (lost)
			log_error("cannot put the sandboxes' rules back (trying again in %d ms): %s", NET_WATCH_MS, e.msg);
		else
			log_info("table inet space_%s is back, with every sandbox's policy", d->net_tag);
	}
	return NULL;
}

int net_watch_start(struct daemon *d)
{
	struct net_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int rc = w->stopfd < 0 ? -errno : 0;
	d->net_watch = w;
	if (rc == 0)
		rc = -pthread_create(&w->thread, NULL, watch_main, d);
	if (rc < 0) {
		if (w->stopfd >= 0)
			close(w->stopfd);
		free(w);
		d->net_watch = NULL;
	}
	return rc;
}

void net_watch_stop(struct daemon *d)
{
	struct net_watch *w = d->net_watch;
	if (!w)
		return;
	uint64_t one = 1;
	ssize_t n = write(w->stopfd, &one, sizeof(one));
	(void)n;
	pthread_join(w->thread, NULL);
	close(w->stopfd);
	free(w);
	d->net_watch = NULL;
}

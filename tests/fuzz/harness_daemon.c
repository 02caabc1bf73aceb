/*
 * tests/fuzz/harness_daemon.c - one running sandbox for the daemon-side fuzz
 * targets (see harness_daemon.h).
 */
#include "harness_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/core/peer.h"
#include "daemon/core/proc.h"
#include "daemon/core/sandbox.h"

static void connect_agent(struct fz *z)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		abort();
	}
	int big = 4 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	z->sb->chan.fd = sv[0];
	z->sb->chan.loop = &z->d.loop;
	z->sb->chan.phase = CHAN_READY;
	z->agent_fd = sv[1];
}

void fz_daemon_init(struct fz *z)
{
	memset(z, 0, sizeof(*z));
	struct daemon *d = &z->d;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->loop.epfd = d->loop.wakefd = -1;
	d->cfg.auto_resume = true;
	snprintf(d->cfg.state_dir, sizeof(d->cfg.state_dir), "/nonexistent/space-fuzz");
	struct sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		abort();
	snprintf(sb->id, sizeof(sb->id), "%s", FZ_SANDBOX_ID);
	snprintf(sb->conf.template, sizeof(sb->conf.template), "default");
	snprintf(sb->conf.dir, sizeof(sb->conf.dir), "%s/sandboxes/%s", d->cfg.state_dir, sb->id);
	sb->state = SB_RUNNING;
	sb->conf.cpus = 1;
	sb->conf.memory_mb = 512;
	sb->auto_resume = true;
	sb->conf.env = json_object();
	sb->conf.metadata = json_object();
	sb->d = d;
	peer_init(sb);
	z->sb = sb;
	d->sandboxes = sb;
	d->nsandboxes = 1;
	connect_agent(z);
}

void fz_drain(struct fz *z, uint8_t **out, size_t *n)
{
	struct buf b = { 0 };
	for (;;) {
		uint8_t *dst = buf_reserve(&b, 65536);
		if (!dst)
			break;
		ssize_t r = recv(z->agent_fd, dst, 65536, MSG_DONTWAIT);
		if (r <= 0)
			break;
		buf_commit(&b, (size_t)r);
	}
	*out = b.data;
	*n = b.len;
}

void fz_reset(struct fz *z)
{
	struct sandbox *sb = z->sb;
	while (sb->ops)
		op_unlink(sb->ops);
	while (sb->deferred)
		op_unlink(sb->deferred);
	for (struct proc *p = sb->procs; p; p = p->next)
		while (p->readers || p->waiters)
			op_unlink(p->readers ? p->readers : p->waiters);
	proc_free_all(sb);
	sb->pending_bytes = 0; /* the unread output of the processes just freed */
	buf_free(&sb->chan.wq);
	buf_free(&sb->chan.rbuf);
	sb->chan.want_out = false;
	sb->chan.broken = false;
	sb->chan.credit_tail = false;
	memset(&sb->peer, 0, sizeof(sb->peer));
	sb->state = SB_RUNNING;
	sb->reason[0] = '\0';
	sb->watched = false;
	sb->next_tag = 0;
	uint8_t *junk;
	size_t n;
	fz_drain(z, &junk, &n);
	free(junk);
	if (sb->chan.fd < 0) {
		close(z->agent_fd);
		connect_agent(z);
	}
	sb->chan.phase = CHAN_READY;
}

struct op *fz_op(struct fz *z, const uint8_t *body, size_t n)
{
	struct op *op = calloc(1, sizeof(*op));
	if (!op)
		abort();
	op->d = &z->d;
	op->query = json_object();
	snprintf(op->sbid, sizeof(op->sbid), "%s", FZ_SANDBOX_ID);
	if (n)
		buf_put(&op->body, body, n);
	return op;
}

void fz_op_free(struct op *op)
{
	op_unlink(op);
	op_free(op);
}

/*
 * daemon/io/loop.c - the I/O thread (see loop.h): epoll over registered
 * sources, timers, a tick once a second, and the hook that frees what was
 * retired between two rounds.
 */
#include "daemon/io/loop.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/io/timer.h"

#define LOOP_EVENTS 64
#define KEY_WAKE 0u   /* epoll data of the eventfd (sources are pointers, never 0 or 1) */
#define KEY_REAPER 1u

void loop_wake(struct loop *l)
{
	uint64_t one = 1;
	if (write(l->wakefd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake already */
	}
}

void loop_timer_add(struct loop *l, struct timer *t, int64_t when_ms)
{
	timer_add(&l->timers, t, when_ms);
	loop_wake(l);
}

void loop_timer_del(struct loop *l, struct timer *t)
{
	timer_del(&l->timers, t);
}

int loop_add(struct loop *l, struct loop_src *s, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int loop_mod(struct loop *l, struct loop_src *s, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct loop *l, int fd)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	const struct loop_hooks *h = l->hooks;
	struct epoll_event evs[LOOP_EVENTS];
	int64_t next_tick = 0;

	while (!__atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE)) {
		h->lock(l->ctx);
		int64_t now = mono_ms();
		int wait_ms = timer_next(&l->timers, now);
		int tick_in = next_tick > now ? (int)(next_tick - now) : 0;
		if (wait_ms < 0 || wait_ms > tick_in)
			wait_ms = tick_in;
		h->unlock(l->ctx);
		int n = epoll_wait(l->epfd, evs, LOOP_EVENTS, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			uint64_t key = evs[i].data.u64;
			if (key == KEY_WAKE) {
				uint64_t v;
				if (read(l->wakefd, &v, sizeof(v)) < 0) {
					/* EAGAIN: drained already */
				}
			} else if (key == KEY_REAPER) {
				h->reaper(l->ctx);
			} else {
				struct loop_src *s = evs[i].data.ptr;
				h->lock(l->ctx);
				s->fn(s, evs[i].events);
				h->unlock(l->ctx);
			}
		}
		h->lock(l->ctx);
		now = mono_ms();
		timer_fire(&l->timers, now);
		if (now >= next_tick) {
			h->tick(l->ctx);
			next_tick = now + LOOP_TICK_MS;
		}
		h->unlock(l->ctx);
		h->after(l->ctx);
	}
	return NULL;
}

int loop_start(struct loop *l, const struct loop_hooks *hooks, void *ctx, int reaper_fd)
{
	l->hooks = hooks;
	l->ctx = ctx;
	l->reaper_fd = reaper_fd;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->epfd < 0 || l->wakefd < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = KEY_WAKE };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0)
		return -errno;
	if (reaper_fd >= 0) {
		struct epoll_event rev = { .events = EPOLLIN, .data.u64 = KEY_REAPER };
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, reaper_fd, &rev) < 0)
			return -errno;
	}
	return -pthread_create(&l->thread, NULL, loop_main, l);
}

void loop_stop(struct loop *l)
{
	__atomic_store_n(&l->stopping, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(l->wakefd, &one, sizeof(one)) == sizeof(one))
		pthread_join(l->thread, NULL);
}

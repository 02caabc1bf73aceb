/*
 * daemon/io/loop.h - the I/O thread: one epoll set for every agent socket,
 * request deadlines (timer.h), and a tick once a second.
 *
 * The loop knows no sandbox: it calls back what registered with it. A
 * source's callback, the timers and the hooks all run with the owner's lock
 * held (hooks->lock). A source may be closed by any thread under that lock;
 * the memory holding it must stay valid until hooks->after runs, which is the
 * one place, between two rounds of events, where the owner frees what it
 * retired.
 */
#ifndef SPACE_DAEMON_IO_LOOP_H
#define SPACE_DAEMON_IO_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define LOOP_TICK_MS 1000 /* period of hooks->tick */

struct loop_src {
	/* Called with the events epoll reported; must re-check that its descriptor is still open. */
	void (*fn)(struct loop_src *s, uint32_t events);
};

struct loop_hooks {
	void (*lock)(void *ctx);
	void (*unlock)(void *ctx);
	void (*tick)(void *ctx);  /* once a second, locked */
	void (*after)(void *ctx); /* after every round of events, unlocked: free what was retired */
	void (*reaper)(void *ctx); /* the reaper descriptor (loop_start's reaper_fd) is readable */
};

struct timer;

struct loop {
	int epfd, wakefd, reaper_fd;
	pthread_t thread;
	bool stopping;
	struct timer *timers;      /* [locked] armed timers, earliest first */
	const struct loop_hooks *hooks;
	void *ctx;
};

/* Creates the epoll set (reaper_fd: a descriptor to watch for hooks->reaper, or -1) and starts
 * the thread. Returns 0 or -errno. */
int loop_start(struct loop *l, const struct loop_hooks *hooks, void *ctx, int reaper_fd);
/* Stops the thread and waits for it. */
void loop_stop(struct loop *l);

/* Watches fd for events (EPOLL*), calling s->fn. Returns 0 or -errno. */
int loop_add(struct loop *l, struct loop_src *s, int fd, uint32_t events);
int loop_mod(struct loop *l, struct loop_src *s, int fd, uint32_t events);
void loop_del(struct loop *l, int fd);
/* Makes the thread go round once more (something was retired). */
void loop_wake(struct loop *l);
/* Arms t on the loop's clock (mono_ms) and makes the loop sleep no longer than that. [locked] */
void loop_timer_add(struct loop *l, struct timer *t, int64_t when_ms);
/* Disarms t. [locked] */
void loop_timer_del(struct loop *l, struct timer *t);

#endif

/*
 * daemon/io/timer.c - deadlines kept in a list sorted by time (see timer.h).
 */
#include "daemon/io/timer.h"

#include <stddef.h>

void timer_add(struct timer **list, struct timer *t, int64_t when_ms)
{
	timer_del(list, t);
	t->when = when_ms;
	t->armed = true;
	struct timer **pp = list;
	while (*pp && (*pp)->when <= when_ms)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
}

void timer_del(struct timer **list, struct timer *t)
{
	if (!t->armed)
		return;
	for (struct timer **pp = list; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->armed = false;
	t->next = NULL;
}

int timer_next(struct timer *const *list, int64_t now)
{
	if (!*list)
		return -1;
	int64_t left = (*list)->when - now;
	return left < 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

void timer_fire(struct timer **list, int64_t now)
{
	while (*list && (*list)->when <= now) {
		struct timer *t = *list;
		timer_del(list, t);
		t->fn(t);
	}
}

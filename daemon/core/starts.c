/*
 * daemon/core/starts.c - at most --max-starting sandboxes boot at once (see starts.h).
 *
 * Turns are tickets: the n-th asked may begin once fewer than `slots` of the tickets before it
 * are still booting, which is n < done + slots. Every ticket below done + slots may then run, and
 * entered - done never passes slots whichever order turns end in. Tickets begin in the order they
 * were asked, so a sandbox is never passed over for ever.
 */
#include <unistd.h>

#include "daemon/base/expo.h"
#include "daemon/core/starts.h"

void starts_init(struct starts *s, int slots)
{
	if (slots <= 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		slots = cpus < STARTS_MIN_DEFAULT ? STARTS_MIN_DEFAULT : cpus > STARTS_MAX ? STARTS_MAX : (int)cpus;
	}
	*s = (struct starts){ .slots = slots };
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->turn, NULL);
}

void starts_destroy(struct starts *s)
{
	pthread_cond_destroy(&s->turn);
	pthread_mutex_destroy(&s->lock);
}

void starts_enter(struct starts *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t ticket = s->asked++;
	if (ticket >= s->done + (uint64_t)s->slots) {
		s->waited++;
		while (ticket >= s->done + (uint64_t)s->slots)
			pthread_cond_wait(&s->turn, &s->lock);
	}
	s->entered++;
	pthread_mutex_unlock(&s->lock);
}

void starts_leave(struct starts *s)
{
	pthread_mutex_lock(&s->lock);
	s->done++;
	pthread_cond_broadcast(&s->turn);
	pthread_mutex_unlock(&s->lock);
}

int starts_write(struct starts *s, struct buf *b)
{
	pthread_mutex_lock(&s->lock);
	uint64_t booting = s->entered - s->done, waiting = s->asked - s->entered, waited = s->waited;
	int slots = s->slots;
	pthread_mutex_unlock(&s->lock);
	int rc = expo_family(b, "space_sandbox_starts", "gauge",
			     "Sandboxes booting now (runtime started, no hello from the agent yet) and waiting "
			     "their turn to (spaced --max-starting).");
	if (rc == 0)
		rc = expo_sample(b, "space_sandbox_starts", (const char *const[]){ "phase", "booting", NULL },
				 (double)booting);
	if (rc == 0)
		rc = expo_sample(b, "space_sandbox_starts", (const char *const[]){ "phase", "waiting", NULL },
				 (double)waiting);
	if (rc == 0)
		rc = expo_family(b, "space_sandbox_starts_max", "gauge", "Sandboxes that may boot at once (--max-starting).");
	if (rc == 0)
		rc = expo_sample(b, "space_sandbox_starts_max", NULL, slots);
	if (rc == 0)
		rc = expo_family(b, "space_sandbox_start_waits_total", "counter",
				 "Boots that waited for their turn (spaced --max-starting).");
	if (rc == 0)
		rc = expo_sample(b, "space_sandbox_start_waits_total", NULL, (double)waited);
	return rc;
}

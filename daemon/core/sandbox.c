/*
 * daemon/core/sandbox.c - the registry of sandboxes: finding one, picking a new one's id,
 * counting a tenant's against its limit, adding and removing one, the driver that runs it,
 * its idle and lifetime clocks, failing it, and retiring and freeing it once no job holds it.
 *
 * The rest of a sandbox's life has a file each: its JSON view (sandbox_view.c), the jobs that
 * watch its agent (sandbox_live.c), create and delete (sandbox_create.c), a change of its
 * network (sandbox_net.c) and re-adoption at start (sandbox_adopt.c); what they share of the
 * registry's own is declared in sandbox_private.h.
 */
#include "daemon/core/sandbox.h"
#include "daemon/core/sandbox_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/driver/driver.h"
#include "daemon/core/isolation.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/peer.h"
#include "daemon/core/proc.h"
#include "daemon/store/store.h"

const struct driver_slot *sandbox_driver(struct daemon *d, const struct sandbox *sb)
{
	const struct driver_slot *k = isolation_find(d, sb->conf.isolation);
	return k && k->ops ? k : NULL;
}

/* Why this host cannot run sb's kind (sandbox_driver is NULL). */
const char *sandbox_unrunnable_why(struct daemon *d, const struct sandbox *sb)
{
	const struct driver_slot *k = isolation_find(d, sb->conf.isolation);
	return k ? k->why : "this spaced does not know that kind";
}

/* Fills *e for sb, whose kind this host cannot run. Returns -ENOTSUP. */
int sandbox_unrunnable(struct daemon *d, const struct sandbox *sb, struct err *e)
{
	return err_set(e, ERR_ISOLATION_UNAVAILABLE, ENOTSUP,
		       "sandbox %s is isolated by %s, which is unavailable on this host: %s", sb->id, sb->conf.isolation,
		       sandbox_unrunnable_why(d, sb));
}

struct sandbox *sandbox_find(struct daemon *d, const char *id)
{
	for (struct sandbox *sb = d->sandboxes; sb; sb = sb->next)
		if (strcmp(sb->id, id) == 0)
			return sb;
	return NULL;
}

int sandbox_random_hex(char *out, size_t n)
{
	uint8_t r[SANDBOX_TOKEN_LEN / 2];
	if (n / 2 > sizeof(r) || getrandom(r, n / 2, 0) != (ssize_t)(n / 2))
		return -EIO;
	for (size_t i = 0; i < n / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

int sandbox_registry_pick_id(struct daemon *d, char out[SANDBOX_ID_LEN + 1])
{
	do {
		if (sandbox_random_hex(out, SANDBOX_ID_LEN) < 0)
			return -EIO;
	} while (sandbox_find(d, out));
	return 0;
}

int sandbox_room(struct daemon *d, const char *tenant, struct err *e)
{
	if (tenant && *tenant) {
		int owned = 0;
		for (struct sandbox *o = d->sandboxes; o; o = o->next)
			owned += strcmp(o->conf.tenant, tenant) == 0;
		if (owned >= TENANT_MAX_SANDBOXES)
			return err_set(e, ERR_TOO_MANY, EAGAIN, "a tenant may have at most %d sandboxes",
				       TENANT_MAX_SANDBOXES);
	}
	return 0;
}

void sandbox_registry_add(struct daemon *d, struct sandbox *sb)
{
	struct sandbox **pp = &d->sandboxes;
	while (*pp)
		pp = &(*pp)->next;
	*pp = sb;
	d->nsandboxes++;
}

void sandbox_registry_remove(struct daemon *d, struct sandbox *sb)
{
	for (struct sandbox **pp = &d->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			d->nsandboxes--;
			return;
		}
}

void sandbox_touch(struct sandbox *sb)
{
	sb->deadline_ms = sb->timeout_s > 0 ? now_ms() + (int64_t)(sb->timeout_s * 1000) : 0;
}

void sandbox_set_lifetime(struct sandbox *sb, double seconds)
{
	sb->lifetime_s = seconds;
	sb->expires_ms = seconds > 0 ? now_ms() + (int64_t)(seconds * 1000) : 0;
}

void sandbox_free(struct sandbox *sb)
{
	chan_close(&sb->chan);
	proc_free_all(sb);
	json_decref(sb->conf.env);
	json_decref(sb->conf.metadata);
	json_decref(sb->network);
	free(sb->start_cmd);
	free(sb->ready_cmd);
	free(sb->metrics);
	free(sb);
}

bool sandbox_usable(const struct sandbox *sb, struct err *e)
{
	if (sb->state != SB_RUNNING) {
		err_set(e, ERR_CONFLICT, EBUSY, "sandbox %s is %s", sb->id, sb_state_name(sb->state));
		snprintf(e->state, sizeof(e->state), "%s", sb_state_name(sb->state));
		return false;
	}
	if (!peer_ready(sb)) {
		err_set(e, ERR_UNAVAILABLE, ENOTCONN, "sandbox %s: its agent is not connected", sb->id);
		return false;
	}
	return true;
}

/* Fails every request linked to sb or its processes. [L] */
void sandbox_fail_all(struct sandbox *sb, const struct err *e)
{
	op_fail_list(&sb->deferred, e);
	op_fail_list(&sb->ops, e);
	op_fail_process_requests(sb, e);
}

void sandbox_fail(struct daemon *d, struct sandbox *sb, const char *reason)
{
	sb->state = SB_FAILED;
	snprintf(sb->reason, sizeof(sb->reason), "%s", reason);
	if (store_save_now(d->store, sb) < 0)
		log_warn("sandbox %s: cannot record that it failed", sb->id);
	struct err e = { 0 };
	err_set(&e, ERR_SANDBOX_FAILED, EIO, "sandbox %s failed: %s", sb->id, reason);
	snprintf(e.state, sizeof(e.state), "%s", sb_state_name(sb->state));
	sandbox_fail_all(sb, &e);
	log_warn("sandbox %s failed: %s", sb->id, reason);
}

void sandbox_retire(struct daemon *d, struct sandbox *sb)
{
	sb->dead = true;
	chan_close(&sb->chan);
	sb->grave = d->graveyard;
	d->graveyard = sb;
	loop_wake(&d->loop);
}

void sandbox_reap(struct daemon *d)
{
	daemon_lock(d);
	struct sandbox *g = d->graveyard, *keep = NULL, *free_list = NULL;
	d->graveyard = NULL;
	while (g) {
		/* a job still holding it finishes first; a later pass frees it */
		struct sandbox *next = g->grave;
		struct sandbox **to = g->refs > 0 ? &keep : &free_list;
		g->grave = *to;
		*to = g;
		g = next;
	}
	d->graveyard = keep;
	daemon_unlock(d);
	while (free_list) {
		struct sandbox *next = free_list->grave;
		sandbox_free(free_list);
		free_list = next;
	}
}

int sandbox_sync_layer(struct daemon *d, struct sandbox *sb)
{
	char upper[700];
	const struct driver_slot *dv = sandbox_driver(d, sb);
	driver_layer(dv, sb, upper, sizeof(upper));
	int fd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = syncfs(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

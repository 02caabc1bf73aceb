/*
 * daemon/core/sandbox_adopt.c - re-adoption of the recorded sandboxes when spaced starts.
 *
 * Each recorded sandbox is brought in line with what its driver says runs and which images
 * are on disk (reconcile): an interrupted transition ends in its old state or its new one,
 * a sandbox whose processes are gone is failed, files kept; a create never confirmed or a
 * delete under way is left deleting for the sweep (core/sweep.c) to finish.
 */
#include "daemon/core/sandbox.h"
#include "daemon/core/sandbox_private.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/net/net.h"
#include "daemon/driver/driver.h"
#include "daemon/base/log.h"
#include "daemon/core/op.h"
#include "daemon/core/lifecycle.h"
#include "daemon/core/peer.h"
#include "daemon/store/store.h"

/* Whether dir holds a file called name. */
static bool is_file_in(const char *dir, const char *name)
{
	char p[760];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Where a sandbox recorded in state `st` really is, given what the driver says
 * and which images are on disk. Every answer is the old state or the new one of
 * the interrupted transition, except when the processes are gone: then failed.
 */
static enum sb_state reconcile(struct daemon *d, struct sandbox *sb, enum driver_state ds)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);
	char image[700], tmp[720];
	snprintf(image, sizeof(image), "%s/checkpoint", sb->conf.dir);
	snprintf(tmp, sizeof(tmp), "%s/checkpoint.tmp", sb->conf.dir);
	bool have_image = is_dir(image);
	struct err e = { 0 };

	switch (sb->state) {
	case SB_RUNNING:
	case SB_PAUSING:
	case SB_PAUSED:
		return ds == DRV_RUNNING ? SB_RUNNING : ds == DRV_PAUSED ? SB_PAUSED : SB_FAILED;
	case SB_RESUMING:
		if (ds == DRV_RUNNING)
			return SB_RUNNING;
		if (ds == DRV_PAUSED) /* restored but not yet continued (a microVM's -S): finish it */
			return driver_resume(dv, sb, &e) == 0 ? SB_RUNNING : SB_PAUSED;
		if (have_image) {
			driver_stop(dv, sb, &e);
			return SB_SUSPENDED;
		}
		return SB_FAILED;
	case SB_SUSPENDING:
		/* only a marked image is whole and synced (lifecycle.c); anything else is not one */
		have_image = have_image && is_file_in(image, LIFECYCLE_IMAGE_MARK);
		if (!have_image && ds == DRV_RUNNING)
			return SB_RUNNING; /* the checkpoint had not happened: the agent reconnects */
		if (!have_image && is_file_in(tmp, LIFECYCLE_IMAGE_MARK) && rename(tmp, image) == 0)
			have_image = true; /* whole and synced; only its publishing was cut short */
		if (!have_image && ds == DRV_PAUSED && driver_resume(dv, sb, &e) == 0) {
			/* stopped for a checkpoint that was never published, its memory still held (a
			 * microVM after its migration): it goes on from where it stopped */
			log_info("sandbox %s: its interrupted suspend was undone; it runs on from memory", sb->id);
			return SB_RUNNING;
		}
		if (!have_image && is_dir(tmp) && (ds == DRV_STOPPED || ds == DRV_ABSENT) &&
		    driver_stop(dv, sb, &e) == 0 && sandbox_sync_layer(d, sb) == 0 &&
		    driver_prepare(dv, sb, &e) == 0 && driver_restore(dv, sb, tmp, &e) == 0) {
			/* runsc stopped it (a microVM's QEMU ended) for a checkpoint that may or may
			 * not have finished: the image is never trusted as a suspend, but a restore
			 * that takes proves it whole, and the sandbox runs on from where it stopped,
			 * its files as they were then */
			log_info("sandbox %s: its interrupted suspend was undone from the unpublished image", sb->id);
			return SB_RUNNING;
		}
		if (!have_image)
			return SB_FAILED;
		driver_stop(dv, sb, &e);
		return SB_SUSPENDED;
	case SB_SUSPENDED:
		if (ds != DRV_ABSENT)
			driver_stop(dv, sb, &e);
		return have_image ? SB_SUSPENDED : SB_FAILED;
	default:
		return sb->state;
	}
}

/* Brings one recorded sandbox in line with what the driver says runs. */
static void adopt(struct daemon *d, struct sandbox *sb)
{
	const struct driver_slot *dv = sandbox_driver(d, sb);

	if (sb->state == SB_CREATING || sb->state == SB_DELETING) {
		/* A create never confirmed or a delete under way: the sweep after adoption finishes
		 * it by destroying it (core/sweep.c), or keeps it failed if that does not finish. */
		log_info("sandbox %s: was %s when spaced stopped; removing it", sb->id, sb_state_name(sb->state));
		sb->state = SB_DELETING;
		sandbox_registry_add(d, sb);
		return;
	}
	if (!dv) {
		/* Its kind cannot run under this spaced: neither it nor its record is touched, so a
		 * spaced that runs its kind again adopts it as it was. Until then it shows failed. */
		log_warn("sandbox %s: isolation %s is unavailable on this host: %s; left %s as it was", sb->id,
			 sb->conf.isolation, sandbox_unrunnable_why(d, sb), sb_state_name(sb->state));
		snprintf(sb->reason, sizeof(sb->reason), "isolation %s is unavailable on this host (it was %s): %s",
			 sb->conf.isolation, sb_state_name(sb->state), sandbox_unrunnable_why(d, sb));
		sb->state = SB_FAILED;
		sandbox_registry_add(d, sb);
		return;
	}
	enum driver_state ds = driver_state(dv, sb);
	enum sb_state was = sb->state;
	enum sb_state now = reconcile(d, sb, ds);
	if (now != was || was != SB_FAILED) {
		if (now == SB_FAILED && was != SB_FAILED)
			snprintf(sb->reason, sizeof(sb->reason),
				 "its processes were gone when spaced started (it was %s); files kept", sb_state_name(was));
		sb->state = now;
		if (now != was) {
			if (store_save_now(d->store, sb) < 0)
				log_warn("sandbox %s: cannot record that it is now %s", sb->id, sb_state_name(now));
			log_info("sandbox %s: was %s, now %s", sb->id, sb_state_name(was), sb_state_name(now));
		}
	}
	sandbox_registry_add(d, sb);
	struct err ne = { 0 };
	if (sb->network && net_apply(d, sb, &ne) < 0) /* net_init made the host's table afresh */
		log_warn("sandbox %s: cannot put its network policy back: %s", sb->id, ne.msg);
	if (sb->state == SB_RUNNING || sb->state == SB_PAUSED) {
		sandbox_touch(sb); /* the idle timeout starts again with the new spaced */
		int rc = peer_listen(d, sb);
		if (rc < 0)
			log_warn("sandbox %s: cannot listen for its agent: %s", sb->id, strerror(-rc));
		else
			log_info("sandbox %s: adopted (%s)", sb->id, sb_state_name(sb->state));
	}
}

/* A sandbox recorded before it had a token of a kind gets one, recorded before it is served. */
static void give_tokens(struct daemon *d, struct sandbox *sb)
{
	char *const tokens[] = { sb->conf.access_token, sb->conf.traffic_token };
	int made = 0;
	for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
		if (tokens[i][0] != '\0')
			continue;
		if (sandbox_random_hex(tokens[i], SANDBOX_TOKEN_LEN) < 0)
			log_warn("sandbox %s: no randomness for a token; what it guards stays closed", sb->id);
		else
			made++;
	}
	if (made && store_put_sandbox(d->store, sb) < 0)
		log_warn("sandbox %s: cannot record its new tokens", sb->id);
}

int sandbox_adopt_all(struct daemon *d)
{
	struct sandbox *list = NULL;
	int rc = store_load_sandboxes(d->store, &list);
	if (rc < 0)
		return rc;
	for (struct sandbox *sb = list; sb; sb = sb->next) {
		json_t *tpl = store_template_config(d->store, sb->conf.template);
		sandbox_take_defaults(sb, tpl);
		json_decref(tpl);
		give_tokens(d, sb);
	}
	daemon_lock(d);
	while (list) {
		struct sandbox *sb = list;
		list = sb->next;
		sb->next = NULL;
		sb->d = d;
		peer_init(sb);
		snprintf(sb->conf.dir, sizeof(sb->conf.dir), "%s/sandboxes/%s", d->cfg.state_dir, sb->id);
		adopt(d, sb);
	}
	daemon_unlock(d);
	return 0;
}

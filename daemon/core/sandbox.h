/*
 * daemon/core/sandbox.h - the sandbox registry and the life of a sandbox:
 * creation and deletion as jobs off the request path, re-adoption of running
 * sandboxes when spaced starts, and their JSON views.
 *
 * One module in six files, one job each: the registry (sandbox.c), the JSON view
 * (sandbox_view.c), the jobs that watch a running sandbox's agent (sandbox_live.c), create and
 * delete (sandbox_create.c), a change of network policy (sandbox_net.c) and adoption at start
 * (sandbox_adopt.c).
 */
#ifndef SPACE_DAEMON_SANDBOX_H
#define SPACE_DAEMON_SANDBOX_H

#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/host/err.h"

struct op;

struct sb_config {
	char template[64];
	const char *isolation; /* a kind this host runs (isolation_pick), or NULL for the default */
	int cpus, memory_mb, disk_mb;
	double timeout_s;
	double lifetime_s;
	bool timeout_kill;
	bool keepalive;
	json_t *env;       /* borrowed */
	json_t *metadata;  /* borrowed */
	const char *snapshot; /* start from this snapshot directory instead of booting */
	const char *tenant;   /* owner; NULL or "" for the administrator */
	const json_t *network; /* its egress policy in normal form (net/policy.h); NULL: the default */
	bool no_network;       /* no network at all: no interface, only loopback inside */
	bool public_ports;     /* its ports through the proxy need no access token */
	bool auto_resume;      /* a request for its agent resumes it when paused or suspended */
	const struct sb_volume *volumes; /* the volumes it mounts (core/volume.h), nvolumes of them */
	int nvolumes;
};

/*
 * The driver that runs sb (its kind's slot: call slot->ops->X(slot->drv, sb, ...)), or NULL
 * when this host cannot run sb's kind. Only a sandbox adopted at start can meet NULL, and
 * adoption keeps one such failed (reason said) and untouched: the callers that can see it
 * (adoption, destroy, delete) check; the rest act on sandboxes that are running or were.
 */
const struct driver_slot *sandbox_driver(struct daemon *d, const struct sandbox *sb);

/* The sandbox with this id, or NULL. [L] */
struct sandbox *sandbox_find(struct daemon *d, const char *id);

/*
 * Registers a new sandbox and starts its creation on a job thread; op is
 * finished with the sandbox (201) or an error once the agent has said hello.
 * Returns 0 or -errno with *e filled. [L]
 */
int sandbox_create(struct daemon *d, const struct sb_config *cfg, struct op *op, struct err *e);

/*
 * Registers a new sandbox (state creating; sandbox_build records it) and writes its
 * template's rootfs path into rootfs. Returns it, or NULL with *e set. [L]
 */
struct sandbox *sandbox_new(struct daemon *d, const struct sb_config *cfg, char *rootfs, size_t n, struct err *e);

/* Unregisters and frees a sandbox sandbox_new registered that no job took. [L] */
void sandbox_forget(struct daemon *d, struct sandbox *sb);

/* 0 when tenant (NULL or "": the administrator, unlimited) may own one more sandbox, else 429
 * in e and -EAGAIN. [L] */
int sandbox_room(struct daemon *d, const char *tenant, struct err *e);

/* Gives a running sandbox of the warm pool what a create asks (core/pool.h): owner, metadata,
 * timeouts, access, a new access token, the create's environment over its own; its lifetime
 * counts from now. The agent's environment and the record are the caller's. 0 or -errno. [L] */
int sandbox_claim(struct daemon *d, struct sandbox *sb, const struct sb_config *cfg, struct err *e);

/*
 * Records a registered sandbox, then brings it up: root filesystem, agent socket, then boot, or a
 * restore from `snapshot` (a snapshot directory: image/ and upper/). On failure
 * everything is undone and sb is freed, or, when undoing fails, sb stays failed
 * (sandbox_destroy). Blocks; call without d->lock.
 */
int sandbox_build(struct daemon *d, struct sandbox *sb, const char *rootfs, const char *snapshot, struct err *e);

/* Starts deleting sb on a job thread; op is finished with 204. [L] */
int sandbox_delete(struct daemon *d, struct sandbox *sb, struct op *op, struct err *e);

/* Starts deleting every sandbox whose metadata has key (spaced's own marks: a build's step, a
 * warm pool's), logging each as "sandbox ID <what> is removed". Takes d->lock. */
void sandbox_delete_marked(struct daemon *d, const char *key, const char *what);

/* The reason a sandbox is failed with when destroying it did not finish (what went wrong
 * follows): it is kept, recorded, until a delete or the next start finishes the destroy. */
#define SANDBOX_UNDESTROYED "delete failed: "

/*
 * Destroys sb (driver destroy: processes, mounts, files) and forgets it (record, registry;
 * sb is retired, so the caller must hold a reference to use it after). When the destroy
 * fails, sb stays, failed with SANDBOX_UNDESTROYED and *e's message. Blocks; call without
 * d->lock. Returns 0 or -errno with *e filled.
 */
int sandbox_destroy(struct daemon *d, struct sandbox *sb, struct err *e);

/* Whether sb waits for a destroy to finish: deleting (at start: left so by the spaced before)
 * or failed with SANDBOX_UNDESTROYED. [L] */
bool sandbox_undestroyed(const struct sandbox *sb);

/*
 * Loads the sandboxes recorded in the store, adopts those that still run,
 * and reconciles the rest. Called once at start, before the API opens.
 */
int sandbox_adopt_all(struct daemon *d);

json_t *sandbox_json(const struct sandbox *sb);              /* [L] */

/*
 * Marks sb failed with `reason` (recorded), and fails every request waiting on it.
 * Its files are kept; it can only be deleted. [L]
 */
void sandbox_fail(struct daemon *d, struct sandbox *sb, const char *reason);

/* Watches a running sandbox whose agent connection dropped unasked: if the agent does not come
 * back and the sandbox no longer runs, the sandbox is failed with the reason. [L] */
void sandbox_watch(struct daemon *d, struct sandbox *sb);

/* The agent of a running sandbox left a ping unanswered past its deadline: a job continues it
 * (something inside may have stopped it with SIGSTOP) and, if it still does not answer within
 * another deadline, stops the sandbox and fails it as unresponsive, files kept. [L] */
void sandbox_unresponsive(struct daemon *d, struct sandbox *sb);
/* Waits on d->cond until cond(sb) holds or timeout_ms pass; whether it holds. [L] */
bool sandbox_wait(struct daemon *d, struct sandbox *sb, bool (*cond)(struct sandbox *), int timeout_ms);
/* Records activity on sb: its idle timeout starts again. [L] */
void sandbox_touch(struct sandbox *sb);
/* Gives sb a lifetime of seconds from now (0: none): it expires then, whatever it does. [L] */
void sandbox_set_lifetime(struct sandbox *sb, double seconds);
/* syncfs of the filesystem holding sb's writable layer. Blocks. */
int sandbox_sync_layer(struct daemon *d, struct sandbox *sb);

/* Looks at sb's PID 1 from the host on a job (driver pid1_state) and continues it if it is
 * stopped: an impostor holding the agent's socket can answer pings, not hide that. [L] */
void sandbox_probe(struct daemon *d, struct sandbox *sb);
/* Takes sb (already out of the registry, every op unlinked) out of service: its channel is
 * closed now, its memory freed by sandbox_reap once no job holds it. [L] */
void sandbox_retire(struct daemon *d, struct sandbox *sb);
/* Frees retired sandboxes no job holds any more. Takes d->lock. I/O thread only. */
void sandbox_reap(struct daemon *d);
void sandbox_free(struct sandbox *sb);

/* Gives sb (one with a network) the egress policy `policy` (normal form, net/policy.h) on a
 * job: the rules first, for new connections at once, then the record; op is answered 200
 * with the sandbox. A sandbox being made, deleted or failed is refused (409). [L] */
int sandbox_set_network(struct daemon *d, struct sandbox *sb, const json_t *policy, struct op *op, struct err *e);


/* Whether sb may take requests for its agent; fills *e (409/503) if not. [L] */
bool sandbox_usable(const struct sandbox *sb, struct err *e);

#endif

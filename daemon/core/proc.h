/*
 * daemon/core/proc.h - the records of a sandbox's processes: looked up by
 * pid, bounded in number, and shown as JSON.
 *
 * The agent names processes (A_STARTED, A_PROC, output and exits), and what
 * names them may be an impostor, so a sandbox holds at most
 * SANDBOX_MAX_PROCS_TRACKED records, of which at most SANDBOX_MAX_EXITED
 * exited ones are kept once nobody reads or waits on them. [L] throughout.
 */
#ifndef SPACE_DAEMON_CORE_PROC_H
#define SPACE_DAEMON_CORE_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "daemon/daemon.h"
#include "lib/frame.h"

/* The record of pid, or NULL. */
struct proc *proc_find(struct sandbox *sb, uint32_t pid);
/* The record of pid, made if there is none: NULL when the sandbox already holds
 * SANDBOX_MAX_PROCS_TRACKED records (or memory ran out). */
struct proc *proc_get(struct sandbox *sb, uint32_t pid);
/* Number of records sb holds. */
int proc_count(const struct sandbox *sb);
/* Forgets the oldest exited processes past SANDBOX_MAX_EXITED. */
void proc_prune(struct sandbox *sb);
/* Forgets running records known only from an agent's word (never started by spaced) that the
 * current agent's listing did not name and nobody reads or waits on: what an impostor made up.
 * A real process among them is named again by the real agent's next listing. */
void proc_forget_unlisted(struct sandbox *sb);
/*
 * Keeps a frame of p's (output of type SP_A_STDOUT/SP_A_STDERR, or an SP_A_OOM report) for its
 * next reader; sb->pending_bytes counts what every process keeps. Under "block" everything is
 * kept: -EPROTO past two windows for p (more than the agent's credit allows) or past
 * SANDBOX_MAX_PENDING. Under "drop" only the most recent PROC_DROP_KEEP bytes are kept, within
 * what SANDBOX_MAX_PENDING leaves, and output pushed out or not kept is added to p->dropped.
 * Returns 0, -EPROTO, or -ENOMEM.
 */
int proc_keep(struct sandbox *sb, struct proc *p, uint8_t type, const uint8_t *data, uint32_t n);
/* Frees every record (the sandbox is being freed). */
void proc_free_all(struct sandbox *sb);

json_t *proc_json(const struct proc *p);
/* Whether any process of sb still runs. */
bool proc_any_running(const struct sandbox *sb);

#endif

/*
 * daemon/core/proc.c - process records (see proc.h).
 */
#include "daemon/core/proc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct proc *proc_find(struct sandbox *sb, uint32_t pid)
{
	for (struct proc *p = sb->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

int proc_count(const struct sandbox *sb)
{
	int n = 0;
	for (const struct proc *p = sb->procs; p; p = p->next)
		n++;
	return n;
}

struct proc *proc_get(struct sandbox *sb, uint32_t pid)
{
	struct proc *p = proc_find(sb, pid);
	if (p)
		return p;
	if (proc_count(sb) >= SANDBOX_MAX_PROCS_TRACKED)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->started_ms = now_ms();
	p->stdin_credit = SP_WINDOW; /* a fresh record: the agent's window for it is whole */
	p->next = sb->procs;
	sb->procs = p;
	return p;
}

static void proc_free(struct sandbox *sb, struct proc *p)
{
	sb->pending_bytes -= p->pending_raw < sb->pending_bytes ? p->pending_raw : sb->pending_bytes;
	buf_free(&p->pending);
	free(p->cmd);
	json_decref(p->spec);
	free(p);
}

/* Forgets the oldest frame p keeps, counting its output as dropped. */
static void forget_oldest(struct sandbox *sb, struct proc *p)
{
	const uint8_t *h = buf_head(&p->pending);
	uint32_t n = frame_get_u32(h + 1);
	if (h[0] != SP_A_OOM) {
		p->dropped += n;
		p->pending_out -= n;
	}
	p->pending_raw -= n;
	sb->pending_bytes -= n;
	buf_consume(&p->pending, 5 + (size_t)n);
}

int proc_keep(struct sandbox *sb, struct proc *p, uint8_t type, const uint8_t *data, uint32_t n)
{
	bool out = type != SP_A_OOM;
	if (!p->drop) {
		if (p->pending_raw + (uint64_t)n > 2 * SP_WINDOW || sb->pending_bytes + n > SANDBOX_MAX_PENDING)
			return -EPROTO;
	} else {
		if (n > PROC_DROP_KEEP) { /* only its end can be kept (a memory report is whole or not at all) */
			uint32_t cut = out ? n - PROC_DROP_KEEP : n;
			p->dropped += out ? cut : 0;
			data += cut;
			n -= cut;
		}
		while (buf_avail(&p->pending) >= 5 &&
		       (p->pending_raw + n > PROC_DROP_KEEP || sb->pending_bytes + n > SANDBOX_MAX_PENDING))
			forget_oldest(sb, p);
		if (n == 0 || sb->pending_bytes + n > SANDBOX_MAX_PENDING) {
			p->dropped += out ? n : 0; /* the sandbox's room is taken by other processes */
			return 0;
		}
	}
	uint8_t h[5] = { type };
	frame_put_u32(h + 1, n);
	if (buf_put(&p->pending, h, sizeof(h)) < 0 || buf_put(&p->pending, data, n) < 0)
		return -ENOMEM;
	sb->pending_bytes += n;
	p->pending_raw += n;
	if (out)
		p->pending_out += n;
	return 0;
}

void proc_prune(struct sandbox *sb)
{
	int exited = 0;
	for (struct proc *p = sb->procs; p; p = p->next)
		exited += p->exited && !p->readers && !p->waiters;
	/* The list is newest first: drop exited records from the tail. */
	while (exited > SANDBOX_MAX_EXITED) {
		struct proc **victim = NULL;
		for (struct proc **pp = &sb->procs; *pp; pp = &(*pp)->next)
			if ((*pp)->exited && !(*pp)->readers && !(*pp)->waiters)
				victim = pp;
		struct proc *p = *victim;
		*victim = p->next;
		proc_free(sb, p);
		exited--;
	}
}

void proc_forget_unlisted(struct sandbox *sb)
{
	for (struct proc **pp = &sb->procs; *pp;) {
		struct proc *p = *pp;
		if (!p->exited && !p->listed && p->hearsay && !p->readers && !p->waiters) {
			*pp = p->next;
			proc_free(sb, p);
		} else {
			pp = &p->next;
		}
	}
}

void proc_free_all(struct sandbox *sb)
{
	while (sb->procs) {
		struct proc *p = sb->procs;
		sb->procs = p->next;
		proc_free(sb, p);
	}
}

bool proc_any_running(const struct sandbox *sb)
{
	for (const struct proc *p = sb->procs; p; p = p->next)
		if (!p->exited)
			return true;
	return false;
}

json_t *proc_json(const struct proc *p)
{
	char when[32];
	time_t t = (time_t)(p->started_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *o = json_pack("{s:i, s:s, s:s, s:o, s:o, s:s, s:b, s:i}", "pid", p->pid, "cmd", p->cmd ? p->cmd : "",
			      "state", p->exited ? "exited" : "running", "exit_code",
			      p->exited ? json_integer(p->code) : json_null(), "signal",
			      p->exited && p->signo ? json_integer(p->signo) : json_null(), "started_at", when,
			      "oom_killed", p->oom_killed, "oom_kills", (int)p->oom_kills);
	if (o && p->spec) /* started by this spaced: argv, env, cwd, tag as asked */
		json_object_update(o, p->spec);
	if (o) {
		json_object_set_new(o, "output", json_string(p->drop ? "drop" : "block"));
		json_object_set_new(o, "readers", json_integer(p->nreaders));
	}
	return o;
}

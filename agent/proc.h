/*
 * agent/proc.h - the processes the agent runs for the host.
 *
 * A process is started by H_EXEC and from then on addressed by its pid. Its
 * stdout and stderr are read only while it has output credit, so a process
 * whose output nobody takes blocks on its pipe; nothing is dropped. When the
 * process (the leader of its own session) is reaped, both pipes are drained
 * and A_EXIT follows its last output frame. The last SP_EXITED_KEEP exited
 * processes are remembered for H_PS.
 */
#ifndef SPACE_AGENT_PROC_H
#define SPACE_AGENT_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lib/frame.h"

struct agent;
struct pollset;

#define AGENT_MAX_PROCS 64u      /* processes running at once */
#define AGENT_CMDLINE_MAX 1024u  /* bytes of a cmdline kept for H_PS */
#define AGENT_CREDIT_MAX (1ull << 30) /* credit saturates here */

struct stdin_chunk {
	struct stdin_chunk *next;
	uint64_t generation; /* connection it arrived on: only those bytes earn A_CREDIT */
	size_t len, off;
	uint8_t data[];
};

enum proc_state {
	PROC_FREE = 0,
	PROC_RUNNING, /* leader alive */
	PROC_EXITED,  /* leader reaped, pipes being drained, A_EXIT not yet queued */
};

struct proc {
	enum proc_state state;
	pid_t pid;              /* also the process group and session */
	int out[2];             /* stdout, stderr read ends; -1 once done */
	int in;                 /* stdin write end; -1 if none or closed */
	bool pty;               /* out[0] and in are a terminal's master (SP_EXEC_PTY) */
	int keeper;             /* the terminal's keeper's control pipe (spawn.h, gVisor), or -1 */
	uint64_t credit;        /* output bytes the agent may still queue */
	uint64_t queued;        /* output bytes queued, not yet written to the host */
	struct stdin_chunk *in_head, *in_tail;
	bool in_close;          /* close stdin once the queue is written */
	uint64_t in_unacked;    /* stdin bytes of this connection not yet credited back */
	uint64_t deadline;      /* monotonic ms of the timeout, 0 if none */
	bool timedout;
	bool oom;               /* killed by the memory watcher (oom.c) */
	int code, signo;        /* valid once PROC_EXITED */
	uint64_t started_ms;
	char *cmdline;
};

struct proc_exited {
	pid_t pid;
	int code, signo;
	uint64_t started_ms;
	char *cmdline;
};

struct proc_table {
	struct proc slots[AGENT_MAX_PROCS];
	struct proc_exited exited[SP_EXITED_KEEP]; /* ring, oldest at exited_next when full */
	unsigned exited_next, exited_count;
};

void proc_init(struct agent *a);

/* Request handlers (the frame's fixed size is already checked). Return 0, or
 * -EPROTO for a frame that must close the connection. */
int proc_exec(struct agent *a, const struct frame *f);
int proc_stdin(struct agent *a, const struct frame *f);
int proc_signal(struct agent *a, const struct frame *f);
int proc_resize(struct agent *a, const struct frame *f);
int proc_ps(struct agent *a, const struct frame *f);

/* Whether pid is a process the host started that still runs. */
bool proc_started(struct agent *a, uint32_t pid);

/* Tells the host that the memory watcher killed victim, which belonged to the started
 * process owner (victim itself, when owner == victim: its exit then says so). */
void proc_oom(struct agent *a, uint32_t owner, uint32_t victim, uint64_t rss, uint64_t used, uint64_t limit,
	      const char *cmdline);

/* H_CREDIT for a pid channel. */
void proc_credit(struct agent *a, uint32_t pid, uint32_t bytes);

/* Reaps every child that exited (the signalfd fired). */
void proc_reap(struct agent *a);

/* Kills process groups whose timeout expired. */
void proc_tick(struct agent *a, uint64_t now);

/* Earliest timeout, monotonic ms, or UINT64_MAX. */
uint64_t proc_deadline(const struct agent *a);

/* Adds the pipes that can make progress now to the poll set. */
void proc_watch(struct agent *a, struct pollset *ps);

/* A new connection: output credit becomes SP_WINDOW minus what is still
 * queued, stdin credit starts afresh. */
void proc_on_connect(struct agent *a);

/* Highest pid running or remembered, for A_HELLO. */
uint32_t proc_max_pid(const struct agent *a);

#endif

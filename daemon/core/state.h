/*
 * daemon/core/state.h - the sandbox state machine: which operation may start in
 * which state, and through which transitional state.
 *
 * Pure functions over the table in state.c; the callers hold d->lock and
 * record each state in the store before acting on it. Where a transition ends is
 * the job's to say, from what its steps did (core/lifecycle.c, core/sandbox_create.c):
 * a failed resume leaves the image, and the sandbox suspended; a failed suspend ends
 * running, paused or failed depending on the step that failed.
 */
#ifndef SPACE_DAEMON_STATE_H
#define SPACE_DAEMON_STATE_H

enum sb_state {
	SB_CREATING,
	SB_RUNNING,
	SB_PAUSING,
	SB_PAUSED,
	SB_RESUMING,
	SB_SUSPENDING,
	SB_SUSPENDED,
	SB_FAILED,
	SB_DELETING,
	SB_NSTATES,
};

enum sb_action {
	ACT_PAUSE,
	ACT_RESUME,
	ACT_SUSPEND,
	ACT_DELETE,
	ACT_NACTIONS,
};

enum state_verdict {
	STATE_BEGIN = 0,    /* move to *via, do the work; the job says where it ends */
	STATE_ALREADY = 1,  /* the target state already holds: succeed without work */
	STATE_ILLEGAL = -1, /* not allowed now: answer 409 with the current state */
};

/* Whether action a may start in state s; on STATE_BEGIN, *via is the transitional state. */
enum state_verdict state_begin(enum sb_state s, enum sb_action a, enum sb_state *via);

const char *sb_state_name(enum sb_state s);
/* The state called name, or -1. */
int sb_state_parse(const char *name);

#endif

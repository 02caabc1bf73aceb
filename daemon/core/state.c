/*
 * daemon/core/state.c - the sandbox state machine (see state.h), as a table of
 * what each action does from each state. The lifecycle page (docs/lifecycle.md)
 * draws the same graph.
 */
#include "daemon/core/state.h"

#include <string.h>

static const char *const names[SB_NSTATES] = {
	[SB_CREATING] = "creating",   [SB_RUNNING] = "running",       [SB_PAUSING] = "pausing",
	[SB_PAUSED] = "paused",       [SB_RESUMING] = "resuming",     [SB_SUSPENDING] = "suspending",
	[SB_SUSPENDED] = "suspended", [SB_FAILED] = "failed",         [SB_DELETING] = "deleting",
};

#define ILLEGAL { STATE_ILLEGAL, 0 }
#define BEGIN(via) { STATE_BEGIN, via }
#define ALREADY { STATE_ALREADY, 0 }

static const struct {
	enum state_verdict verdict;
	enum sb_state via;
} table[SB_NSTATES][ACT_NACTIONS] = {
	/*                  pause              resume               suspend               delete */
	[SB_CREATING] =   { ILLEGAL,           ILLEGAL,             ILLEGAL,              ILLEGAL },
	[SB_RUNNING] =    { BEGIN(SB_PAUSING), ALREADY,             BEGIN(SB_SUSPENDING), BEGIN(SB_DELETING) },
	[SB_PAUSING] =    { ALREADY,           ILLEGAL,             ILLEGAL,              ILLEGAL },
	[SB_PAUSED] =     { ALREADY,           BEGIN(SB_RESUMING),  BEGIN(SB_SUSPENDING), BEGIN(SB_DELETING) },
	[SB_RESUMING] =   { ILLEGAL,           ALREADY,             ILLEGAL,              ILLEGAL },
	[SB_SUSPENDING] = { ILLEGAL,           ILLEGAL,             ALREADY,              ILLEGAL },
	[SB_SUSPENDED] =  { ILLEGAL,           BEGIN(SB_RESUMING),  ALREADY,              BEGIN(SB_DELETING) },
	[SB_FAILED] =     { ILLEGAL,           ILLEGAL,             ILLEGAL,              BEGIN(SB_DELETING) },
	[SB_DELETING] =   { ILLEGAL,           ILLEGAL,             ILLEGAL,              ALREADY },
};

enum state_verdict state_begin(enum sb_state s, enum sb_action a, enum sb_state *via)
{
	if ((unsigned)s >= SB_NSTATES || (unsigned)a >= ACT_NACTIONS)
		return STATE_ILLEGAL;
	if (table[s][a].verdict == STATE_BEGIN)
		*via = table[s][a].via;
	return table[s][a].verdict;
}

const char *sb_state_name(enum sb_state s)
{
	return (unsigned)s < SB_NSTATES ? names[s] : "unknown";
}

int sb_state_parse(const char *name)
{
	for (int i = 0; i < SB_NSTATES; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/*
 * agent/probe.h - what space-agent answers when the host runs it beside the
 * sandbox's PID 1 (`space-agent --pid1-state`, started by the runtime, not
 * through the agent's channel): the state of PID 1 as the sandbox's kernel
 * reports it. Whatever holds the channel can answer pings; it cannot change
 * what the kernel says of PID 1.
 */
#ifndef SPACE_AGENT_PROBE_H
#define SPACE_AGENT_PROBE_H

/* Prints the State letter of /proc/1/status on stdout. Returns the exit status: 0, or 1 when
 * /proc is not the kernel's (statfs) or the line is missing. */
int probe_pid1_state(void);

#endif

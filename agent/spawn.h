/*
 * agent/spawn.h - starting one process: pipes, fork, the child's setup and
 * exec, and the environment it gets.
 *
 * The child runs in a new session (its pid is its process group), with
 * signals reset, stdin from a pipe or /dev/null, stdout and stderr on
 * separate pipes; or, asked for a terminal, with a new pseudo-terminal as its
 * controlling terminal and all three. A failure before exec comes back to the parent through a
 * close-on-exec pipe, so the caller gets the errno instead of a pid.
 */
#ifndef SPACE_AGENT_SPAWN_H
#define SPACE_AGENT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../lib/user.h"

struct spawn_req {
	const char *path;         /* the program to run; NULL: argv[0], searched in PATH */
	char *const *argv;        /* argc entries and a NULL */
	size_t argc;
	char *const *envp;        /* complete environment, NULL-terminated */
	const char *cwd;
	const struct user_info *user; /* ids to switch to */
	bool want_stdin;          /* stdin is a pipe (else /dev/null) */
	bool pty;                 /* a terminal of its own instead (want_stdin is then implied) */
	unsigned short rows, cols; /* the terminal's size */
	bool keeper;              /* with pty: under a keeper (below) */
};

struct spawn_out {
	pid_t pid;
	int keeper;  /* the keeper's control pipe (write end), or -1 */
	int in;      /* write end of stdin, or -1 (a terminal: its master, a descriptor of its own) */
	int out;     /* read end of stdout (a terminal: its master, where all its output comes) */
	int err;     /* read end of stderr, or -1 for a terminal */
};

/*
 * Starts the process. Returns 0 with every descriptor in *o non-blocking and
 * close-on-exec, or -errno with a message ("exec ls: No such file or
 * directory") in msg.
 */
int spawn_start(const struct spawn_req *r, struct spawn_out *o, char *msg, size_t msglen);

/*
 * The keeper of a terminal, for gVisor, whose terminal raises no signal itself (neither the
 * SIGINT of Ctrl-C nor the SIGWINCH of a resize) and tells no one outside its session which
 * process group is in its foreground (docs/architecture.md). The process spawn_start starts
 * is then `space-agent KEEPER_ARG CTL REPORT -- argv...`: it leads the terminal's session, runs
 * the program as its child and ends as the program ends (its exit status, or killed by the
 * same signal). Each byte the agent writes to its control pipe is a signal number (SIGINT,
 * SIGQUIT, SIGTSTP, SIGWINCH) for the terminal's foreground process group, which the keeper,
 * in the session, can ask for (tcgetpgrp). The program's failure to start comes back through
 * the report pipe as if no keeper stood between.
 */
#define KEEPER_ARG "--pty-keeper"
int spawn_keeper_main(int argc, char **argv);

/*
 * Builds the environment of a process: the agent's own minus SPACE_*
 * variables, PATH and LANG defaults when unset, HOME=home, then `over`
 * (KEY=VALUE entries, later ones win). The array is malloc'd, its strings are
 * borrowed from the inputs or allocated in *strings (free both with
 * spawn_env_free). Returns 0 or -ENOMEM.
 */
int spawn_env(char *const *base, const char *const *over, size_t nover, const char *home,
	      char ***envp, char **strings);
void spawn_env_free(char **envp, char *strings);

/* Every command started after this call joins the cgroup whose cgroup.procs fd is open for
 * writing (O_CLOEXEC; kept by spawn.c), before its program runs. */
void spawn_set_cgroup(int procs_fd);

#endif

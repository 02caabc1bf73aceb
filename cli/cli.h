/*
 * cli/cli.h - what every command of `space` shares: the exit codes, the
 * context a command runs in, how errors and usage are reported, how option
 * values are parsed, and the handlers the command table in main.c lists.
 *
 * A handler gets argv with argv[0] naming the command ("space exec") and
 * returns the process's exit status. Handlers print their data on stdout and
 * report each failure exactly once on stderr through cli_report().
 */
#ifndef SPACE_CLI_CLI_H
#define SPACE_CLI_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/client/client.h"

enum {
	CLI_EXIT_FAIL = 1,           /* an API error, a local failure */
	CLI_EXIT_USAGE = 2,          /* bad command line */
	CLI_EXIT_DAEMON = 125,       /* spaced unreachable; exec/run: anything not the command's */
	CLI_EXIT_CANNOT_INVOKE = 126,/* exec/run: the command exists but cannot be started */
	CLI_EXIT_NOT_FOUND = 127,    /* exec/run: the command does not exist */
	CLI_EXIT_INTERRUPTED = 130,  /* stopped by Ctrl-C before the command ran */
};

struct cli {
	struct client client;
	const char *name;  /* "space exec", for messages */
	const char *usage; /* the running command's usage text */
	int usage_exit;    /* exit status for a bad command line (2, or 125 for exec/run/attach) */
};

/*
 * Prints err as one line on stderr - "space: <message> (<code>)" for an API
 * error, the "cannot reach spaced" line when the daemon is unreachable - and
 * returns the exit status it calls for: CLI_EXIT_DAEMON when spaced could not
 * be reached or talked to, CLI_EXIT_FAIL otherwise.
 */
int cli_report(const struct cli *cli, const struct client_err *err);

/* Prints "space: <message>" on stderr; returns CLI_EXIT_FAIL. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "<name>: <message>" and a pointer to --help; returns cli->usage_exit. */
int cli_usage_error(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the command's usage on stdout; returns 0. */
int cli_help(const struct cli *cli);

/* A subcommand of a command (`space snapshot ls`): its word and what runs it. */
struct cli_sub {
	const char *word;
	int (*run)(struct cli *cli, int argc, char **argv);
};

/* Runs the one of subs[0..n) that argv[1] names, as "NAME WORD" in messages (getopt's too);
 * returns its exit status, or -1 when argv[1] names none. */
int cli_run_sub(struct cli *cli, int argc, char **argv, const struct cli_sub *subs, size_t n);

/* After getopt returned '?' (getopt has printed why): the --help pointer; returns cli->usage_exit. */
int cli_bad_option(const struct cli *cli);

/* Sets obj[K] = V from "K=V" (K non-empty). Returns 0 or -EINVAL. */
int cli_kv_add(json_t *obj, const char *kv);

/* Parses the options of a command that takes only --json and --help into *as_json: 0 to go
 * on, -1 after --help, else the exit status of a bad option (said). */
int cli_json_flag(struct cli *cli, int argc, char **argv, int *as_json);

/* "/v1/<collection>/<escaped name>" (malloc'd; NULL without memory). */
char *cli_named_path(const char *collection, const char *name);

/* Parses a whole decimal integer in [min, max]. Returns 0 or -EINVAL. */
int cli_parse_int(const char *s, long min, long max, long *out);

/* Parses seconds ("30", "0.5") into a new JSON number (integer when whole). 0 or -EINVAL. */
int cli_parse_seconds(const char *s, json_t **out);

/* Prints v as indented JSON and a newline on stdout. Returns 0 or CLI_EXIT_FAIL. */
int cli_print_json(json_t *v);

/* Fills row (one cell a column) for one item of a listing; a cell may point into buf (n bytes),
 * which the next call reuses. */
typedef void cli_row_fn(json_t *item, const char **row, char *buf, size_t n);

/* A listing's JSON array as JSON (as_json), or as a table under header's ncols columns, a row
 * an item (cli/table.h). Returns the command's exit status. */
int cli_print_list(json_t *list, bool as_json, size_t ncols, const char *const *header, cli_row_fn *fn);

/* `space X ls [--json]`: GET path and its array `key` printed with cli_print_list. Returns the
 * command's exit status. */
int cli_list(struct cli *cli, int argc, char **argv, const char *path, const char *key, size_t ncols,
	     const char *const *header, cli_row_fn *fn);

/* A command `space NAME [--json] ID` that lists a sandbox's <key> from GET
 * /v1/sandboxes/ID<suffix> with cli_print_list. Returns the command's exit status. */
int cli_sandbox_listing(struct cli *cli, int argc, char **argv, const char *suffix, const char *key, size_t ncols,
			const char *const *header, cli_row_fn *fn);

/* Builds "/v1/sandboxes/<escaped id><suffix>" (malloc'd; NULL without memory). */
char *cli_sandbox_path(const char *id, const char *suffix);

/*
 * `space rm` and `space snapshot rm`: [-f] ID..., each removed with DELETE on path_of(id)
 * (malloc'd) and printed; with -f an id that does not exist is not an error. `what` names
 * the ids in the usage message. Returns the exit status.
 */
int cli_remove(struct cli *cli, int argc, char **argv, const char *what, char *(*path_of)(const char *id));
/* GETs path_of(name) for each of the n names and prints its JSON; an error is reported and the
 * next one tried (spaced unreachable ends it). Returns the exit status. */
int cli_inspect_each(struct cli *cli, char **names, int n, char *(*path_of)(const char *name));

/*
 * With SPACE_VERBOSE set (and not "0"), the client's on_resumed hook: says on
 * stderr that spaced resumed the sandbox of the request at path for it.
 */
void cli_note_resumed(const char *path);

/*
 * The options of `space create`, which `space run` takes too: entries for a
 * struct option table, and the handling of one of them (getopt's opt and
 * optarg) into the JSON body of POST /v1/sandboxes. cmd_create_opt returns
 * 0, or the exit status of a bad value (after saying why).
 */
#define CMD_CREATE_OPTIONS                                        \
	{ "template", required_argument, NULL, 'T' },             \
	{ "cpus", required_argument, NULL, 'C' },                 \
	{ "memory", required_argument, NULL, 'M' },               \
	{ "disk", required_argument, NULL, 'D' },                 \
	{ "timeout", required_argument, NULL, 'O' },              \
	{ "env", required_argument, NULL, 'e' },                  \
	{ "label", required_argument, NULL, 'l' },                \
	{ "lifetime", required_argument, NULL, 'L' },             \
	{ "timeout-action", required_argument, NULL, 'A' },       \
	{ "keepalive-processes", no_argument, NULL, 'K' },        \
	{ "from-snapshot", required_argument, NULL, 'S' },        \
	{ "isolation", required_argument, NULL, 'I' },            \
	{ "egress", required_argument, NULL, CLI_OPT_EGRESS },    \
	{ "allow", required_argument, NULL, CLI_OPT_ALLOW },      \
	{ "deny", required_argument, NULL, CLI_OPT_DENY },        \
	{ "no-network", no_argument, NULL, CLI_OPT_NO_NETWORK },   \
	{ "auto-resume", no_argument, NULL, CLI_OPT_AUTO_RESUME }, \
	{ "no-auto-resume", no_argument, NULL, CLI_OPT_NO_AUTO_RESUME }, \
	{ "volume", required_argument, NULL, CLI_OPT_VOLUME }
#define CMD_CREATE_OPTCHARS "e:l:"
/* options with no letter: values past every character */
enum {
	CLI_OPT_EGRESS = 0x1000, CLI_OPT_ALLOW, CLI_OPT_DENY, CLI_OPT_NO_NETWORK, CLI_OPT_NO_ALLOW, CLI_OPT_NO_DENY,
	CLI_OPT_AUTO_RESUME, CLI_OPT_NO_AUTO_RESUME, CLI_OPT_VOLUME
};
/* --volume NAME:/path[:ro] into body's "volumes" array (made when missing). 0 or an exit status. */
int cli_volume_opt(const struct cli *cli, const char *arg, json_t *body);
/* --egress, --allow, --deny into body's "network" object (made when missing). 0 or an exit status. */
int cli_network_opt(const struct cli *cli, int opt, const char *arg, json_t *body);
int cmd_create_opt(const struct cli *cli, int opt, const char *arg, json_t *body);
/*
 * After the last option: whether they make sense together (--from-snapshot
 * excludes --template, --cpus, --memory and --disk, which come from the snapshot).
 * Returns 0, or the exit status of a bad command line (after saying why).
 */
int cmd_create_check(const struct cli *cli, json_t *body);
/* POST /v1/sandboxes with body; returns 0 and the new sandbox (caller json_decref()s). */
int cmd_create_sandbox(struct cli *cli, json_t *body, json_t **sandbox, struct client_err *err);

/* The commands (cmd_sandbox.c, cmd_exec.c, cmd_cp.c, cmd_lifecycle.c). */
int cmd_create(struct cli *cli, int argc, char **argv);
int cmd_ls(struct cli *cli, int argc, char **argv);
int cmd_inspect(struct cli *cli, int argc, char **argv);
int cmd_rm(struct cli *cli, int argc, char **argv);
/* `space template build` and `space template import` (cmd_build.c), from cmd_template. */
int cmd_template_build(struct cli *cli, int argc, char **argv);
int cmd_template_import(struct cli *cli, int argc, char **argv);
int cmd_template(struct cli *cli, int argc, char **argv);
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_version(struct cli *cli, int argc, char **argv);
int cmd_exec(struct cli *cli, int argc, char **argv);
int cmd_run(struct cli *cli, int argc, char **argv);
int cmd_shell(struct cli *cli, int argc, char **argv);
int cmd_ps(struct cli *cli, int argc, char **argv);
int cmd_attach(struct cli *cli, int argc, char **argv);
int cmd_cp(struct cli *cli, int argc, char **argv);
int cmd_pause(struct cli *cli, int argc, char **argv);
int cmd_resume(struct cli *cli, int argc, char **argv);
int cmd_timeout(struct cli *cli, int argc, char **argv);
int cmd_suspend(struct cli *cli, int argc, char **argv);
int cmd_sync(struct cli *cli, int argc, char **argv);
int cmd_snapshot(struct cli *cli, int argc, char **argv);
int cmd_fork(struct cli *cli, int argc, char **argv);
int cmd_ports(struct cli *cli, int argc, char **argv);
int cmd_watch(struct cli *cli, int argc, char **argv);
int cmd_metrics(struct cli *cli, int argc, char **argv);
int cmd_network(struct cli *cli, int argc, char **argv);
int cmd_port_forward(struct cli *cli, int argc, char **argv);
int cmd_system(struct cli *cli, int argc, char **argv);
int cmd_volume(struct cli *cli, int argc, char **argv);

extern const char cmd_create_usage[], cmd_ls_usage[], cmd_inspect_usage[], cmd_rm_usage[],
	cmd_template_usage[], cmd_status_usage[], cmd_version_usage[], cmd_exec_usage[],
	cmd_run_usage[], cmd_shell_usage[], cmd_ps_usage[], cmd_attach_usage[], cmd_cp_usage[], cmd_pause_usage[],
	cmd_resume_usage[], cmd_suspend_usage[], cmd_sync_usage[], cmd_timeout_usage[], cmd_snapshot_usage[],
	cmd_fork_usage[], cmd_ports_usage[], cmd_metrics_usage[], cmd_port_forward_usage[], cmd_network_usage[],
	cmd_watch_usage[], cmd_system_usage[], cmd_volume_usage[];

#endif

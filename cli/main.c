/*
 * cli/main.c - `space`, the command-line client of spaced: the command table
 * and the dispatch to one handler.
 *
 * main() runs these phases: find the command (or print help), set up the
 * process (SIGPIPE ignored so a closed pipe is an error we handle, libcurl
 * initialised), connect the client to SPACE_HOST with SPACE_TOKEN and SPACE_CA (and, with
 * SPACE_VERBOSE, a note on stderr when spaced resumed a sandbox for us), run
 * the handler, clean up, and return the handler's exit status. Handlers live
 * in cmd_sandbox.c, cmd_exec.c, cmd_cp.c and cmd_lifecycle.c; the conventions
 * they share in cli.c.
 */
#include "cli.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
	const char *summary;
	const char *usage;
	int usage_exit; /* exit status of a bad command line */
};

static const struct command commands[] = {
	{ "create", cmd_create, "Create a sandbox and print its id", cmd_create_usage, CLI_EXIT_USAGE },
	{ "ls", cmd_ls, "List sandboxes", cmd_ls_usage, CLI_EXIT_USAGE },
	{ "inspect", cmd_inspect, "Show sandboxes as JSON", cmd_inspect_usage, CLI_EXIT_USAGE },
	{ "exec", cmd_exec, "Run a command in a sandbox, streaming its output", cmd_exec_usage, CLI_EXIT_DAEMON },
	{ "shell", cmd_shell, "Open an interactive terminal in a sandbox", cmd_shell_usage, CLI_EXIT_DAEMON },
	{ "run", cmd_run, "Create a sandbox, run one command in it, remove it", cmd_run_usage, CLI_EXIT_DAEMON },
	{ "cp", cmd_cp, "Copy a file into or out of a sandbox", cmd_cp_usage, CLI_EXIT_USAGE },
	{ "pause", cmd_pause, "Freeze sandboxes in memory", cmd_pause_usage, CLI_EXIT_USAGE },
	{ "resume", cmd_resume, "Resume paused or suspended sandboxes", cmd_resume_usage, CLI_EXIT_USAGE },
	{ "suspend", cmd_suspend, "Write sandboxes to disk and release their memory", cmd_suspend_usage, CLI_EXIT_USAGE },
	{ "snapshot", cmd_snapshot, "Snapshot a sandbox; list or remove snapshots", cmd_snapshot_usage, CLI_EXIT_USAGE },
	{ "fork", cmd_fork, "Copy a running sandbox into new ones", cmd_fork_usage, CLI_EXIT_USAGE },
	{ "timeout", cmd_timeout, "Move when a sandbox's idle timeout or lifetime ends", cmd_timeout_usage,
	  CLI_EXIT_USAGE },
	{ "sync", cmd_sync, "Make what sandboxes wrote durable on disk", cmd_sync_usage, CLI_EXIT_USAGE },
	{ "rm", cmd_rm, "Remove sandboxes", cmd_rm_usage, CLI_EXIT_USAGE },
	{ "ps", cmd_ps, "List the processes of a sandbox", cmd_ps_usage, CLI_EXIT_USAGE },
	{ "network", cmd_network, "Show or change a sandbox's egress policy", cmd_network_usage, CLI_EXIT_USAGE },
	{ "metrics", cmd_metrics, "Show what a sandbox used of its CPUs, memory and disk", cmd_metrics_usage,
	  CLI_EXIT_USAGE },
	{ "ports", cmd_ports, "List the TCP ports listening in a sandbox", cmd_ports_usage, CLI_EXIT_USAGE },
	{ "port-forward", cmd_port_forward, "Carry local TCP connections to a port in a sandbox", cmd_port_forward_usage,
	  CLI_EXIT_USAGE },
	{ "watch", cmd_watch, "Print the changes made to a folder of a sandbox as they happen", cmd_watch_usage,
	  CLI_EXIT_USAGE },
	{ "attach", cmd_attach, "Stream the output of a running process", cmd_attach_usage, CLI_EXIT_DAEMON },
	{ "template", cmd_template, "Templates: ls, inspect, rm, build, import", cmd_template_usage, CLI_EXIT_USAGE },
	{ "volume", cmd_volume, "Volumes, storage that outlives sandboxes: create, ls, inspect, rm", cmd_volume_usage,
	  CLI_EXIT_USAGE },
	{ "system", cmd_system, "The machine's cache: df, prune", cmd_system_usage, CLI_EXIT_USAGE },
	{ "status", cmd_status, "Show where spaced is and what it runs", cmd_status_usage, CLI_EXIT_USAGE },
	{ "version", cmd_version, "Show the client's and the daemon's versions", cmd_version_usage, CLI_EXIT_USAGE },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_overview(FILE *out)
{
	fputs("Usage: space COMMAND [OPTIONS] [ARGS...]\n"
	      "\n"
	      "Run code in isolated sandboxes managed by spaced.\n"
	      "\n"
	      "Commands:\n", out);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fputs("  help         Show this help, or a command's: space help COMMAND\n"
	      "\n"
	      "Environment:\n"
	      "  SPACE_HOST   where spaced listens: " CLIENT_DEFAULT_HOST " (default),\n"
	      "               or http://HOST:PORT, https://HOST:PORT\n"
	      "  SPACE_TOKEN  bearer token, needed when spaced listens on TCP\n"
	      "  SPACE_CA     CA bundle (PEM) that signed spaced's https certificate;\n"
	      "               default: the system's\n"
	      "  SPACE_VERBOSE\n"
	      "               1: say on stderr when spaced resumed a paused or\n"
	      "               suspended sandbox to serve a command\n"
	      "\n"
	      "Run 'space COMMAND --help' for more on a command.\n", out);
}

static int help(int argc, char **argv)
{
	if (argc < 3) {
		print_overview(stdout);
		return 0;
	}
	const struct command *cmd = find_command(argv[2]);
	if (!cmd) {
		fprintf(stderr, "space: unknown command '%s'. Run 'space help'.\n", argv[2]);
		return CLI_EXIT_USAGE;
	}
	fputs(cmd->usage, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	struct client_err err = { 0 };
	char name[64];
	int status;

	if (argc < 2) {
		print_overview(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return help(argc, argv);
	if (!strcmp(argv[1], "--version"))
		argv[1] = "version";
	const struct command *cmd = find_command(argv[1]);
	if (!cmd) {
		fprintf(stderr, "space: unknown command '%s'. Run 'space help'.\n", argv[1]);
		return CLI_EXIT_USAGE;
	}

	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "space: cannot initialise libcurl\n");
		return CLI_EXIT_DAEMON;
	}
	snprintf(name, sizeof(name), "space %s", cmd->name);
	cli.name = name;
	cli.usage = cmd->usage;
	cli.usage_exit = cmd->usage_exit;
	if (client_init(&cli.client, getenv("SPACE_HOST"), getenv("SPACE_TOKEN"), getenv("SPACE_CA"), &err) < 0) {
		cli_report(&cli, &err);
		curl_global_cleanup();
		return CLI_EXIT_DAEMON;
	}
	const char *verbose = getenv("SPACE_VERBOSE");
	if (verbose && *verbose && strcmp(verbose, "0"))
		cli.client.on_resumed = cli_note_resumed;

	argv[1] = name;
	status = cmd->run(&cli, argc - 1, argv + 1);

	fflush(stdout);
	client_fini(&cli.client);
	curl_global_cleanup();
	return status;
}

/*
 * cli/cmd_exec.c - the commands that run things in a sandbox: exec, run,
 * ps and attach.
 *
 * exec streams a command's output (POST /exec with "stream": true), or with
 * -i starts it as a background process with its stdin open, feeds it from a
 * second thread (stdinfwd.c) and streams /processes/{pid}/output; with -d it
 * only starts it and prints its pid. run is create + exec + rm, where the rm
 * happens whatever went wrong, Ctrl-C included. Exit statuses follow docker:
 * the command's own, else 125 (space or spaced failed), 126 (cannot be
 * invoked), 127 (not found); a usage error is 125 too.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sigfwd.h"
#include "stdinfwd.h"
#include "stream.h"
#include "tty.h"

/* What `space shell` runs when given no command: the user's login shell, bash where there is one */
static const char *const SHELL_CMD[] = {
	"/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l",
};

const char cmd_exec_usage[] =
	"Usage: space exec [OPTIONS] ID [--] CMD [ARGS...]\n"
	"\n"
	"Run CMD in sandbox ID. Its stdout and stderr stream to ours as they are\n"
	"produced; space exits with the command's exit status (128+n if signal n\n"
	"killed it; 125 if space or spaced failed, 126 if CMD cannot be invoked,\n"
	"127 if it was not found). Ctrl-C sends SIGINT to the command, a second\n"
	"Ctrl-C SIGKILL, a third stops waiting. Options go before ID.\n"
	"\n"
	"Options:\n"
	"  -i, --interactive    pass our stdin to the command (else it gets none)\n"
	"  -t, --tty            give the command a terminal of its own, the size of\n"
	"                       ours and following it; with -i our terminal is put in\n"
	"                       raw mode, so every key (Ctrl-C too) goes to the command,\n"
	"                       and is restored when space exits\n"
	"  -d, --detach         start the command in the background, print its pid\n"
	"  -e, --env K=V        set an environment variable (repeatable)\n"
	"  -w, --cwd DIR        working directory (default /work, or USER's home;\n"
	"                       a relative DIR is taken from there)\n"
	"  -u, --user USER      run as USER (default root)\n"
	"      --timeout S      kill the command after S seconds (exit status 137)\n"
	"      --output POLICY  block (default): output nobody reads holds the command\n"
	"                       back; drop: it is discarded but for its last 64 KiB\n"
	"  -h, --help           show this help\n";

const char cmd_run_usage[] =
	"Usage: space run [OPTIONS] [--] CMD [ARGS...]\n"
	"\n"
	"Create a sandbox, run CMD in it as `space exec` does, and remove the\n"
	"sandbox - always, also when CMD fails or on Ctrl-C. Exits with CMD's exit\n"
	"status (125 if space or spaced failed, 126/127 as for exec).\n"
	"\n"
	"Options (those of `space create`, plus -i, --cwd, --user):\n"
	"      --template T     root filesystem to start from (default: default)\n"
	"      --cpus N         CPU quota in whole CPUs\n"
	"      --memory MIB     memory limit in MiB\n"
	"      --disk MIB       size of its disk in MiB\n"
	"      --isolation gvisor|microvm\n"
	"                       what isolates it (default: spaced's)\n"
	"      --timeout S      the sandbox's idle timeout in seconds\n"
	"      --lifetime S, --timeout-action suspend|kill, --keepalive-processes\n"
	"                       the sandbox's timeouts, as for `space create`\n"
	"      --from-snapshot SID\n"
	"                       start from snapshot SID (not with --template,\n"
	"                       --cpus, --memory, --disk)\n"
	"  -e, --env K=V        environment variable (repeatable)\n"
	"  -l, --label K=V      label (repeatable)\n"
	"  -i, --interactive    pass our stdin to the command\n"
	"  -w, --cwd DIR        working directory (default /work, or USER's home;\n"
	"                       a relative DIR is taken from there)\n"
	"  -u, --user USER      run as USER (default root)\n"
	"  -h, --help           show this help\n";

const char cmd_shell_usage[] =
	"Usage: space shell [OPTIONS] ID [--] [CMD [ARGS...]]\n"
	"\n"
	"Open an interactive terminal in sandbox ID: its login shell (bash where the\n"
	"sandbox has it, else sh), or CMD. The same as `space exec -it ID CMD`: every\n"
	"key goes to the sandbox, its size follows our terminal's, and space exits with\n"
	"the shell's exit status once it ends. Needs a terminal as stdin.\n"
	"\n"
	"Options:\n"
	"  -e, --env K=V        set an environment variable (repeatable)\n"
	"  -w, --cwd DIR        working directory (default /work, or USER's home;\n"
	"                       a relative DIR is taken from there)\n"
	"  -u, --user USER      run as USER (default root)\n"
	"  -h, --help           show this help\n";

const char cmd_ps_usage[] =
	"Usage: space ps [--json] ID\n"
	"\n"
	"List the processes of sandbox ID, running and recently exited:\n"
	"PID, STATE, EXIT, STARTED, CMD.\n"
	"\n"
	"Options:\n"
	"      --json           print the JSON array instead\n"
	"  -h, --help           show this help\n";

const char cmd_attach_usage[] =
	"Usage: space attach ID PID\n"
	"\n"
	"Stream the output of process PID of sandbox ID (output nobody has read yet\n"
	"first, then live) until it exits, and exit with its exit status. Ctrl-C is\n"
	"forwarded as with `space exec`.\n";

/* What to run and how: the parsed options of exec and run. */
struct proc_opts {
	int interactive;
	int tty;
	int detach;
	json_t *env; /* object; NULL until a --env */
	const char *cwd;
	const char *user;
	json_t *timeout;
	const char *output; /* "block" or "drop"; NULL: spaced's default */
	char **cmd;
	int ncmd;
};

static void proc_opts_free(struct proc_opts *o)
{
	json_decref(o->env);
	json_decref(o->timeout);
}

/* The body of POST /exec or /processes. */
static json_t *proc_body(const struct proc_opts *o)
{
	json_t *body = json_object(), *cmd = json_array();

	if (!body || !cmd || json_object_set_new(body, "cmd", cmd))
		goto fail;
	for (int i = 0; i < o->ncmd; i++)
		if (json_array_append_new(cmd, json_string(o->cmd[i])))
			goto fail;
	if (o->env && json_object_set_new(body, "env", json_copy(o->env)))
		goto fail;
	if (o->cwd && json_object_set_new(body, "cwd", json_string(o->cwd)))
		goto fail;
	if (o->user && json_object_set_new(body, "user", json_string(o->user)))
		goto fail;
	if (o->timeout && json_object_set(body, "timeout", o->timeout))
		goto fail;
	if (o->output && json_object_set_new(body, "output", json_string(o->output)))
		goto fail;
	if (o->tty) { /* our terminal's size, and its kind unless the command is given one */
		int cols, rows;
		const char *term = getenv("TERM");
		tty_size(&cols, &rows);
		json_t *env = json_object_get(body, "env");
		if (!env && json_object_set_new(body, "env", env = json_object()))
			goto fail;
		if (!json_object_get(env, "TERM") &&
		    json_object_set_new(env, "TERM", json_string(term && *term ? term : "xterm")))
			goto fail;
		if (json_object_set_new(body, "pty", json_pack("{s:i, s:i}", "cols", cols, "rows", rows)))
			goto fail;
	}
	return body;
fail:
	if (!json_object_get(body, "cmd"))
		json_decref(cmd);
	json_decref(body);
	return NULL;
}

/* Exit status for a failed exec/run/attach; err was not printed yet. */
static int exec_failure(const struct cli *cli, int r, const struct client_err *err)
{
	if (r == -ECANCELED) {
		fprintf(stderr, "space: stopped waiting for the command\n");
		return CLI_EXIT_INTERRUPTED;
	}
	cli_report(cli, err);
	if (err->kind == CLIENT_ERR_API && !strcmp(err->code, "exec_failed")) {
		if (strstr(err->message, "No such file or directory") || strstr(err->message, "ENOENT") ||
		    strcasestr(err->message, "not found"))
			return CLI_EXIT_NOT_FOUND;
		return CLI_EXIT_CANNOT_INVOKE;
	}
	return CLI_EXIT_DAEMON;
}

/* POST /processes; *pid is the new process. */
static int start_process(struct cli *cli, const char *id, const struct proc_opts *o,
			 long *pid, struct client_err *err)
{
	json_t *body = proc_body(o), *reply = NULL;
	char *path = cli_sandbox_path(id, "/processes");
	int r = -ENOMEM;

	if (!body || !path || (o->interactive && json_object_set_new(body, "stdin_open", json_true()))) {
		snprintf(err->message, sizeof(err->message), "out of memory");
		err->kind = CLIENT_ERR_LOCAL;
		goto out;
	}
	r = client_request(&cli->client, "POST", path, body, &reply, err);
	if (r)
		goto out;
	json_t *p = json_object_get(reply, "pid");
	if (!json_is_integer(p)) {
		err->kind = CLIENT_ERR_TRANSPORT;
		err->code[0] = '\0';
		snprintf(err->message, sizeof(err->message), "spaced answered without a pid");
		r = -EPROTO;
		goto out;
	}
	*pid = (long)json_integer_value(p);
out:
	json_decref(reply);
	json_decref(body);
	free(path);
	return r;
}

/* Runs the command in the foreground (exec without -d, run); returns the exit status. */
static int run_foreground(struct cli *cli, const char *id, const struct proc_opts *o)
{
	struct client_err err = { 0 };
	int code = 0, r;

	if (!o->interactive && !o->tty) {
		json_t *body = proc_body(o);
		if (!body)
			return cli_error("out of memory"), CLI_EXIT_DAEMON;
		r = stream_exec(&cli->client, id, body, &code, &err);
		json_decref(body);
	} else {
		struct stdinfwd fwd = { 0 };
		unsigned what = (o->interactive ? STDINFWD_INPUT : 0) | (o->tty ? STDINFWD_RESIZE : 0);
		long pid;
		r = start_process(cli, id, o, &pid, &err);
		/* raw mode only once the process runs, so that a failure to start reads as usual */
		if (!r && o->tty && o->interactive && (r = tty_raw()) < 0) {
			err.kind = CLIENT_ERR_LOCAL;
			snprintf(err.message, sizeof(err.message), "cannot put the terminal in raw mode: %s", strerror(-r));
			stream_signal(&cli->client, id, pid, SIGKILL, &(struct client_err){ 0 });
		}
		if (!r && (r = stdinfwd_start(&fwd, &cli->client, id, pid, what)) < 0) {
			err.kind = CLIENT_ERR_LOCAL;
			snprintf(err.message, sizeof(err.message), "cannot forward stdin: %s", strerror(-r));
		}
		if (!r)
			r = stream_output(&cli->client, id, pid, &code, &err);
		stdinfwd_stop(&fwd);
		tty_restore();
	}
	return r ? exec_failure(cli, r, &err) : code;
}

/* Takes -w, -u or -e (c) of exec or shell into o. Returns 0 or an exit status. */
static int where_and_who(struct cli *cli, struct proc_opts *o, int c, const char *arg)
{
	if (c == 'w') {
		o->cwd = arg;
	} else if (c == 'u') {
		o->user = arg;
	} else {
		if (!o->env && !(o->env = json_object()))
			return cli_error("out of memory"), CLI_EXIT_DAEMON;
		if (cli_kv_add(o->env, arg))
			return cli_usage_error(cli, "--env wants K=V, not '%s'", arg);
	}
	return 0;
}

/* Catches the signals to forward, then runs the command in the foreground: its exit status. */
static int forward_and_run(struct cli *cli, const char *id, const struct proc_opts *o)
{
	if (sigfwd_install() < 0) {
		cli_error("cannot catch signals: %s", strerror(errno));
		return CLI_EXIT_DAEMON;
	}
	return run_foreground(cli, id, o);
}

/* Parses exec's options: ID [--] CMD... */
static int exec_parse(struct cli *cli, int argc, char **argv, struct proc_opts *o, const char **id)
{
	static const struct option opts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "detach", no_argument, NULL, 'd' },
		{ "env", required_argument, NULL, 'e' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+itde:w:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': o->interactive = 1; break;
		case 't': o->tty = 1; break;
		case 'd': o->detach = 1; break;
		case 'w': case 'u': case 'e': {
			int r = where_and_who(cli, o, c, optarg);
			if (r)
				return r;
			break;
		}
		case 'T':
			json_decref(o->timeout);
			o->timeout = NULL;
			if (cli_parse_seconds(optarg, &o->timeout))
				return cli_usage_error(cli, "--timeout wants seconds, not '%s'", optarg);
			break;
		case 'O':
			if (strcmp(optarg, "block") != 0 && strcmp(optarg, "drop") != 0)
				return cli_usage_error(cli, "--output wants block or drop, not '%s'", optarg);
			o->output = optarg;
			break;
		case 'h': return -1;
		default: return cli_bad_option(cli);
		}
	}
	if (optind >= argc)
		return cli_usage_error(cli, "missing sandbox ID");
	*id = argv[optind++];
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (optind >= argc)
		return cli_usage_error(cli, "missing the command to run");
	if ((o->interactive || o->tty) && o->detach)
		return cli_usage_error(cli, "-i and -t do not go with -d");
	if (o->tty && o->interactive && !isatty(STDIN_FILENO))
		return cli_usage_error(cli, "-it needs a terminal as stdin (without -t, -i takes a pipe)");
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	return 0;
}

int cmd_exec(struct cli *cli, int argc, char **argv)
{
	struct proc_opts o = { 0 };
	struct client_err err = { 0 };
	const char *id = NULL;
	int status = exec_parse(cli, argc, argv, &o, &id);

	if (status) {
		if (status < 0)
			status = cli_help(cli);
		goto out;
	}
	if (o.detach) {
		long pid;
		int r = start_process(cli, id, &o, &pid, &err);
		if (r)
			status = exec_failure(cli, r, &err);
		else
			printf("%ld\n", pid);
		goto out;
	}
	status = forward_and_run(cli, id, &o);
out:
	proc_opts_free(&o);
	return status;
}

int cmd_shell(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "env", required_argument, NULL, 'e' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proc_opts o = { .interactive = 1, .tty = 1 };
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "+e:w:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'w': case 'u': case 'e':
			if ((status = where_and_who(cli, &o, c, optarg)))
				goto out;
			break;
		case 'h': status = cli_help(cli); goto out;
		default: status = cli_bad_option(cli); goto out;
		}
	}
	if (optind >= argc) {
		status = cli_usage_error(cli, "missing sandbox ID");
		goto out;
	}
	const char *id = argv[optind++];
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	o.cmd = optind < argc ? argv + optind : (char **)SHELL_CMD;
	o.ncmd = optind < argc ? argc - optind : (int)(sizeof(SHELL_CMD) / sizeof(SHELL_CMD[0]));
	if (!isatty(STDIN_FILENO)) {
		status = cli_usage_error(cli, "a shell needs a terminal as stdin; `space exec -i` takes a pipe");
		goto out;
	}
	status = forward_and_run(cli, id, &o);
out:
	proc_opts_free(&o);
	return status;
}

int cmd_run(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_CREATE_OPTIONS,
		{ "interactive", no_argument, NULL, 'i' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proc_opts o = { 0 };
	struct client_err err = { 0 };
	json_t *body = json_object(), *sandbox = NULL;
	char *path = NULL;
	int c, status = 0;

	if (!body)
		return cli_error("out of memory"), CLI_EXIT_DAEMON;
	while ((c = getopt_long(argc, argv, "+" CMD_CREATE_OPTCHARS "iw:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': o.interactive = 1; break;
		case 'w': o.cwd = optarg; break;
		case 'u': o.user = optarg; break;
		case 'h': status = cli_help(cli); goto out;
		case '?': status = cli_bad_option(cli); goto out;
		default:
			if ((status = cmd_create_opt(cli, c, optarg, body)))
				goto out;
		}
	}
	if (optind >= argc) {
		status = cli_usage_error(cli, "missing the command to run");
		goto out;
	}
	if ((status = cmd_create_check(cli, body)))
		goto out;
	o.cmd = argv + optind;
	o.ncmd = argc - optind;
	if (sigfwd_install() < 0) {
		cli_error("cannot catch signals: %s", strerror(errno));
		status = CLI_EXIT_DAEMON;
		goto out;
	}

	if (cmd_create_sandbox(cli, body, &sandbox, &err)) {
		cli_report(cli, &err);
		status = CLI_EXIT_DAEMON;
		goto out;
	}
	const char *id = json_string_value(json_object_get(sandbox, "id"));
	if (sigfwd_pending(SIGINT) || sigfwd_pending(SIGTERM) || sigfwd_pending(SIGHUP))
		status = CLI_EXIT_INTERRUPTED; /* Ctrl-C while creating: do not start the command */
	else
		status = run_foreground(cli, id, &o);

	path = cli_sandbox_path(id, NULL);
	if (!path || client_request(&cli->client, "DELETE", path, NULL, NULL, &err)) {
		cli_error("sandbox %s was not removed: %s", id, path ? err.message : "out of memory");
		if (status == 0)
			status = CLI_EXIT_DAEMON;
	}
out:
	free(path);
	json_decref(sandbox);
	json_decref(body);
	proc_opts_free(&o);
	return status;
}

static const char *process_cmd(json_t *p, char *buf, size_t size)
{
	json_t *cmd = json_object_get(p, "cmd");
	size_t i, len = 0;
	json_t *arg;

	if (json_is_string(cmd))
		return json_string_value(cmd);
	buf[0] = '\0';
	json_array_foreach(cmd, i, arg) {
		const char *s = json_string_value(arg);
		if (s && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", s);
	}
	return buf;
}

static void ps_row(json_t *p, const char **row, char *buf, size_t n)
{
	json_t *pv = json_object_get(p, "pid"), *ev = json_object_get(p, "exit_code");
	char *pid = buf, *code = buf + 32, *cmd = buf + 64;
	snprintf(pid, 32, "%lld", (long long)json_integer_value(pv));
	if (json_is_integer(ev))
		snprintf(code, 32, "%lld", (long long)json_integer_value(ev));
	else
		snprintf(code, 32, "-");
	row[0] = pid;
	row[1] = json_string_value(json_object_get(p, "state"));
	row[2] = code;
	row[3] = json_string_value(json_object_get(p, "started_at"));
	row[4] = process_cmd(p, cmd, n - 64);
}

int cmd_ps(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "PID", "STATE", "EXIT", "STARTED", "CMD" };
	return cli_sandbox_listing(cli, argc, argv, "/processes", "processes", 5, header, ps_row);
}

int cmd_attach(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	long pid;
	int c, code = 0, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(cli);
		return cli_bad_option(cli);
	}
	if (argc - optind != 2)
		return cli_usage_error(cli, "wants a sandbox ID and a PID");
	if (cli_parse_int(argv[optind + 1], 1, 0x7fffffffL, &pid))
		return cli_usage_error(cli, "'%s' is not a pid", argv[optind + 1]);
	if (sigfwd_install() < 0)
		return cli_error("cannot catch signals: %s", strerror(errno)), CLI_EXIT_DAEMON;
	r = stream_output(&cli->client, argv[optind], pid, &code, &err);
	return r ? exec_failure(cli, r, &err) : code;
}

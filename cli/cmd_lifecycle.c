/*
 * cli/cmd_lifecycle.c - the commands that move sandboxes through their
 * lifecycle (docs/lifecycle.md): pause, resume, suspend, sync, snapshot
 * (with its ls, inspect and rm), fork, and timeout, which moves when one ends.
 *
 * pause, resume, suspend and sync take several ids and work like `space rm`:
 * one POST per id, each id printed once it is done, each failure reported on
 * its own (a 409 reads "space: sandbox X is suspended and cannot be paused
 * now (conflict)"), exit 1 if any failed, and a stop at the first sign that
 * spaced cannot be reached. snapshot and fork print the new ids, or the
 * API's objects with --json.
 *
 * `space snapshot ID` takes a snapshot while `space snapshot ls|inspect|rm`
 * manage them: a sandbox id is 12 lowercase hex characters, so it never reads
 * as one of these words.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "table.h"

const char cmd_pause_usage[] =
	"Usage: space pause ID...\n"
	"\n"
	"Freeze every process of each sandbox and print its id. Its memory stays on\n"
	"the host and nothing is written to disk; `space resume` thaws it in an\n"
	"instant. Exits 1 if any could not be paused.\n"
	"\n"
	"Options:\n"
	"  -h, --help           show this help\n";

const char cmd_resume_usage[] =
	"Usage: space resume [--timeout S] ID...\n"
	"\n"
	"Resume each paused or suspended sandbox and print its id: its processes go\n"
	"on where they were (re-attach to their output with `space attach`). A\n"
	"running sandbox is left as it is. Exits 1 if any could not be resumed.\n"
	"\n"
	"Options:\n"
	"      --timeout S      a new idle timeout in seconds, counted from now\n"
	"                       (default: what was left of the old one)\n"
	"  -h, --help           show this help\n";

const char cmd_suspend_usage[] =
	"Usage: space suspend ID...\n"
	"\n"
	"Write each sandbox's memory, processes and files to disk, release all of\n"
	"its host processes and memory, and print its id. A suspended sandbox\n"
	"survives a restart of spaced or of the host; `space resume` (or any exec or\n"
	"cp) brings it back. Exits 1 if any could not be suspended.\n"
	"\n"
	"Options:\n"
	"  -h, --help           show this help\n";

const char cmd_timeout_usage[] =
	"Usage: space timeout [--lifetime] [--action suspend|kill] ID SECONDS\n"
	"\n"
	"Give sandbox ID a new idle timeout of SECONDS, counted from now (0: none),\n"
	"and print its id. With --lifetime, SECONDS is its new lifetime instead: it\n"
	"ends then, counted from now, whatever it does meanwhile (0: never). `space\n"
	"inspect` shows when each fires (timeout_at, expires_at).\n"
	"\n"
	"Options:\n"
	"      --lifetime       SECONDS is the lifetime, not the idle timeout\n"
	"      --action A       what either does when it passes: suspend (keep the\n"
	"                       sandbox on disk) or kill (remove it)\n"
	"  -h, --help           show this help\n";

const char cmd_sync_usage[] =
	"Usage: space sync ID...\n"
	"\n"
	"Make everything each sandbox has written so far durable on the host's disk\n"
	"(it then survives a crash of spaced or of the host), and print its id.\n"
	"Exits 1 if any could not be synced.\n"
	"\n"
	"Options:\n"
	"  -h, --help           show this help\n";

const char cmd_snapshot_usage[] =
	"Usage: space snapshot [--name NAME] [--json] ID\n"
	"       space snapshot ls [-q] [--json]\n"
	"       space snapshot inspect SID...\n"
	"       space snapshot rm [-f] SID...\n"
	"\n"
	"Take a snapshot of sandbox ID - its memory, processes and files - and print\n"
	"the snapshot's id alone on a line. The sandbox runs on (it stops for the\n"
	"second or two this takes). `space create --from-snapshot SID` starts new\n"
	"sandboxes from the snapshot.\n"
	"\n"
	"  ls        list snapshots, oldest first: ID, SANDBOX, NAME, CREATED\n"
	"  inspect   print each snapshot's object as indented JSON\n"
	"  rm        remove snapshots, printing each removed id; exits 1 if any\n"
	"            could not be removed\n"
	"\n"
	"Options:\n"
	"      --name NAME      a name for the snapshot, shown by `snapshot ls`\n"
	"  -q, --quiet          (ls) print the ids only\n"
	"  -f, --force          (rm) a snapshot that does not exist is not an error\n"
	"      --json           print the snapshot object (ls: the JSON array)\n"
	"  -h, --help           show this help\n";

const char cmd_fork_usage[] =
	"Usage: space fork [--count N] [--json] ID\n"
	"\n"
	"Copy sandbox ID, running processes included, into N new sandboxes and\n"
	"print their ids, one a line. Each goes on from the moment of the fork with\n"
	"its own copy of the files; the source runs on.\n"
	"\n"
	"Options:\n"
	"  -n, --count N        how many sandboxes to make (default 1, at most 16)\n"
	"      --json           print the JSON array of the new sandbox objects\n"
	"  -h, --help           show this help\n";

/*
 * POSTs path(id) + suffix with body for every id in ids and prints each id
 * that succeeded. Returns 0, CLI_EXIT_FAIL if any failed, or CLI_EXIT_DAEMON
 * at once when spaced cannot be reached.
 */
static int post_each(struct cli *cli, char **ids, int n, const char *suffix, json_t *body)
{
	int status = 0;

	for (int i = 0; i < n; i++) {
		struct client_err err = { 0 };
		char *path = cli_sandbox_path(ids[i], suffix);
		if (!path)
			return cli_error("out of memory");
		int r = client_request(&cli->client, "POST", path, body, NULL, &err);
		free(path);
		if (!r) {
			printf("%s\n", ids[i]);
			fflush(stdout);
			continue;
		}
		status = cli_report(cli, &err);
		if (status == CLI_EXIT_DAEMON)
			return status;
	}
	return status;
}

/* pause, suspend and sync: only --help, then ids. */
static int simple_transition(struct cli *cli, int argc, char **argv, const char *suffix)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(cli);
		return cli_bad_option(cli);
	}
	if (optind >= argc)
		return cli_usage_error(cli, "wants at least one sandbox ID");
	return post_each(cli, argv + optind, argc - optind, suffix, NULL);
}

int cmd_pause(struct cli *cli, int argc, char **argv)
{
	return simple_transition(cli, argc, argv, "/pause");
}

int cmd_suspend(struct cli *cli, int argc, char **argv)
{
	return simple_transition(cli, argc, argv, "/suspend");
}

int cmd_sync(struct cli *cli, int argc, char **argv)
{
	return simple_transition(cli, argc, argv, "/sync");
}

int cmd_resume(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	json_t *body = NULL, *timeout;
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			status = cli_help(cli);
			goto out;
		}
		if (c != 'O') {
			status = cli_bad_option(cli);
			goto out;
		}
		if (cli_parse_seconds(optarg, &timeout)) {
			status = cli_usage_error(cli, "--timeout wants seconds, not '%s'", optarg);
			goto out;
		}
		json_decref(body);
		body = json_pack("{s:o}", "timeout", timeout);
		if (!body) {
			status = cli_error("out of memory");
			goto out;
		}
	}
	if (optind >= argc) {
		status = cli_usage_error(cli, "wants at least one sandbox ID");
		goto out;
	}
	status = post_each(cli, argv + optind, argc - optind, "/resume", body);
out:
	json_decref(body);
	return status;
}

int cmd_timeout(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lifetime", no_argument, NULL, 'L' },
		{ "action", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *field = "timeout", *action = NULL;
	json_t *seconds;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(cli);
		if (c == 'L')
			field = "lifetime";
		else if (c == 'A' && (strcmp(optarg, "suspend") == 0 || strcmp(optarg, "kill") == 0))
			action = optarg;
		else if (c == 'A')
			return cli_usage_error(cli, "--action wants suspend or kill, not '%s'", optarg);
		else
			return cli_bad_option(cli);
	}
	if (argc - optind != 2)
		return cli_usage_error(cli, "wants a sandbox ID and SECONDS");
	if (cli_parse_seconds(argv[optind + 1], &seconds))
		return cli_usage_error(cli, "wants SECONDS, not '%s'", argv[optind + 1]);
	json_t *body = json_pack("{s:o, s:s*}", field, seconds, "timeout_action", action);
	if (!body)
		return cli_error("out of memory");
	int status = post_each(cli, argv + optind, 1, "/timeout", body);
	json_decref(body);
	return status;
}

/* "/v1/snapshots/<escaped sid>" (malloc'd; NULL without memory). */
static char *snapshot_path(const char *sid)
{
	return cli_named_path("snapshots", sid);
}

/* `space snapshot [--name NAME] [--json] ID` */
static int snapshot_take(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	json_t *body = NULL, *snap = NULL;
	char *path = NULL;
	const char *name = NULL;
	int c, as_json = 0, status = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'N')
			name = optarg;
		else if (c == 'j')
			as_json = 1;
		else if (c == 'h')
			return cli_help(cli);
		else
			return cli_bad_option(cli);
	}
	if (optind >= argc)
		return cli_usage_error(cli, "wants a sandbox ID (or ls, inspect, rm)");
	if (argc - optind > 1)
		return cli_usage_error(cli, "wants one sandbox ID, not %d", argc - optind);
	const char *id = argv[optind];
	if (!strcmp(id, "ls") || !strcmp(id, "list") || !strcmp(id, "inspect") || !strcmp(id, "rm"))
		return cli_usage_error(cli, "options of '%s' go after it: space snapshot %s ...", id, id);
	if (name && !(body = json_pack("{s:s}", "name", name)))
		return cli_error("out of memory");
	path = cli_sandbox_path(id, "/snapshot");
	if (!path) {
		status = cli_error("out of memory");
		goto out;
	}
	if (client_request(&cli->client, "POST", path, body, &snap, &err)) {
		status = cli_report(cli, &err);
		goto out;
	}
	const char *sid = json_string_value(json_object_get(snap, "id"));
	if (!sid)
		status = cli_error("spaced took a snapshot without an id");
	else if (as_json)
		status = cli_print_json(snap);
	else
		printf("%s\n", sid);
out:
	json_decref(snap);
	json_decref(body);
	free(path);
	return status;
}

static int snapshot_table(json_t *list)
{
	static const char *const header[] = { "ID", "SANDBOX", "NAME", "CREATED" };
	struct table t;
	size_t i;
	json_t *s;
	int status = 0;

	if (table_init(&t, 4, header))
		return cli_error("out of memory");
	json_array_foreach(list, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *row[] = {
			json_string_value(json_object_get(s, "id")),
			json_string_value(json_object_get(s, "sandbox_id")),
			name && *name ? name : NULL,
			json_string_value(json_object_get(s, "created_at")),
		};
		if (table_add(&t, row)) {
			status = cli_error("out of memory");
			break;
		}
	}
	if (!status)
		table_print(&t, stdout);
	table_free(&t);
	return status;
}

/* `space snapshot ls [-q] [--json]` */
static int snapshot_ls(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	json_t *reply = NULL;
	int c, as_json = 0, quiet = 0, status = 0;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		if (c == 'q')
			quiet = 1;
		else if (c == 'j')
			as_json = 1;
		else if (c == 'h')
			return cli_help(cli);
		else
			return cli_bad_option(cli);
	}
	if (optind < argc)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[optind]);
	if (client_request(&cli->client, "GET", "/v1/snapshots", NULL, &reply, &err))
		return cli_report(cli, &err);
	json_t *list = json_object_get(reply, "snapshots");
	if (!json_is_array(list)) {
		status = cli_error("spaced answered without a list of snapshots");
	} else if (as_json) {
		status = cli_print_json(list);
	} else if (quiet) {
		size_t i;
		json_t *s;
		json_array_foreach(list, i, s)
			printf("%s\n", json_string_value(json_object_get(s, "id")));
	} else {
		status = snapshot_table(list);
	}
	json_decref(reply);
	return status;
}

/* `space snapshot inspect [--json] SID...` */
static int snapshot_inspect(struct cli *cli, int argc, char **argv)
{
	int as_json, status = cli_json_flag(cli, argc, argv, &as_json); /* its answer is JSON either way */
	if (status)
		return status < 0 ? cli_help(cli) : status;
	if (optind >= argc)
		return cli_usage_error(cli, "wants at least one snapshot ID");
	return cli_inspect_each(cli, argv + optind, argc - optind, snapshot_path);
}

/* `space snapshot rm [-f] SID...` */
static int snapshot_rm(struct cli *cli, int argc, char **argv)
{
	return cli_remove(cli, argc, argv, "snapshot", snapshot_path);
}

int cmd_snapshot(struct cli *cli, int argc, char **argv)
{
	static const struct cli_sub subs[] = {
		{ "ls", snapshot_ls }, { "list", snapshot_ls },
		{ "inspect", snapshot_inspect }, { "rm", snapshot_rm },
	};
	int rc = cli_run_sub(cli, argc, argv, subs, sizeof(subs) / sizeof(subs[0]));
	return rc >= 0 ? rc : snapshot_take(cli, argc, argv);
}

int cmd_fork(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	json_t *body = NULL, *reply = NULL;
	char *path = NULL;
	long count = 0;
	int c, as_json = 0, status = 0;

	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		if (c == 'n') {
			/* spaced owns the upper limit (16) and says so */
			if (cli_parse_int(optarg, 1, INT_MAX, &count))
				return cli_usage_error(cli, "--count wants a number of sandboxes, not '%s'", optarg);
		} else if (c == 'j') {
			as_json = 1;
		} else if (c == 'h') {
			return cli_help(cli);
		} else {
			return cli_bad_option(cli);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(cli, "wants exactly one sandbox ID");
	if (count && !(body = json_pack("{s:I}", "count", (json_int_t)count)))
		return cli_error("out of memory");
	path = cli_sandbox_path(argv[optind], "/fork");
	if (!path) {
		status = cli_error("out of memory");
		goto out;
	}
	if (client_request(&cli->client, "POST", path, body, &reply, &err)) {
		status = cli_report(cli, &err);
		goto out;
	}
	json_t *list = json_object_get(reply, "sandboxes");
	if (!json_is_array(list)) {
		status = cli_error("spaced answered without a list of sandboxes");
		goto out;
	}
	if (as_json) {
		status = cli_print_json(list);
		goto out;
	}
	size_t i;
	json_t *sb;
	json_array_foreach(list, i, sb)
		printf("%s\n", json_string_value(json_object_get(sb, "id")));
out:
	json_decref(reply);
	json_decref(body);
	free(path);
	return status;
}

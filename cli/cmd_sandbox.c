/*
 * cli/cmd_sandbox.c - the commands about sandboxes and the daemon itself:
 * create, ls, inspect, rm, template ls, status and version.
 *
 * Each is one or a few plain JSON requests (client_request) and a printout:
 * an aligned table or a single id for people, the API's own JSON with --json
 * for programs. The options of create are shared with `space run`
 * (CMD_CREATE_OPTIONS, cmd_create_opt, cmd_create_check in cli.h). The
 * lifecycle commands (pause, snapshot, fork...) are in cmd_lifecycle.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "table.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "dev"
#endif

const char cmd_create_usage[] =
	"Usage: space create [OPTIONS]\n"
	"       space create --from-snapshot SID [OPTIONS]\n"
	"\n"
	"Create a sandbox and print its id alone on a line, once it is ready to run\n"
	"commands. With --from-snapshot, the sandbox is restored from a snapshot\n"
	"(`space snapshot`): its processes go on from there, and its template, CPUs,\n"
	"memory, disk and isolation are the snapshot's.\n"
	"\n"
	"Options:\n"
	"      --template T     root filesystem to start from (default: default)\n"
	"      --cpus N         CPU quota in whole CPUs (default 1)\n"
	"      --memory MIB     memory limit in MiB (default 512)\n"
	"      --disk MIB       size of its disk in MiB: its files beyond the\n"
	"                       template (default 5120)\n"
	"      --isolation gvisor|microvm\n"
	"                       what isolates it: gVisor's user-space kernel or a\n"
	"                       microVM (default: spaced's; `space status` lists the\n"
	"                       kinds this host runs)\n"
	"      --from-snapshot SID\n"
	"                       restore snapshot SID (not with the four above)\n"
	"      --timeout S      idle timeout in seconds (default 300; 0: none)\n"
	"      --lifetime S     remove or suspend it S seconds after creation\n"
	"                       (default 0: no limit)\n"
	"      --timeout-action suspend|kill\n"
	"                       what a timeout does (default suspend; kill removes it)\n"
	"      --keepalive-processes\n"
	"                       a running process counts as activity for the idle\n"
	"                       timeout\n"
	"  -e, --env K=V        environment for every process in it (repeatable)\n"
	"  -l, --label K=V      label, for `space ls --label` (repeatable)\n"
	"      --egress none|open|allow\n"
	"                       what it may reach beyond itself (default: spaced's):\n"
	"                       nothing, the public internet, or only what --allow lists\n"
	"      --allow CIDR     an address or range it may reach, with --egress allow\n"
	"                       (repeatable)\n"
	"      --deny CIDR      an address or range it may not reach (repeatable)\n"
	"      --no-network     no network interface at all (ports only through\n"
	"                       `space port-forward`)\n"
	"      --auto-resume, --no-auto-resume\n"
	"                       whether a command or file request resumes it when it\n"
	"                       is paused or suspended (default: spaced's; yes unless\n"
	"                       spaced runs with --no-auto-resume)\n"
	"      --volume NAME:/PATH[:ro]\n"
	"                       mount volume NAME at PATH, read-only with :ro\n"
	"                       (repeatable; `space volume`)\n"
	"      --json           print the whole sandbox object\n"
	"  -h, --help           show this help\n";

const char cmd_ls_usage[] =
	"Usage: space ls [OPTIONS]\n"
	"\n"
	"List sandboxes, oldest first: ID, STATE, TEMPLATE, ISOLATION, CPUS, MEMORY,\n"
	"CREATED, LABELS.\n"
	"\n"
	"Options:\n"
	"  -l, --label K=V      only sandboxes with this label (repeatable: all must match)\n"
	"  -q, --quiet          print the ids only\n"
	"      --json           print the JSON array of sandbox objects\n"
	"  -h, --help           show this help\n";

const char cmd_inspect_usage[] =
	"Usage: space inspect [--json] ID...\n"
	"\n"
	"Print each sandbox's object as indented JSON, one after the other.\n"
	"(The output is always JSON; --json is accepted for symmetry.)\n";

const char cmd_rm_usage[] =
	"Usage: space rm [-f] ID...\n"
	"\n"
	"Remove sandboxes: kill their processes and delete their files. Prints each\n"
	"removed id; exits 1 if any could not be removed.\n"
	"\n"
	"Options:\n"
	"  -f, --force          a sandbox that does not exist is not an error\n"
	"  -h, --help           show this help\n";

const char cmd_template_usage[] =
	"Usage: space template ls [--json]\n"
	"       space template inspect NAME...\n"
	"       space template rm [-f] NAME...\n"
	"       space template build -t NAME[:TAG] [-f DOCKERFILE] [--build-arg NAME=VALUE]...\n"
	"                            [--packages PKG[,PKG...]] [-q] [CONTEXT]\n"
	"       space template import NAME[:TAG] oci-archive:FILE|docker-archive:FILE|docker://REF\n"
	"       space template cancel NAME...\n"
	"\n"
	"ls: the templates sandboxes can start from: NAME, KEY, CREATED.\n"
	"inspect: each one's JSON: where it came from (source), its defaults (config) and how\n"
	"  many sandboxes start from it.\n"
	"rm: removes each (refused while a sandbox or snapshot starts from it; never the default\n"
	"  one); its files leave the cache once no state dir uses them. -f: a name that does not\n"
	"  exist is not an error.\n"
	"build: builds template NAME from the Dockerfile in folder CONTEXT (default: the current\n"
	"  one; -f names another file inside it), showing each step as it runs; a step whose\n"
	"  inputs did not change is taken from the cache. A failed step leaves no template.\n"
	"  Ctrl-C cancels the build. -q prints only the name once built. --packages: Debian\n"
	"  packages the default template gets first, installed by the host's mmdebstrap.\n"
	"import: makes template NAME of a container image: an archive here (sent to spaced) or an\n"
	"  image spaced pulls from a registry; its environment, working folder and user become\n"
	"  the template's defaults.\n"
	"cancel: cancels the builds and imports of each NAME under way (their own clients see\n"
	"  them end with \"cancelled\"); nothing is recorded.\n";

const char cmd_status_usage[] =
	"Usage: space status [--json]\n"
	"\n"
	"Show where spaced is (SPACE_HOST), whether it is healthy, its version, the\n"
	"isolation kinds it runs (the default first, each with its runtime, and\n"
	"why any other is unavailable), and how many sandboxes exist.\n";

const char cmd_version_usage[] =
	"Usage: space version [--json]\n"
	"\n"
	"Show this client's version, and the daemon's when it can be reached.\n";


static int add_kv(const struct cli *cli, json_t *body, const char *field, const char *opt,
		  const char *arg)
{
	json_t *obj = json_object_get(body, field);

	if (!obj) {
		obj = json_object();
		if (!obj || json_object_set_new(body, field, obj))
			return cli_error("out of memory");
	}
	if (cli_kv_add(obj, arg))
		return cli_usage_error(cli, "--%s wants K=V, not '%s'", opt, arg);
	return 0;
}

int cmd_create_opt(const struct cli *cli, int opt, const char *arg, json_t *body)
{
	json_t *v = NULL;
	long n;

	switch (opt) {
	case 'T':
		v = json_string(arg);
		return json_object_set_new(body, "template", v) ? cli_error("out of memory") : 0;
	case 'C':
		if (cli_parse_int(arg, 1, 1L << 20, &n))
			return cli_usage_error(cli, "--cpus wants a whole number of CPUs, not '%s'", arg);
		return json_object_set_new(body, "cpus", json_integer(n)) ? cli_error("out of memory") : 0;
	case 'M':
		if (cli_parse_int(arg, 1, 1L << 30, &n))
			return cli_usage_error(cli, "--memory wants MiB, not '%s'", arg);
		return json_object_set_new(body, "memory_mb", json_integer(n)) ? cli_error("out of memory") : 0;
	case 'D':
		if (cli_parse_int(arg, 1, 1L << 30, &n))
			return cli_usage_error(cli, "--disk wants MiB, not '%s'", arg);
		return json_object_set_new(body, "disk_mb", json_integer(n)) ? cli_error("out of memory") : 0;
	case 'O':
		if (cli_parse_seconds(arg, &v))
			return cli_usage_error(cli, "--timeout wants seconds, not '%s'", arg);
		return json_object_set_new(body, "timeout", v) ? cli_error("out of memory") : 0;
	case 'L':
		if (cli_parse_seconds(arg, &v))
			return cli_usage_error(cli, "--lifetime wants seconds, not '%s'", arg);
		return json_object_set_new(body, "lifetime", v) ? cli_error("out of memory") : 0;
	case 'A':
		if (strcmp(arg, "suspend") && strcmp(arg, "kill"))
			return cli_usage_error(cli, "--timeout-action wants 'suspend' or 'kill', not '%s'", arg);
		v = json_string(arg);
		return json_object_set_new(body, "timeout_action", v) ? cli_error("out of memory") : 0;
	case 'K':
		return json_object_set_new(body, "keepalive_processes", json_true()) ? cli_error("out of memory") : 0;
	case 'I':
		/* the kinds are spaced's to name: a new one needs no new CLI */
		v = json_string(arg);
		return json_object_set_new(body, "isolation", v) ? cli_error("out of memory") : 0;
	case 'S':
		if (!*arg)
			return cli_usage_error(cli, "--from-snapshot wants a snapshot id");
		v = json_string(arg);
		return json_object_set_new(body, "snapshot", v) ? cli_error("out of memory") : 0;
	case 'e':
		return add_kv(cli, body, "env", "env", arg);
	case 'l':
		return add_kv(cli, body, "metadata", "label", arg);
	case CLI_OPT_NO_NETWORK:
		return json_object_set_new(body, "network", json_false()) ? cli_error("out of memory") : 0;
	case CLI_OPT_AUTO_RESUME:
	case CLI_OPT_NO_AUTO_RESUME:
		v = json_boolean(opt == CLI_OPT_AUTO_RESUME);
		return json_object_set_new(body, "auto_resume", v) ? cli_error("out of memory") : 0;
	case CLI_OPT_VOLUME:
		return cli_volume_opt(cli, arg, body);
	case CLI_OPT_EGRESS:
	case CLI_OPT_ALLOW:
	case CLI_OPT_DENY:
		return cli_network_opt(cli, opt, arg, body);
	default:
		return cli_bad_option(cli);
	}
}

int cmd_create_check(const struct cli *cli, json_t *body)
{
	static const struct { const char *field, *opt; } from_snapshot[] = {
		{ "template", "--template" }, { "cpus", "--cpus" }, { "memory_mb", "--memory" },
		{ "disk_mb", "--disk" },
	};

	json_t *net = json_object_get(body, "network");
	if (json_is_false(net) && json_object_size(json_object_get(body, "network_options")))
		return cli_usage_error(cli, "--no-network cannot go with --egress, --allow or --deny");
	json_object_del(body, "network_options");
	if (!json_object_get(body, "snapshot"))
		return 0;
	for (size_t i = 0; i < sizeof(from_snapshot) / sizeof(from_snapshot[0]); i++)
		if (json_object_get(body, from_snapshot[i].field))
			return cli_usage_error(cli, "%s cannot go with --from-snapshot: the snapshot decides it",
					       from_snapshot[i].opt);
	return 0;
}

int cmd_create_sandbox(struct cli *cli, json_t *body, json_t **sandbox, struct client_err *err)
{
	int r = client_request(&cli->client, "POST", "/v1/sandboxes", body, sandbox, err);

	if (r)
		return r;
	if (!json_is_string(json_object_get(*sandbox, "id"))) {
		json_decref(*sandbox);
		*sandbox = NULL;
		err->kind = CLIENT_ERR_TRANSPORT;
		err->code[0] = '\0';
		snprintf(err->message, sizeof(err->message), "spaced created a sandbox without an id");
		return -EPROTO;
	}
	return 0;
}

int cmd_create(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_CREATE_OPTIONS,
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	json_t *body = json_object(), *sandbox = NULL;
	int c, as_json = 0, status = 0;

	if (!body)
		return cli_error("out of memory");
	while ((c = getopt_long(argc, argv, CMD_CREATE_OPTCHARS "h", opts, NULL)) != -1) {
		if (c == 'j')
			as_json = 1;
		else if (c == 'h')
			status = cli_help(cli);
		else if (c == '?')
			status = cli_bad_option(cli);
		else
			status = cmd_create_opt(cli, c, optarg, body);
		if (status || c == 'h')
			goto out;
	}
	if (optind < argc) {
		status = cli_usage_error(cli, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if ((status = cmd_create_check(cli, body)))
		goto out;
	if (cmd_create_sandbox(cli, body, &sandbox, &err))
		status = cli_report(cli, &err);
	else if (as_json)
		status = cli_print_json(sandbox);
	else
		printf("%s\n", json_string_value(json_object_get(sandbox, "id")));
out:
	json_decref(sandbox);
	json_decref(body);
	return status;
}

/* "k=v,k2=v2" from the sandbox's metadata (or labels). */
static void labels_text(json_t *sb, char *buf, size_t size)
{
	json_t *md = json_object_get(sb, "metadata"), *v;
	const char *k;
	size_t len = 0;

	if (!md)
		md = json_object_get(sb, "labels");
	buf[0] = '\0';
	json_object_foreach(md, k, v) {
		const char *s = json_string_value(v);
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", len ? "," : "", k, s ? s : "");
	}
}

static int ls_print(json_t *list, int quiet)
{
	static const char *const header[] = { "ID", "STATE", "TEMPLATE", "ISOLATION", "CPUS", "MEMORY", "CREATED",
					      "LABELS" };
	struct table t;
	size_t i;
	json_t *sb;
	int status = 0;

	if (quiet) {
		json_array_foreach(list, i, sb)
			printf("%s\n", json_string_value(json_object_get(sb, "id")));
		return 0;
	}
	if (table_init(&t, 8, header))
		return cli_error("out of memory");
	json_array_foreach(list, i, sb) {
		char cpus[32], mem[32], state[128], labels[1024];
		const char *st = json_string_value(json_object_get(sb, "state"));
		const char *reason = json_string_value(json_object_get(sb, "reason"));
		snprintf(state, sizeof(state), "%s%s%s", st ? st : "-", reason ? ": " : "", reason ? reason : "");
		snprintf(cpus, sizeof(cpus), "%lld", (long long)json_integer_value(json_object_get(sb, "cpus")));
		snprintf(mem, sizeof(mem), "%lld MiB", (long long)json_integer_value(json_object_get(sb, "memory_mb")));
		labels_text(sb, labels, sizeof(labels));
		const char *row[] = {
			json_string_value(json_object_get(sb, "id")), state,
			json_string_value(json_object_get(sb, "template")),
			json_string_value(json_object_get(sb, "isolation")), cpus, mem,
			json_string_value(json_object_get(sb, "created_at")), labels[0] ? labels : NULL,
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

/* Appends "label=<escaped K=V>" to the query in *q. */
static int query_add_label(char **q, const char *kv)
{
	char *e = client_escape(kv), *n = NULL;

	if (!e || asprintf(&n, "%s%slabel=%s", *q, **q ? "&" : "?", e) < 0)
		n = NULL;
	free(e);
	if (!n)
		return -ENOMEM;
	free(*q);
	*q = n;
	return 0;
}

int cmd_ls(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "label", required_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	char *query = strdup(""), *path = NULL;
	json_t *reply = NULL;
	int c, as_json = 0, quiet = 0, status = 0;

	if (!query)
		return cli_error("out of memory");
	while ((c = getopt_long(argc, argv, "l:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': as_json = 1; break;
		case 'q': quiet = 1; break;
		case 'h': status = cli_help(cli); goto out;
		case 'l':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				status = cli_usage_error(cli, "--label wants K=V, not '%s'", optarg);
				goto out;
			}
			if (query_add_label(&query, optarg)) {
				status = cli_error("out of memory");
				goto out;
			}
			break;
		default: status = cli_bad_option(cli); goto out;
		}
	}
	if (optind < argc) {
		status = cli_usage_error(cli, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (asprintf(&path, "/v1/sandboxes%s", query) < 0) {
		path = NULL;
		status = cli_error("out of memory");
		goto out;
	}
	if (client_request(&cli->client, "GET", path, NULL, &reply, &err)) {
		status = cli_report(cli, &err);
		goto out;
	}
	json_t *list = json_object_get(reply, "sandboxes");
	if (!json_is_array(list)) {
		status = cli_error("spaced answered without a list of sandboxes");
		goto out;
	}
	status = as_json ? cli_print_json(list) : ls_print(list, quiet);
out:
	json_decref(reply);
	free(query);
	free(path);
	return status;
}

static char *sandbox_path(const char *id)
{
	return cli_sandbox_path(id, NULL);
}

int cmd_inspect(struct cli *cli, int argc, char **argv)
{
	int as_json, status = cli_json_flag(cli, argc, argv, &as_json);

	if (status)
		return status < 0 ? cli_help(cli) : status;
	if (optind >= argc)
		return cli_usage_error(cli, "wants at least one sandbox ID");
	return cli_inspect_each(cli, argv + optind, argc - optind, sandbox_path);
}


int cmd_rm(struct cli *cli, int argc, char **argv)
{
	return cli_remove(cli, argc, argv, "sandbox", sandbox_path);
}

static void template_row(json_t *tp, const char **row, char *buf, size_t n)
{
	snprintf(buf, n, "%.12s", json_string_value(json_object_get(tp, "key")) ?: "-");
	row[0] = json_string_value(json_object_get(tp, "name"));
	row[1] = buf;
	row[2] = json_string_value(json_object_get(tp, "created_at"));
}

/* "/v1/templates/<escaped name>" (malloc'd; NULL without memory). */
static char *template_path(const char *name)
{
	return cli_named_path("templates", name);
}

/* "/v1/templates/<escaped name>/build" (malloc'd; NULL without memory). */
static char *template_build_path(const char *name)
{
	char *path = template_path(name), *build;

	if (!path || asprintf(&build, "%s/build", path) < 0)
		build = NULL;
	free(path);
	return build;
}

static int template_inspect(struct cli *cli, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(cli, "wants at least one template NAME");
	return cli_inspect_each(cli, argv + 1, argc - 1, template_path);
}

static int template_ls(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "NAME", "KEY", "CREATED" };
	return cli_list(cli, argc, argv, "/v1/templates", "templates", 3, header, template_row);
}

int cmd_template(struct cli *cli, int argc, char **argv)
{
	char name[64];

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cli_help(cli);
	if (argc < 2)
		return cli_usage_error(cli, "wants a subcommand: ls, inspect, rm, build, import or cancel");
	snprintf(name, sizeof(name), "%s %s", cli->name, argv[1]);
	const char *sub = argv[1];
	argv[1] = name;
	if (!strcmp(sub, "ls") || !strcmp(sub, "list"))
		return template_ls(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "inspect"))
		return template_inspect(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "rm"))
		return cli_remove(cli, argc - 1, argv + 1, "template", template_path);
	if (!strcmp(sub, "build"))
		return cmd_template_build(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "import"))
		return cmd_template_import(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "cancel"))
		return cli_remove(cli, argc - 1, argv + 1, "template", template_build_path);
	return cli_usage_error(cli, "unknown subcommand '%s' (ls, inspect, rm, build, import, cancel)", sub);
}

/* The kinds spaced runs, the default first: "isolation:  gvisor (default), runsc ..." then one
 * line a kind, and why each unavailable one is. A spaced from before the kinds has only its
 * driver and runtime. */
static void print_isolation(json_t *version)
{
	json_t *iso = json_object_get(version, "isolation");
	const char *deflt = json_string_value(json_object_get(iso, "default"));
	json_t *avail = json_object_get(iso, "available"), *runtime;
	const char *kind;

	if (!deflt) {
		printf("driver:     %s\n", json_string_value(json_object_get(version, "driver")) ?: "-");
		printf("runtime:    %s\n", json_string_value(json_object_get(version, "runtime")) ?: "-");
		return;
	}
	printf("isolation:  %s (default): %s\n", deflt, json_string_value(json_object_get(avail, deflt)) ?: "-");
	json_object_foreach(avail, kind, runtime) {
		if (strcmp(kind, deflt) == 0)
			continue;
		const char *why = json_string_value(json_object_get(json_object_get(iso, "unavailable"), kind));
		if (json_is_string(runtime))
			printf("            %s: %s\n", kind, json_string_value(runtime));
		else
			printf("            %s: unavailable (%s)\n", kind, why ?: "no reason given");
	}
}

/* The warm pools: "pools:      default (gvisor, 1 cpu, 512 MiB): 4 of 5 ready, 1 filling, 12
 * claims", a line a pool, and the last failure of one that failed. */
static void print_pools(json_t *version)
{
	json_t *p;
	size_t i;
	json_array_foreach(json_object_get(version, "pools"), i, p) {
		printf("%s %s (%s, %lld cpu, %lld MiB): %lld of %lld ready, %lld filling, %lld claims\n",
		       i ? "           " : "pools:     ", json_string_value(json_object_get(p, "template")) ?: "-",
		       json_string_value(json_object_get(p, "isolation")) ?: "-",
		       (long long)json_integer_value(json_object_get(p, "cpus")),
		       (long long)json_integer_value(json_object_get(p, "memory_mb")),
		       (long long)json_integer_value(json_object_get(p, "ready")),
		       (long long)json_integer_value(json_object_get(p, "size")),
		       (long long)json_integer_value(json_object_get(p, "filling")),
		       (long long)json_integer_value(json_object_get(p, "claims")));
		const char *why = json_string_value(json_object_get(p, "last_error"));
		if (why)
			printf("            last failure: %s\n", why);
	}
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
	struct client_err err = { 0 };
	json_t *health = NULL, *version = NULL;
	int as_json, status = cli_json_flag(cli, argc, argv, &as_json);

	if (status)
		return status < 0 ? cli_help(cli) : status;
	if (client_request(&cli->client, "GET", "/v1/health", NULL, &health, &err) ||
	    client_request(&cli->client, "GET", "/v1/version", NULL, &version, &err)) {
		status = cli_report(cli, &err);
		goto out;
	}
	if (as_json) {
		json_t *all = json_pack("{s:s}", "host", cli->client.host);
		if (!all || json_object_update(all, health) || json_object_update(all, version))
			status = cli_error("out of memory");
		else
			status = cli_print_json(all);
		json_decref(all);
		goto out;
	}
	printf("host:       %s\n", cli->client.host);
	printf("status:     %s\n", json_string_value(json_object_get(health, "status")) ?: "-");
	printf("version:    %s (API %lld)\n", json_string_value(json_object_get(version, "version")) ?: "-",
	       (long long)json_integer_value(json_object_get(version, "api")));
	print_isolation(version);
	printf("sandboxes:  %lld\n", (long long)json_integer_value(json_object_get(health, "sandboxes")));
	print_pools(version);
out:
	json_decref(health);
	json_decref(version);
	return status;
}

int cmd_version(struct cli *cli, int argc, char **argv)
{
	struct client_err err = { 0 };
	json_t *server = NULL;
	int as_json, status = cli_json_flag(cli, argc, argv, &as_json);

	if (status)
		return status < 0 ? cli_help(cli) : status;
	int r = client_request(&cli->client, "GET", "/v1/version", NULL, &server, &err);
	if (as_json) {
		json_t *all = json_pack("{s:{s:s},s:O?}", "client", "version", SPACE_VERSION,
					"server", r ? NULL : server);
		status = all ? cli_print_json(all) : cli_error("out of memory");
		json_decref(all);
	} else {
		printf("client: %s\n", SPACE_VERSION);
		if (!r)
			printf("server: %s (API %lld, driver %s)\n",
			       json_string_value(json_object_get(server, "version")) ?: "-",
			       (long long)json_integer_value(json_object_get(server, "api")),
			       json_string_value(json_object_get(server, "driver")) ?: "-");
		else if (err.kind == CLIENT_ERR_UNREACHABLE)
			printf("server: not reachable at %s\n", cli->client.host);
		else
			printf("server: unknown (%s)\n", err.message);
	}
	json_decref(server);
	return status;
}

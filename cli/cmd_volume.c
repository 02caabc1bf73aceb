/*
 * cli/cmd_volume.c - `space volume create|ls|inspect|rm`: volumes, storage that outlives
 * sandboxes (POST, GET and DELETE /v1/volumes[/NAME]), and `space create --volume`'s parsing.
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_volume_usage[] =
	"Usage: space volume create NAME [--size MIB] [--label K=V]...\n"
	"       space volume ls [--json]\n"
	"       space volume inspect NAME...\n"
	"       space volume rm NAME...\n"
	"\n"
	"Volumes: storage that outlives sandboxes, a disk of its own size. A sandbox mounts\n"
	"one with `space create --volume NAME:/path[:ro]`: read-write by one sandbox at a\n"
	"time, read-only by any number. A volume that a sandbox mounts cannot be removed.\n"
	"\n"
	"Options of create:\n"
	"      --size MIB       its size in MiB (default: spaced's, 1024)\n"
	"  -l, --label K=V      label (repeatable)\n"
	"Options of ls:\n"
	"      --json           print the JSON array of volume objects\n";

/* "/v1/volumes/<escaped name>" (malloc'd; NULL without memory). */
static char *volume_path(const char *name)
{
	return cli_named_path("volumes", name);
}

static int volume_create(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "label", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	json_t *body = json_object(), *labels = json_object(), *reply = NULL;
	struct client_err err = { 0 };
	int c, status = 0;
	long mb;

	if (!body || !labels || json_object_set(body, "labels", labels)) {
		status = cli_error("out of memory");
		goto out;
	}
	while (status == 0 && (c = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
		if (c == 's' && cli_parse_int(optarg, 1, 1L << 30, &mb) == 0)
			json_object_set_new(body, "size_mb", json_integer(mb));
		else if (c == 's')
			status = cli_usage_error(cli, "--size wants MiB, not '%s'", optarg);
		else if (c == 'l' && cli_kv_add(labels, optarg))
			status = cli_usage_error(cli, "--label wants K=V, not '%s'", optarg);
		else if (c == 'h')
			status = cli_help(cli);
		else if (c != 'l')
			status = cli_bad_option(cli);
	}
	if (status == 0 && optind != argc - 1)
		status = cli_usage_error(cli, "wants one volume NAME");
	if (status == 0)
		json_object_set_new(body, "name", json_string(argv[optind]));
	if (status == 0 && client_request(&cli->client, "POST", "/v1/volumes", body, &reply, &err))
		status = cli_report(cli, &err);
	else if (status == 0)
		printf("%s\n", json_string_value(json_object_get(reply, "name")) ?: argv[optind]);
out:
	json_decref(labels);
	json_decref(body);
	json_decref(reply);
	return status;
}

static void volume_row(json_t *v, const char **row, char *buf, size_t n)
{
	size_t half = n / 2;
	json_t *used = json_object_get(v, "used_bytes");
	row[0] = json_string_value(json_object_get(v, "name"));
	snprintf(buf, half, "%lld MiB", (long long)json_integer_value(json_object_get(v, "size_mb")));
	row[1] = buf;
	if (json_is_integer(used))
		snprintf(buf + half, half, "%.1f MiB", (double)json_integer_value(used) / (1 << 20));
	else
		snprintf(buf + half, half, "-");
	row[2] = buf + half;
	row[3] = json_string_value(json_object_get(v, "holder")) ?: "-";
	row[4] = json_string_value(json_object_get(v, "created_at"));
}

static int volume_ls(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "NAME", "SIZE", "USED", "HOLDER", "CREATED" };
	return cli_list(cli, argc, argv, "/v1/volumes", "volumes", 5, header, volume_row);
}

static int volume_inspect(struct cli *cli, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(cli, "wants at least one volume NAME");
	return cli_inspect_each(cli, argv + 1, argc - 1, volume_path);
}

static int volume_rm(struct cli *cli, int argc, char **argv)
{
	return cli_remove(cli, argc, argv, "volume", volume_path);
}

int cmd_volume(struct cli *cli, int argc, char **argv)
{
	static const struct cli_sub subs[] = {
		{ "create", volume_create }, { "ls", volume_ls }, { "list", volume_ls },
		{ "inspect", volume_inspect }, { "rm", volume_rm },
	};
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cli_help(cli);
	int rc = cli_run_sub(cli, argc, argv, subs, sizeof(subs) / sizeof(subs[0]));
	return rc >= 0 ? rc : cli_usage_error(cli, "wants a subcommand: create, ls, inspect or rm");
}

int cli_volume_opt(const struct cli *cli, const char *arg, json_t *body)
{
	/* NAME:/path[:ro] (a path may hold ':' itself; only a last ":ro" or ":rw" is a mode) */
	const char *colon = strchr(arg, ':');
	size_t n = strlen(arg);
	if (!colon || colon == arg || colon[1] != '/')
		return cli_usage_error(cli, "--volume wants NAME:/path[:ro], not '%s'", arg);
	bool ro = n > 3 && strcmp(arg + n - 3, ":ro") == 0;
	bool rw = n > 3 && strcmp(arg + n - 3, ":rw") == 0;
	size_t plen = n - (size_t)(colon + 1 - arg) - (ro || rw ? 3 : 0);
	json_t *list = json_object_get(body, "volumes");
	if (!list && (!(list = json_array()) || json_object_set_new(body, "volumes", list)))
		return cli_error("out of memory");
	json_t *m = json_pack("{s:s%, s:s%, s:b}", "name", arg, (size_t)(colon - arg), "path", colon + 1, plen,
			      "read_only", ro);
	return !m || json_array_append_new(list, m) ? cli_error("out of memory") : 0;
}

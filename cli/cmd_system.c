/*
 * cli/cmd_system.c - `space system df` and `space system prune`: the machine's cache, as
 * spaced sees it (GET /v1/system/df) and made smaller (POST /v1/system/prune).
 */
#include "cli/cli.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

const char cmd_system_usage[] =
	"usage: space system df [--json]\n"
	"       space system prune [--keep-mb MB] [--json]\n"
	"\n"
	"The machine's cache (spaced --cache-dir): what each kind of entry takes, and a prune\n"
	"of the kinds spaced can make again (Dockerfile step roots, booted microVM images),\n"
	"least recently used first, never one in use, down to --keep-mb (default 0: every\n"
	"entry not in use). The operator's, on spaced's Unix socket.\n"
	"\n"
	"  --keep-mb MB   leave this much of the prunable kinds\n"
	"  --json         print spaced's answer as JSON\n";

static void mib(char *buf, size_t n, json_t *v)
{
	snprintf(buf, n, "%.1f MiB", (double)json_integer_value(v) / (1 << 20));
}

static void df_row(json_t *k, const char **row, char *buf, size_t n)
{
	size_t third = n / 3;
	row[0] = json_string_value(json_object_get(k, "kind"));
	snprintf(buf, third, "%lld", (long long)json_integer_value(json_object_get(k, "entries")));
	row[1] = buf;
	mib(buf + third, third, json_object_get(k, "bytes"));
	row[2] = buf + third;
	bool prunable = json_is_true(json_object_get(k, "prunable"));
	if (prunable)
		mib(buf + 2 * third, third, json_object_get(k, "reclaimable"));
	row[3] = prunable ? buf + 2 * third : "-";
}

/* Options: --json, and --keep-mb when keep is given. Returns -1 to go on, else an exit status. */
static int options(struct cli *cli, int argc, char **argv, long *keep, int *as_json)
{
	static const struct option opts[] = {
		{ "keep-mb", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'k' && keep) {
			if (cli_parse_int(optarg, 0, LONG_MAX >> 20, keep))
				return cli_usage_error(cli, "--keep-mb wants a number of MiB from 0 up, not '%s'", optarg);
		} else if (c == 'j') {
			*as_json = 1;
		} else if (c == 'h') {
			return cli_help(cli);
		} else {
			return cli_bad_option(cli);
		}
	}
	if (optind != argc)
		return cli_usage_error(cli, "takes no arguments");
	return -1;
}

static int system_df(struct cli *cli, int argc, char **argv)
{
	int as_json = 0, rc = options(cli, argc, argv, NULL, &as_json);
	if (rc >= 0)
		return rc;
	struct client_err err = { 0 };
	json_t *reply = NULL;
	if (client_request(&cli->client, "GET", "/v1/system/df", NULL, &reply, &err))
		return cli_report(cli, &err);
	if (as_json) {
		rc = cli_print_json(reply);
	} else {
		static const char *const header[] = { "KIND", "ENTRIES", "SIZE", "RECLAIMABLE" };
		rc = cli_print_list(json_object_get(reply, "kinds"), false, 4, header, df_row);
	}
	json_decref(reply);
	return rc;
}

static int system_prune(struct cli *cli, int argc, char **argv)
{
	long keep = 0;
	int as_json = 0, rc = options(cli, argc, argv, &keep, &as_json);
	if (rc >= 0)
		return rc;
	struct client_err err = { 0 };
	json_t *reply = NULL, *body = json_pack("{s:I}", "keep_bytes", (json_int_t)keep << 20);
	if (!body)
		return cli_error("out of memory");
	if (client_request(&cli->client, "POST", "/v1/system/prune", body, &reply, &err)) {
		json_decref(body);
		return cli_report(cli, &err);
	}
	json_decref(body);
	if (as_json)
		rc = cli_print_json(reply);
	else {
		char freed[32], kept[32];
		mib(freed, sizeof(freed), json_object_get(reply, "freed_bytes"));
		mib(kept, sizeof(kept), json_object_get(reply, "kept_bytes"));
		printf("removed %lld entries (%s); %s left; %lld in use kept\n",
		       (long long)json_integer_value(json_object_get(reply, "removed")), freed, kept,
		       (long long)json_integer_value(json_object_get(reply, "busy")));
		rc = 0;
	}
	json_decref(reply);
	return rc;
}

int cmd_system(struct cli *cli, int argc, char **argv)
{
	static const struct cli_sub subs[] = { { "df", system_df }, { "prune", system_prune } };
	int rc = cli_run_sub(cli, argc, argv, subs, sizeof(subs) / sizeof(subs[0]));
	return rc >= 0 ? rc : cli_usage_error(cli, "wants df or prune");
}

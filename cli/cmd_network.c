/*
 * cli/cmd_network.c - space network: a sandbox's egress policy, shown or changed
 * (GET /v1/sandboxes/:id, PATCH /v1/sandboxes/:id/network), and the --egress, --allow and
 * --deny options that space create shares.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cmd_network_usage[] =
	"Usage: space network [OPTIONS] ID\n"
	"\n"
	"Show sandbox ID's network: its egress policy, its address inside, the address\n"
	"spaced reaches it at, and the bytes it sent and received. With options, change\n"
	"the policy first: new connections follow it at once, open ones go on. What is\n"
	"not given stays (a change of --egress away from allow drops the allow list).\n"
	"\n"
	"Options:\n"
	"      --egress none|open|allow\n"
	"                       nothing, the public internet, or only what --allow lists\n"
	"      --allow CIDR     an address or range it may reach (repeatable; the list\n"
	"                       given replaces the one it had)\n"
	"      --deny CIDR      an address or range it may not reach (repeatable; replaces)\n"
	"      --no-allow       empty the allow list\n"
	"      --no-deny        empty the deny list\n"
	"      --json           print the network object as JSON\n"
	"  -h, --help           show this help\n";

/* body.network, made when missing; NULL when out of memory. */
static json_t *network_of(json_t *body)
{
	json_t *net = json_object_get(body, "network");
	if (!json_is_object(net)) {
		net = json_object();
		if (!net || json_object_set_new(body, "network", net))
			return NULL;
	}
	return net;
}

/* Appends arg (NULL: nothing) to body.network[key], the array made when missing. */
static int append(json_t *body, const char *key, const char *arg)
{
	json_t *net = network_of(body);
	if (!net)
		return cli_error("out of memory");
	json_t *arr = json_object_get(net, key);
	if (!arr) {
		arr = json_array();
		if (!arr || json_object_set_new(net, key, arr))
			return cli_error("out of memory");
	}
	return arg && json_array_append_new(arr, json_string(arg)) ? cli_error("out of memory") : 0;
}

int cli_network_opt(const struct cli *cli, int opt, const char *arg, json_t *body)
{
	(void)cli;
	/* create checks a policy against --no-network by this mark, removed before sending */
	if (!json_object_get(body, "network_options"))
		json_object_set_new(body, "network_options", json_object());
	json_object_set_new(json_object_get(body, "network_options"), "given", json_true());
	json_t *net = json_object_get(body, "network");
	if (json_is_false(net))
		return 0; /* refused by the check after the last option */
	switch (opt) {
	case CLI_OPT_EGRESS:
		net = network_of(body);
		return !net || json_object_set_new(net, "egress", json_string(arg)) ? cli_error("out of memory") : 0;
	case CLI_OPT_ALLOW:
		return append(body, "allow", arg);
	case CLI_OPT_DENY:
		return append(body, "deny", arg);
	case CLI_OPT_NO_ALLOW:
		return append(body, "allow", NULL);
	case CLI_OPT_NO_DENY:
		return append(body, "deny", NULL);
	default:
		return cli_bad_option(cli);
	}
}

static void print_list(const char *name, json_t *arr)
{
	printf("%-10s", name);
	if (json_array_size(arr) == 0)
		printf(" -");
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		printf("%s%s", i ? ", " : " ", json_string_value(v));
	printf("\n");
}

int cmd_network(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "egress", required_argument, NULL, CLI_OPT_EGRESS }, { "allow", required_argument, NULL, CLI_OPT_ALLOW },
		{ "deny", required_argument, NULL, CLI_OPT_DENY },     { "no-allow", no_argument, NULL, CLI_OPT_NO_ALLOW },
		{ "no-deny", no_argument, NULL, CLI_OPT_NO_DENY },     { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },                    { NULL, 0, NULL, 0 },
	};
	json_t *body = json_object(), *sb = NULL;
	int c, as_json = 0, status = 0;
	while (!status && (c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(cmd_network_usage, stdout);
			json_decref(body);
			return 0;
		}
		if (c == 'j')
			as_json = 1;
		else
			status = cli_network_opt(cli, c, optarg, body);
	}
	if (!status && optind != argc - 1)
		status = cli_usage_error(cli, "space network takes one sandbox id");
	if (status) {
		json_decref(body);
		return status;
	}
	const char *id = argv[optind];
	json_t *net = json_object_get(body, "network");
	struct client_err err = { 0 };
	char *path = cli_sandbox_path(id, net ? "/network" : "");
	int r = path ? client_request(&cli->client, net ? "PATCH" : "GET", path, net, &sb, &err) : -1;
	free(path);
	json_decref(body);
	if (r)
		return cli_report(cli, &err);
	net = json_object_get(sb, "network");
	if (as_json) {
		cli_print_json(net);
	} else if (!json_is_object(net)) {
		printf("no network (made with --no-network)\n");
	} else {
		printf("%-10s %s\n", "egress", json_string_value(json_object_get(net, "egress")));
		print_list("allow", json_object_get(net, "allow"));
		print_list("deny", json_object_get(net, "deny"));
		printf("%-10s %s (gateway %s)\n", "address", json_string_value(json_object_get(net, "address")),
		       json_string_value(json_object_get(net, "gateway")));
		printf("%-10s %s\n", "reached at", json_string_value(json_object_get(net, "host_address")));
		printf("%-10s %lld out, %lld in\n", "bytes", (long long)json_integer_value(json_object_get(net, "bytes_out")),
		       (long long)json_integer_value(json_object_get(net, "bytes_in")));
	}
	json_decref(sb);
	return status;
}

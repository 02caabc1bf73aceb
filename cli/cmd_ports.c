/*
 * cli/cmd_ports.c - space ports: the TCP ports listening inside a sandbox
 * (GET /v1/sandboxes/:id/ports).
 */
#include <stdio.h>

#include "cli.h"

const char cmd_ports_usage[] =
	"Usage: space ports [--json] ID\n"
	"\n"
	"List the TCP ports that processes in sandbox ID listen on, on any address\n"
	"(0.0.0.0, 127.0.0.1, ::): PORT, ADDRESS, PROTOCOL.\n"
	"\n"
	"Options:\n"
	"      --json           print the JSON array instead\n"
	"  -h, --help           show this help\n";

static void port_row(json_t *p, const char **row, char *buf, size_t n)
{
	snprintf(buf, n, "%lld", (long long)json_integer_value(json_object_get(p, "port")));
	row[0] = buf;
	row[1] = json_string_value(json_object_get(p, "address"));
	row[2] = json_string_value(json_object_get(p, "protocol"));
}

int cmd_ports(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "PORT", "ADDRESS", "PROTOCOL" };
	return cli_sandbox_listing(cli, argc, argv, "/ports", "ports", 3, header, port_row);
}

/*
 * cli/cmd_metrics.c - space metrics: what a sandbox used of its CPUs, memory and disk, one
 * line per sample spaced took (GET /v1/sandboxes/:id/metrics), oldest first.
 */
#include <stdio.h>

#include "cli.h"

const char cmd_metrics_usage[] =
	"Usage: space metrics [--json] ID\n"
	"\n"
	"Show what sandbox ID used, as spaced measured it from the host every few seconds while\n"
	"it ran (the last 10 minutes of running), oldest first: TIME, CPU (percent of all its\n"
	"CPUs), CPUS, MEMORY and DISK (used / total, MiB). A paused or suspended sandbox shows\n"
	"what it used while it ran.\n"
	"\n"
	"Options:\n"
	"      --json           print the JSON array of samples instead\n"
	"  -h, --help           show this help\n";

#define MIB (1024.0 * 1024.0)

static double mib(json_t *s, const char *key)
{
	return (double)json_integer_value(json_object_get(s, key)) / MIB;
}

static void metrics_row(json_t *s, const char **row, char *buf, size_t n)
{
	size_t w = n / 4;
	snprintf(buf, w, "%.1f%%", json_number_value(json_object_get(s, "cpu_used_pct")));
	snprintf(buf + w, w, "%lld", (long long)json_integer_value(json_object_get(s, "cpu_count")));
	snprintf(buf + 2 * w, w, "%.1f / %.0f", mib(s, "mem_used_bytes"), mib(s, "mem_total_bytes"));
	snprintf(buf + 3 * w, w, "%.1f / %.0f", mib(s, "disk_used_bytes"), mib(s, "disk_total_bytes"));
	row[0] = json_string_value(json_object_get(s, "timestamp"));
	for (size_t i = 0; i < 4; i++)
		row[1 + i] = buf + i * w;
}

int cmd_metrics(struct cli *cli, int argc, char **argv)
{
	static const char *const header[] = { "TIME", "CPU", "CPUS", "MEMORY MiB", "DISK MiB" };
	return cli_sandbox_listing(cli, argc, argv, "/metrics", "metrics", 5, header, metrics_row);
}

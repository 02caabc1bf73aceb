/*
 * cli/cmd_watch.c - space watch: the changes made to a folder of a sandbox, one line each, as
 * they happen (GET /v1/sandboxes/:id/files/watch), until interrupted or the folder goes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sigfwd.h"

const char cmd_watch_usage[] =
	"Usage: space watch [-r] [--json] ID PATH\n"
	"\n"
	"Print the changes made inside sandbox ID to the folder PATH as they happen, one line\n"
	"each: KIND NAME, KIND one of create, write, remove, rename (the old name of a move),\n"
	"chmod, and NAME relative to PATH; `lost` when events were dropped because they were\n"
	"read too slowly. Runs until PATH is removed (exit 0) or until interrupted (exit 130).\n"
	"\n"
	"Options:\n"
	"  -r, --recursive      every folder below PATH too, those made later included\n"
	"      --json           print spaced's events as JSON lines instead\n"
	"  -h, --help           show this help\n";

struct watch_out {
	bool json;
	bool failed;
	struct client_err *err;
};

static int on_event(json_t *ev, void *arg)
{
	struct watch_out *w = arg;
	const char *type = json_string_value(json_object_get(ev, "type")) ?: "";
	if (strcmp(type, "error") == 0) {
		const json_t *e = json_object_get(ev, "error");
		w->err->kind = CLIENT_ERR_API;
		snprintf(w->err->code, sizeof(w->err->code), "%s", json_string_value(json_object_get(e, "code")) ?: "");
		snprintf(w->err->message, sizeof(w->err->message), "%s",
			 json_string_value(json_object_get(e, "message")) ?: "the watch failed");
		w->failed = true;
		return 1;
	}
	if (strcmp(type, "end") == 0)
		return 1;
	if (w->json) {
		char *s = json_dumps(ev, JSON_COMPACT);
		if (s)
			printf("%s\n", s);
		free(s);
	} else if (strcmp(type, "lost") == 0) {
		printf("lost\n");
	} else if (strcmp(type, "start") != 0 && strcmp(type, "keepalive") != 0) {
		printf("%s %s\n", type, json_string_value(json_object_get(ev, "name")) ?: "");
	}
	fflush(stdout);
	return 0;
}

/* The stream's tick: a caught signal ends the watch. */
static int stop_on_signal(void *arg)
{
	(void)arg;
	sigfwd_drain();
	return sigfwd_any() ? -ECANCELED : 0;
}

int cmd_watch(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "recursive", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	struct watch_out out = { .err = &err };
	bool recursive = false;
	int c;

	while ((c = getopt_long(argc, argv, "rh", opts, NULL)) != -1) {
		if (c == 'r')
			recursive = true;
		else if (c == 'j')
			out.json = true;
		else if (c == 'h')
			return cli_help(cli);
		else
			return cli_bad_option(cli);
	}
	if (argc - optind != 2)
		return cli_usage_error(cli, "wants a sandbox ID and a PATH");
	char *esc = client_escape(argv[optind + 1]);
	char *suffix = NULL;
	if (!esc || asprintf(&suffix, "/files/watch?path=%s&recursive=%d", esc, recursive) < 0)
		suffix = NULL;
	char *path = suffix ? cli_sandbox_path(argv[optind], suffix) : NULL;
	free(esc);
	free(suffix);
	if (!path)
		return cli_error("out of memory");
	struct client_stream_ops ops = { .event = on_event, .wake_fd = -1, .arg = &out };
	/* Ctrl-C (SIGTERM, SIGHUP) ends the watch, even where it came ignored (a background job's) */
	if (sigfwd_install() == 0) {
		ops.tick = stop_on_signal;
		ops.wake_fd = sigfwd_fd();
	}
	int r = client_stream(&cli->client, "GET", path, NULL, &ops, &err);
	free(path);
	if (r == -ECANCELED)
		return CLI_EXIT_INTERRUPTED;
	return r < 0 || out.failed ? cli_report(cli, &err) : 0;
}

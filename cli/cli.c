/*
 * cli/cli.c - the conventions every `space` command follows: one line on
 * stderr per failure, with a fixed text when spaced cannot be reached, exit
 * statuses from one table (cli.h), usage and --help, and the parsing of
 * option values (K=V pairs, integers, seconds) so that every command rejects
 * a bad value the same way, and the SPACE_VERBOSE note of a transparent resume.
 */
#include "cli.h"
#include "table.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_report(const struct cli *cli, const struct client_err *err)
{
	const char *host = cli->client.host ? cli->client.host : CLIENT_DEFAULT_HOST;

	fflush(stdout);
	switch (err->kind) {
	case CLIENT_ERR_UNREACHABLE:
		if (err->os_errno == EACCES || err->os_errno == EPERM)
			fprintf(stderr, "space: cannot reach spaced at %s: %s\n", host,
				strerror(err->os_errno));
		else
			fprintf(stderr, "space: cannot reach spaced at %s: is it running? "
					"Start it with 'make up' (or: spaced &)\n", host);
		return CLI_EXIT_DAEMON;
	case CLIENT_ERR_TRANSPORT:
		fprintf(stderr, "space: %s\n", err->message);
		return CLI_EXIT_DAEMON;
	case CLIENT_ERR_API:
		if (err->code[0])
			fprintf(stderr, "space: %s (%s)\n", err->message, err->code);
		else
			fprintf(stderr, "space: %s\n", err->message);
		return CLI_EXIT_FAIL;
	default:
		fprintf(stderr, "space: %s\n", err->message[0] ? err->message : "unknown error");
		return CLI_EXIT_FAIL;
	}
}

int cli_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("space: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_FAIL;
}

int cli_usage_error(const struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return cli_bad_option(cli);
}

int cli_bad_option(const struct cli *cli)
{
	fprintf(stderr, "Run '%s --help' for usage.\n", cli->name);
	return cli->usage_exit;
}

int cli_help(const struct cli *cli)
{
	fputs(cli->usage, stdout);
	return 0;
}

int cli_run_sub(struct cli *cli, int argc, char **argv, const struct cli_sub *subs, size_t n)
{
	for (size_t i = 0; argc >= 2 && i < n; i++) {
		if (strcmp(argv[1], subs[i].word))
			continue;
		char name[64];
		struct cli sub = *cli;
		snprintf(name, sizeof(name), "%s %s", cli->name, subs[i].word);
		sub.name = name;
		argv[1] = name;
		return subs[i].run(&sub, argc - 1, argv + 1);
	}
	return -1;
}

int cli_kv_add(json_t *obj, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv)
		return -EINVAL;
	char *key = strndup(kv, (size_t)(eq - kv));
	if (!key)
		return -ENOMEM;
	int r = json_object_set_new(obj, key, json_string(eq + 1)) ? -EINVAL : 0;
	free(key);
	return r;
}

int cli_parse_int(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_parse_seconds(const char *s, json_t **out)
{
	char *end;

	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return -EINVAL;
	if (v < 1e15 && (double)(long long)v == v)
		*out = json_integer((json_int_t)v);
	else
		*out = json_real(v);
	return *out ? 0 : -ENOMEM;
}

int cli_print_json(json_t *v)
{
	char *text = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);

	if (!text)
		return cli_error("out of memory");
	puts(text);
	free(text);
	return 0;
}

int cli_print_list(json_t *list, bool as_json, size_t ncols, const char *const *header, cli_row_fn *fn)
{
	struct table t = { 0 };
	const char *row[16];
	char buf[2048];
	size_t i;
	json_t *item;
	int status = 0;

	if (as_json)
		return cli_print_json(list ? list : json_array());
	if (ncols > sizeof(row) / sizeof(row[0]) || table_init(&t, ncols, header))
		return cli_error("out of memory");
	json_array_foreach(list, i, item) {
		fn(item, row, buf, sizeof(buf));
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

int cli_sandbox_listing(struct cli *cli, int argc, char **argv, const char *suffix, const char *key, size_t ncols,
			const char *const *header, cli_row_fn *fn)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct client_err err = { 0 };
	json_t *reply = NULL;
	int c, as_json = 0, status;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			as_json = 1;
		else if (c == 'h')
			return cli_help(cli);
		else
			return cli_bad_option(cli);
	}
	if (argc - optind != 1)
		return cli_usage_error(cli, "wants exactly one sandbox ID");
	char *path = cli_sandbox_path(argv[optind], suffix);
	if (!path)
		return cli_error("out of memory");
	if (client_request(&cli->client, "GET", path, NULL, &reply, &err))
		status = cli_report(cli, &err);
	else
		status = cli_print_list(json_object_get(reply, key), as_json, ncols, header, fn);
	json_decref(reply);
	free(path);
	return status;
}

char *cli_sandbox_path(const char *id, const char *suffix)
{
	char *e = client_escape(id), *path;

	if (!e)
		return NULL;
	if (asprintf(&path, "/v1/sandboxes/%s%s", e, suffix ? suffix : "") < 0)
		path = NULL;
	free(e);
	return path;
}

void cli_note_resumed(const char *path)
{
	static const char prefix[] = "/v1/sandboxes/";
	const char *id = strncmp(path, prefix, sizeof(prefix) - 1) ? NULL : path + sizeof(prefix) - 1;
	int len = id ? (int)strcspn(id, "/?") : 0;

	if (id)
		fprintf(stderr, "space: sandbox %.*s was paused or suspended; spaced resumed it\n", len, id);
	else
		fprintf(stderr, "space: spaced resumed a paused or suspended sandbox\n");
}

int cli_remove(struct cli *cli, int argc, char **argv, const char *what, char *(*path_of)(const char *id))
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, force = 0, status = 0;

	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		if (c == 'f')
			force = 1;
		else if (c == 'h')
			return cli_help(cli);
		else
			return cli_bad_option(cli);
	}
	if (optind >= argc && !force)
		return cli_usage_error(cli, "wants at least one %s ID", what);
	for (int i = optind; i < argc; i++) {
		struct client_err err = { 0 };
		char *path = path_of(argv[i]);
		if (!path)
			return cli_error("out of memory");
		int r = client_request(&cli->client, "DELETE", path, NULL, NULL, &err);
		free(path);
		if (!r) {
			printf("%s\n", argv[i]);
			fflush(stdout);
			continue;
		}
		if (force && err.kind == CLIENT_ERR_API && err.status == 404)
			continue;
		status = cli_report(cli, &err);
		if (status == CLI_EXIT_DAEMON)
			return status;
	}
	return status;
}

int cli_inspect_each(struct cli *cli, char **names, int n, char *(*path_of)(const char *name))
{
	int status = 0;

	for (int i = 0; i < n; i++) {
		struct client_err err = { 0 };
		json_t *obj = NULL;
		char *path = path_of(names[i]);
		if (!path)
			return cli_error("out of memory");
		int r = client_request(&cli->client, "GET", path, NULL, &obj, &err);
		free(path);
		if (r) {
			status = cli_report(cli, &err);
			if (status == CLI_EXIT_DAEMON)
				return status;
			continue;
		}
		if (cli_print_json(obj))
			status = CLI_EXIT_FAIL;
		json_decref(obj);
	}
	return status;
}

int cli_json_flag(struct cli *cli, int argc, char **argv, int *as_json)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*as_json = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			*as_json = 1;
		else if (c == 'h')
			return -1;
		else
			return cli_bad_option(cli);
	}
	return 0;
}

char *cli_named_path(const char *collection, const char *name)
{
	char *e = client_escape(name), *path;

	if (!e)
		return NULL;
	if (asprintf(&path, "/v1/%s/%s", collection, e) < 0)
		path = NULL;
	free(e);
	return path;
}

int cli_list(struct cli *cli, int argc, char **argv, const char *path, const char *key, size_t ncols,
	     const char *const *header, cli_row_fn *fn)
{
	struct client_err err = { 0 };
	json_t *reply = NULL;
	int as_json, status = cli_json_flag(cli, argc, argv, &as_json);

	if (status)
		return status < 0 ? cli_help(cli) : status;
	if (optind < argc)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[optind]);
	if (client_request(&cli->client, "GET", path, NULL, &reply, &err))
		return cli_report(cli, &err);
	status = cli_print_list(json_object_get(reply, key), as_json, ncols, header, fn);
	json_decref(reply);
	return status;
}

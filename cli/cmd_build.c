/*
 * cli/cmd_build.c - `space template build`: sends a folder (the build context, as a tar
 * stream made by tar(1)) to POST /v1/templates and shows the build as it goes: "[3/7] RUN
 * ..." for each step, the commands' output as they print it, then the template. Ctrl-C
 * closes the request, which cancels the build.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct shown {
	bool quiet;
	bool done;
	char failure[1024];
	json_t *template;
};

static void put(FILE *f, json_t *data)
{
	fwrite(json_string_value(data), 1, json_string_length(data), f);
	fflush(f);
}

static int on_event(json_t *ev, void *arg)
{
	struct shown *s = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	if (!type)
		return 0;
	if (!strcmp(type, "step") && !s->quiet) {
		printf("[%lld/%lld] %s%s\n", (long long)json_integer_value(json_object_get(ev, "step")),
		       (long long)json_integer_value(json_object_get(ev, "steps")),
		       json_string_value(json_object_get(ev, "text")),
		       json_is_true(json_object_get(ev, "cached")) ? " (cached)" : "");
		fflush(stdout);
	} else if (!strcmp(type, "output") && !s->quiet) {
		const char *stream = json_string_value(json_object_get(ev, "stream"));
		put(stream && !strcmp(stream, "stderr") ? stderr : stdout, json_object_get(ev, "data"));
	} else if (!strcmp(type, "waiting") && !s->quiet) {
		fprintf(stderr, "%s: waiting: %s\n", "space template build", json_string_value(json_object_get(ev, "message")));
	} else if (!strcmp(type, "done")) {
		s->done = true;
		s->template = json_incref(json_object_get(ev, "template"));
	} else if (!strcmp(type, "error")) {
		json_t *step = json_object_get(ev, "step");
		const char *msg = json_string_value(json_object_get(json_object_get(ev, "error"), "message"));
		if (step)
			snprintf(s->failure, sizeof(s->failure), "step %lld: %s", (long long)json_integer_value(step),
				 msg ? msg : "failed");
		else
			snprintf(s->failure, sizeof(s->failure), "%s", msg ? msg : "failed");
	}
	return 0;
}

/* Starts `tar -c` of dir on a pipe; its read end into *fd. Returns the pid or -errno. */
static pid_t start_tar(const char *dir, int *fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execlp("tar", "tar", "-c", "-f", "-", "-C", dir, ".", (char *)NULL);
		fprintf(stderr, "space: cannot run tar: %s\n", strerror(errno));
		_exit(127);
	}
	int err = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -err;
	}
	*fd = p[0];
	return pid;
}

/* The Dockerfile's path inside dir ("Dockerfile" when file is NULL), into out. */
static int dockerfile_in(const char *dir, const char *file, char *out, size_t n)
{
	char ctx[PATH_MAX], df[PATH_MAX];
	if (!file) {
		snprintf(out, n, "Dockerfile");
		return 0;
	}
	if (!realpath(dir, ctx) || !realpath(file, df))
		return cli_error("%s: %s", file, strerror(errno));
	size_t len = strlen(ctx);
	if (strncmp(df, ctx, len) != 0 || (df[len] != '/' && strcmp(ctx, "/") != 0))
		return cli_error("the Dockerfile %s is not inside the build context %s", file, dir);
	snprintf(out, n, "%s", df + len + (df[len] == '/'));
	return 0;
}

/* What `space template build`'s command line asks for. */
struct build_args {
	const char *name, *file, *dir;
	char *query; /* "&build_arg=...&packages=..." for the request (malloc'd), or NULL */
	bool quiet;
};

/*
 * Parses the command line into *a; a->query is then the caller's to free. Returns 0, -1 after
 * --help (nothing to free), or the exit status of a usage error it reported.
 */
static int parse_build(struct cli *cli, int argc, char **argv, struct build_args *a)
{
	static const struct option opts[] = {
		{ "tag", required_argument, NULL, 't' }, { "file", required_argument, NULL, 'f' },
		{ "build-arg", required_argument, NULL, 'a' }, { "quiet", no_argument, NULL, 'q' },
		{ "packages", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t qlen = 0;
	FILE *q = open_memstream(&a->query, &qlen);
	int c, rc = 0;
	optind = 1;
	while (!rc && (c = getopt_long(argc, argv, "t:f:q", opts, NULL)) != -1) {
		char *e;
		switch (c) {
		case 't': a->name = optarg; break;
		case 'f': a->file = optarg; break;
		case 'q': a->quiet = true; break;
		case 'a':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				rc = cli_usage_error(cli, "--build-arg wants NAME=VALUE, not '%s'", optarg);
				break;
			}
			e = client_escape(optarg);
			fprintf(q, "&build_arg=%s", e ? e : "");
			free(e);
			break;
		case 'p':
			e = client_escape(optarg);
			fprintf(q, "&packages=%s", e ? e : "");
			free(e);
			break;
		case 'h': rc = -1; break;
		default: rc = cli_bad_option(cli); break;
		}
	}
	fclose(q);
	a->dir = optind < argc ? argv[optind] : ".";
	if (!rc && (!a->name || optind + 1 < argc))
		rc = cli_usage_error(cli, !a->name ? "wants -t NAME" : "takes one CONTEXT folder");
	if (rc) {
		free(a->query);
		a->query = NULL;
	}
	return rc;
}

/* The request's path for a, into path (n bytes). Returns 0 or the exit status of a failure it reported. */
static int build_path(const struct build_args *a, char *path, size_t n)
{
	struct stat st;
	char df[PATH_MAX];
	if (stat(a->dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return cli_error("%s: not a folder", a->dir);
	if (dockerfile_in(a->dir, a->file, df, sizeof(df)))
		return CLI_EXIT_FAIL;
	char *en = client_escape(a->name), *ef = client_escape(df);
	snprintf(path, n, "/v1/templates?name=%s&dockerfile=%s%s", en ? en : "", ef ? ef : "",
		 a->query ? a->query : "");
	free(en);
	free(ef);
	return 0;
}

/*
 * Sends dir, as tar(1) makes it, to POST path and shows the build's events as they come (*s).
 * Returns 0 once the request ended, or the exit status of a failure it reported.
 */
static int upload_context(struct cli *cli, const char *dir, const char *path, struct shown *s)
{
	int fd = -1;
	pid_t tar = start_tar(dir, &fd);
	if (tar < 0)
		return cli_error("cannot run tar: %s", strerror((int)-tar));
	struct client_err err = { 0 };
	struct client_stream_ops ops = { .event = on_event, .wake_fd = -1, .arg = s };
	int r = client_stream_upload(&cli->client, "POST", path, "application/x-tar", fd, &ops, &err);
	close(fd);
	int status;
	kill(tar, SIGTERM); /* done with it, whether it finished or not */
	while (waitpid(tar, &status, 0) < 0 && errno == EINTR)
		;
	return r < 0 ? cli_report(cli, &err) : 0;
}

/* The build's end as the events told it: the template built, or why not. Returns the exit status. */
static int show_result(const struct shown *s)
{
	if (s->failure[0] || !s->done)
		return cli_error("%s", s->failure[0] ? s->failure : "the build ended without a template");
	if (s->quiet)
		printf("%s\n", json_string_value(json_object_get(s->template, "name")));
	else
		printf("template %s built (%s)\n", json_string_value(json_object_get(s->template, "name")),
		       json_string_value(json_object_get(s->template, "key")));
	return 0;
}

int cmd_template_build(struct cli *cli, int argc, char **argv)
{
	struct build_args a = { 0 };
	char path[PATH_MAX * 2];
	int rc = parse_build(cli, argc, argv, &a);
	if (rc)
		return rc < 0 ? cli_help(cli) : rc;
	rc = build_path(&a, path, sizeof(path));
	free(a.query);
	if (rc)
		return rc;
	struct shown s = { .quiet = a.quiet };
	if (!(rc = upload_context(cli, a.dir, path, &s)))
		rc = show_result(&s);
	json_decref(s.template);
	return rc;
}

int cmd_template_import(struct cli *cli, int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cli_help(cli);
	if (argc != 3)
		return cli_usage_error(cli, "wants NAME and an image: oci-archive:FILE, docker-archive:FILE or docker://REF");
	const char *name = argv[1], *image = argv[2];
	const char *colon = strchr(image, ':');
	bool archive = colon && (!strncmp(image, "oci-archive:", 12) || !strncmp(image, "docker-archive:", 15));
	if (!archive && strncmp(image, "docker://", 9) != 0)
		return cli_usage_error(cli, "'%s' is no image: oci-archive:FILE, docker-archive:FILE or docker://REF", image);
	char *en = client_escape(name), *es = NULL, *path = NULL;
	if (archive)
		es = strndup(image, (size_t)(colon - image));
	else
		es = client_escape(image);
	if (!en || !es || asprintf(&path, "/v1/templates?name=%s&source=%s", en, es) < 0)
		path = NULL;
	free(en);
	free(es);
	if (!path)
		return cli_error("out of memory");
	struct client_err err = { 0 };
	json_t *reply = NULL;
	int r;
	if (archive) {
		int fd = open(colon + 1, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			free(path);
			if (fd >= 0)
				close(fd);
			return cli_error("%s: %s", colon + 1, strerror(errno));
		}
		r = client_send_file(&cli->client, "POST", path, fd, (long long)st.st_size, &reply, &err);
		close(fd);
	} else {
		r = client_request(&cli->client, "POST", path, NULL, &reply, &err);
	}
	free(path);
	if (r)
		return cli_report(cli, &err);
	printf("template %s imported (%s)\n", json_string_value(json_object_get(reply, "name")),
	       json_string_value(json_object_get(reply, "key")));
	json_decref(reply);
	return 0;
}

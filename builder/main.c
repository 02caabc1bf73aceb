/*
 * builder/main.c - space-build: builds template NAME from the Dockerfile in a build context
 * (build.h says how), printing the build's events, one JSON object per line:
 *
 *   {"type": "step", "step": 3, "steps": 7, "line": 5, "text": "RUN make", "cached": false}
 *   {"type": "output", "stream": "stdout", "data": "..."}       a RUN command's output
 *   {"type": "done", "template": {...}}                        the template, as GET shows it
 *   {"type": "error", "error": {"code": "build_failed", "message": "..."}, "step": 3,
 *    "exit_code": 2}                                           the last line of a failed build
 *
 *   space-build --socket PATH --cache-dir DIR --state-dir DIR --context DIR --name NAME
 *               [--archive FILE] [--file PATH] [--build-arg NAME=VALUE]... [--packages PKG,...]
 *   space-build --unpack-image ARCHIVE DIR
 *
 * With --archive, the context is unpacked from that tar file into DIR first (context.h). The
 * second form only unpacks, as a context is, an OCI archive spaced imports (an OCI layout in a
 * tar file) into DIR, saying why on stderr when it cannot (exit 1).
 *
 * Exit status: 0 built, 1 failed (the error event says why), 2 bad command line. SIGTERM or
 * SIGINT cancels: the step's sandbox is removed and no template is recorded. spaced starts it
 * with its working folder the build's own, and reads its standard output.
 */
#include "builder/build.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/context.h"
#include "builder/fs.h"
#include "lib/host/hash.h"
#include "lib/host/cache.h"

static volatile sig_atomic_t cancelled;

static void on_signal(int sig)
{
	(void)sig;
	cancelled = 1;
}

/* Parses the Dockerfile with the base's environment (NULL: none yet) in force after FROM. */
static int parse(struct build *b, const char *text, size_t len, char **args, size_t nargs, json_t *base_env)
{
	const char *envv[DOCKERFILE_VARS_MAX];
	size_t nenv = 0;
	const char *k;
	json_t *v;
	char *strs[DOCKERFILE_VARS_MAX];
	json_object_foreach(base_env, k, v) {
		if (nenv == DOCKERFILE_VARS_MAX || asprintf(&strs[nenv], "%s=%s", k, json_string_value(v)) < 0)
			break;
		envv[nenv] = strs[nenv];
		nenv++;
	}
	struct dockerfile_input in = { .text = text, .len = len, .build_args = (const char *const *)args,
				       .n_build_args = nargs, .base_env = envv, .n_base_env = nenv };
	struct err e = { 0 };
	dockerfile_free(b->df);
	b->df = NULL;
	int rc = dockerfile_parse(&in, &b->df, &e);
	for (size_t i = 0; i < nenv; i++)
		free(strs[i]);
	return rc < 0 ? build_fail(b, -rc, "%s", e.msg) : 0;
}

static int empty_root(const char *tmp, void *arg, struct err *e)
{
	(void)arg;
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmp);
	if (mkdir(tmp, 0755) < 0 || mkdir(rootfs, 0755) < 0)
		return err_set(e, ERR_INTERNAL, errno, "cannot create %s: %s", rootfs, strerror(errno));
	return 0;
}

/* The template a base made by spaced becomes: prefix and the first 16 hex digits of the SHA-256
 * of what makes it (source). An image named in FROM (source docker://REF) and the default
 * template with a build's --packages (packages:LIST) are made so: spaced imports or builds
 * them (as `space template import` and `spaced --template NAME=PKG,...` do) the first time a
 * build names them, and they are taken as they are afterwards, as Docker takes an image it has
 * without --pull. */
static int made_base(struct build *b, const char *prefix, const char *source, const char *what, char *name, size_t n)
{
	char hex[65], *path = NULL, *q = NULL;
	hash_sha256_hex(source, strlen(source), hex);
	snprintf(name, n, "%s%.16s", prefix, hex);
	if (asprintf(&path, "/v1/templates/%s", name) < 0)
		return build_fail(b, ENOMEM, "out of memory");
	struct client_err err = { 0 };
	json_t *t = NULL;
	int rc = client_request(&b->client, "GET", path, NULL, &t, &err);
	free(path);
	json_decref(t);
	if (rc == 0)
		return 0;
	if (err.status != 404)
		return build_fail(b, EIO, "%s: %s", what, err.message);
	build_emit(b, json_pack("{s:s, s:s, s:o}", "type", "output", "stream", "stdout", "data",
				json_sprintf("%s: making template %s\n", what, name)));
	if (!(q = client_escape(source)) || asprintf(&path, "/v1/templates?name=%s&source=%s", name, q) < 0) {
		free(q);
		return build_fail(b, ENOMEM, "out of memory");
	}
	free(q);
	memset(&err, 0, sizeof(err));
	rc = client_request_raw(&b->client, "POST", path, "", 0, &t, &err);
	free(path);
	json_decref(t);
	return rc < 0 ? build_fail(b, err.status == 400 ? EINVAL : EIO, "%s: %s", what, err.message) : 0;
}

/* Finds the base (FROM) and its files: b->key, b->from, b->rootfs, b->base_config. */
static int base(struct build *b)
{
	const struct dockerfile_from *f = &b->df->from;
	char seed[160], name[TEMPLATE_NAME_MAX + 1], source[TEMPLATE_EXTRA_MAX + DOCKERFILE_IMAGE_NAME_MAX + 160],
		what[TEMPLATE_EXTRA_MAX + DOCKERFILE_IMAGE_NAME_MAX + 64];
	bool plain = f->base == DOCKERFILE_BASE_DEFAULT ||
		     (f->base == DOCKERFILE_BASE_TEMPLATE && !strcmp(f->name, TEMPLATE_DEFAULT) &&
		      !strcmp(f->tag, TEMPLATE_TAG_DEFAULT));
	if (b->packages && !plain)
		return build_fail(b, EINVAL, "--packages adds to the default template: FROM space:default (or no FROM), not %s",
				  f->ref ? f->ref : "scratch");
	if (f->base == DOCKERFILE_BASE_IMAGE) {
		snprintf(source, sizeof(source), "docker://%s", f->ref);
		snprintf(what, sizeof(what), "FROM %s: importing the image", f->ref);
		if (made_base(b, BUILD_IMAGE_PREFIX, source, what, name, sizeof(name)) < 0)
			return -EIO;
	} else if (b->packages) {
		snprintf(source, sizeof(source), "packages:%s", b->packages);
		snprintf(what, sizeof(what), "--packages %s", b->packages);
		if (made_base(b, BUILD_PACKAGES_PREFIX, source, what, name, sizeof(name)) < 0)
			return -EIO;
	}
	if (f->base == DOCKERFILE_BASE_SCRATCH) {
		char parent[PATH_MAX], hex[65];
		struct err e = { 0 };
		hash_sha256_hex("scratch", 7, hex);
		snprintf(b->key, sizeof(b->key), "%.*s", TEMPLATE_BUILD_KEY_LEN, hex);
		snprintf(parent, sizeof(parent), "%s/build", b->cache_dir);
		if (cache_hold(parent, b->key, empty_root, NULL, &e) < 0) /* held while the build runs */
			return build_fail(b, EIO, "%s", e.msg);
		snprintf(b->from, sizeof(b->from), "%s%s", TEMPLATE_BUILD_PREFIX, b->key);
		snprintf(b->rootfs, sizeof(b->rootfs), "%s/%s/rootfs", parent, b->key);
		b->base_config = json_object();
		b->changed = true;
		return 0;
	}
	if (f->base != DOCKERFILE_BASE_IMAGE && !b->packages) /* space:NAME[:TAG] (NAME:latest is NAME), or none */
		snprintf(name, sizeof(name), "%s%s%s", f->name, strcmp(f->tag, TEMPLATE_TAG_DEFAULT) ? ":" : "",
			 strcmp(f->tag, TEMPLATE_TAG_DEFAULT) ? f->tag : "");
	char path[160];
	struct client_err err = { 0 };
	json_t *t = NULL;
	snprintf(path, sizeof(path), "/v1/templates/%s", name);
	if (client_request(&b->client, "GET", path, NULL, &t, &err) < 0)
		return build_fail(b, err.status == 404 ? ENOENT : EIO, "FROM: %s", err.message);
	snprintf(b->base_key, sizeof(b->base_key), "%s", json_string_value(json_object_get(t, "key")) ?: "");
	b->base_config = json_incref(json_object_get(t, "config"));
	if (!b->base_config)
		b->base_config = json_object();
	json_decref(t);
	snprintf(b->from, sizeof(b->from), "%s", name);
	snprintf(b->rootfs, sizeof(b->rootfs), "%s/templates/%s/rootfs", b->cache_dir, b->base_key);
	if (!*b->base_key || strchr(b->base_key, '/') || access(b->rootfs, F_OK) < 0)
		return build_fail(b, ENOENT, "FROM: the files of template %s are not in %s", name, b->cache_dir);
	char hex[65];
	snprintf(seed, sizeof(seed), "template\n%s", b->base_key);
	hash_sha256_hex(seed, strlen(seed), hex);
	snprintf(b->key, sizeof(b->key), "%.*s", TEMPLATE_BUILD_KEY_LEN, hex);
	return 0;
}

static int link_template(const char *tmp, void *arg, struct err *e)
{
	struct build *b = arg;
	int rc = step_link(b, tmp);
	return rc < 0 ? err_set(e, ERR_INTERNAL, -rc, "%s", b->msg) : 0;
}

/* The template's defaults: the base's, with what the Dockerfile set. */
static int settings(struct build *b, json_t **out)
{
	json_t *cfg = json_deep_copy(b->base_config), *env = json_object_get(cfg, "env");
	if (!cfg)
		return build_fail(b, ENOMEM, "out of memory");
	if (!env)
		json_object_set_new(cfg, "env", env = json_object());
	for (size_t i = 0; i < b->df->n_env; i++)
		json_object_set_new(env, b->df->env[i]->key, json_string(b->df->env[i]->value));
	if (b->df->workdir)
		json_object_set_new(cfg, "workdir", json_string(b->df->workdir));
	if (b->df->user) {
		long long uid, gid;
		char u[48];
		if (step_user(b, b->rootfs, b->df->user, &uid, &gid) < 0) {
			json_decref(cfg);
			return -ENOENT;
		}
		snprintf(u, sizeof(u), "%lld:%lld", uid, gid);
		json_object_set_new(cfg, "user", json_string(u));
	}
	if (b->df->start)
		json_object_set_new(cfg, "start", json_string(b->df->start));
	if (b->df->ready)
		json_object_set_new(cfg, "ready", json_string(b->df->ready));
	if (b->df->pool >= 0)
		json_object_set_new(cfg, "pool", json_integer(b->df->pool));
	if (b->df->n_labels) {
		json_t *labels = json_object();
		for (size_t i = 0; i < b->df->n_labels; i++)
			json_object_set_new(labels, b->df->labels[i]->key, json_string(b->df->labels[i]->value));
		json_object_set_new(cfg, "labels", labels);
	}
	*out = cfg;
	return 0;
}

/* Publishes the files as the template's and records it; its JSON into *out. */
static int commit(struct build *b, json_t **out)
{
	char key[96];
	snprintf(key, sizeof(key), "%s", b->base_key);
	if (b->changed) {
		char parent[PATH_MAX];
		struct err e = { 0 };
		snprintf(key, sizeof(key), "build-%s", b->key);
		snprintf(parent, sizeof(parent), "%s/templates", b->cache_dir);
		if (cache_get(parent, key, link_template, b, &e) < 0)
			return build_fail(b, EIO, "%s", e.msg);
	}
	json_t *cfg = NULL;
	if (settings(b, &cfg) < 0)
		return -EINVAL;
	char source[300], path[160];
	snprintf(source, sizeof(source), "dockerfile:%s", b->df->from.ref ? b->df->from.ref : "default");
	snprintf(path, sizeof(path), "/v1/templates/%s", b->name);
	json_t *body = json_pack("{s:s, s:s, s:o, s:O}", "key", key, "source", source, "config", cfg, "layers", b->layers);
	struct client_err err = { 0 };
	int rc = client_request(&b->client, "PUT", path, body, out, &err);
	json_decref(body);
	return rc < 0 ? build_fail(b, EIO, "cannot record template %s: %s", b->name, err.message) : 0;
}

/* Reads the Dockerfile at path in the context (at most DOCKERFILE_SIZE_MAX bytes). */
static char *read_dockerfile(struct build *b, const char *path, size_t *len)
{
	int fd = fs_open_in(b->context, path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		build_fail(b, ENOENT, "no Dockerfile %s in the build context", path);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char *text = NULL;
	if (st.st_size > DOCKERFILE_SIZE_MAX)
		build_fail(b, E2BIG, "the Dockerfile is over %d bytes", DOCKERFILE_SIZE_MAX);
	else if (!(text = malloc((size_t)st.st_size + 1)))
		build_fail(b, ENOMEM, "out of memory");
	ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
	close(fd);
	if (text && n != st.st_size) {
		build_fail(b, EIO, "cannot read the Dockerfile");
		free(text);
		return NULL;
	}
	*len = (size_t)n;
	return text;
}

/* Takes <state>/builds/<name>.lock: builds of one template, in any number of clients, run
 * one after another. */
static int serialise(struct build *b)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/builds/%s.lock", b->state_dir, b->name);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return build_fail(b, errno, "cannot open %s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		build_emit(b, json_pack("{s:s, s:s}", "type", "waiting", "message", "another build of this template runs"));
		while (flock(fd, LOCK_EX) < 0)
			if (errno != EINTR || cancelled)
				return build_fail(b, cancelled ? ECANCELED : errno, "cancelled");
	}
	return fd; /* held until the process ends */
}

static int run(struct build *b, const char *file, char **args, size_t nargs)
{
	size_t len = 0;
	char *text = read_dockerfile(b, file, &len);
	if (!text)
		return -EINVAL;
	int rc = parse(b, text, len, args, nargs, NULL);
	if (rc == 0)
		rc = serialise(b) < 0 ? -EINVAL : 0;
	if (rc == 0)
		rc = base(b);
	if (rc == 0) /* the first layer: the base's files */
		json_array_append_new(b->layers, json_pack("{s:s, s:s}", "from", b->df->from.base == DOCKERFILE_BASE_SCRATCH
										       ? "scratch" : b->from,
							   "key", b->df->from.base == DOCKERFILE_BASE_SCRATCH
									  ? b->key : b->base_key));
	if (rc == 0) /* again, with the base's environment for FROM's variables after it */
		rc = parse(b, text, len, args, nargs, json_object_get(b->base_config, "env"));
	free(text);
	for (b->step = 1; rc == 0 && b->step <= b->df->n_steps;) {
		const struct dockerfile_step *s = &b->df->steps[b->step - 1];
		if (cancelled)
			rc = build_fail(b, ECANCELED, "cancelled");
		else if (s->kind == DOCKERFILE_RUN || s->kind == DOCKERFILE_COPY || s->kind == DOCKERFILE_ADD ||
			 s->kind == DOCKERFILE_WORKDIR) {
			if ((rc = step_files(b, s)) == 0) /* a layer of the template: what this step made */
				json_array_append_new(b->layers, json_pack("{s:i, s:s, s:s}", "step", (int)b->step,
									    "instruction", s->text, "key", b->key));
		} else
			build_step_event(b, s, false);
		if (rc == 0)
			b->step++;
	}
	json_t *t = NULL;
	if (rc == 0 && !cancelled)
		rc = commit(b, &t);
	if (rc == 0 && cancelled)
		rc = build_fail(b, ECANCELED, "cancelled");
	if (rc == 0)
		build_emit(b, json_pack("{s:s, s:o}", "type", "done", "template", t));
	return rc;
}

static int usage(void)
{
	fprintf(stderr, "usage: space-build --socket PATH --cache-dir DIR --state-dir DIR --context DIR --name NAME\n"
			"                   [--archive FILE] [--file PATH] [--build-arg NAME=VALUE]... [--packages PKG[,PKG...]]\n"
			"       space-build --unpack-image ARCHIVE DIR\n");
	return 2;
}

/* spaced's import of an OCI archive: its files into dir, unpacked as a build context is. Returns
 * the exit status. */
static int unpack_image(const char *archive, const char *dir)
{
	char msg[BUILD_MSG_MAX];
	if (context_unpack(archive, dir, "the image archive", msg, sizeof(msg)) == 0)
		return 0;
	fprintf(stderr, "%s\n", msg);
	return 1;
}

/* What the command line names beside the build's own fields. */
struct options {
	const char *socket, *context, *file, *archive;
	char *args[DOCKERFILE_BUILD_ARGS_MAX + 1]; /* one more than allowed: prepare() says so */
	size_t nargs;
};

/* Parses the command line into *o and *b. Returns 0, or -EINVAL when it is not space-build's. */
static int parse_options(int argc, char **argv, struct options *o, struct build *b)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },    { "cache-dir", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, 'S' }, { "context", required_argument, NULL, 'x' },
		{ "name", required_argument, NULL, 'n' },      { "file", required_argument, NULL, 'f' },
		{ "build-arg", required_argument, NULL, 'a' }, { "archive", required_argument, NULL, 'A' },
		{ "packages", required_argument, NULL, 'p' },  { NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': o->socket = optarg; break;
		case 'c': b->cache_dir = optarg; break;
		case 'S': b->state_dir = optarg; break;
		case 'x': o->context = optarg; break;
		case 'n': b->name = optarg; break;
		case 'f': o->file = optarg; break;
		case 'A': o->archive = optarg; break;
		case 'p': b->packages = optarg; break;
		case 'a':
			if (o->nargs <= DOCKERFILE_BUILD_ARGS_MAX)
				o->args[o->nargs++] = optarg;
			break;
		default: return -EINVAL;
		}
	}
	if (!o->socket || !b->cache_dir || !b->state_dir || !o->context || !b->name || optind != argc)
		return -EINVAL;
	return 0;
}

/* What is copied keeps its modes exactly; a closed reader is a write error, not a signal; the
 * signals that cancel are taken even when whoever started us had them blocked (spaced blocks
 * them in every thread, and a blocked mask survives exec). */
static void take_signals(void)
{
	umask(0);
	signal(SIGPIPE, SIG_IGN);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* Connects to spaced and opens the build context (unpacked from --archive first): b->client and
 * b->context. Returns 0 or -errno with b->msg saying why. */
static int prepare(struct build *b, const struct options *o)
{
	char host[PATH_MAX + 16];
	struct client_err err = { 0 };
	snprintf(host, sizeof(host), "unix://%s", o->socket);
	if (client_init(&b->client, host, NULL, NULL, &err) < 0)
		return build_fail(b, EINVAL, "%s", err.message);
	if (o->nargs > DOCKERFILE_BUILD_ARGS_MAX)
		return build_fail(b, E2BIG, "more than %d build arguments", DOCKERFILE_BUILD_ARGS_MAX);
	if (o->archive && context_unpack(o->archive, o->context, "the build context", b->msg, sizeof(b->msg)) < 0)
		return -EINVAL;
	if ((b->context = open(o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return build_fail(b, errno, "cannot open the build context: %s", strerror(errno));
	return 0;
}

/* The last line of a build that failed with rc: the error event. */
static void emit_error(struct build *b, int rc)
{
	json_t *ev = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "code",
			       rc == -ECANCELED ? "cancelled" : "build_failed", "message", b->msg);
	if (b->step >= 1 && b->df && b->step <= b->df->n_steps)
		json_object_set_new(ev, "step", json_integer((json_int_t)b->step));
	if (b->exit_code >= 0)
		json_object_set_new(ev, "exit_code", json_integer(b->exit_code));
	build_emit(b, ev);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0)
		return printf("space-build %s\n", SPACE_VERSION) < 0;
	if (argc == 4 && strcmp(argv[1], "--unpack-image") == 0)
		return unpack_image(argv[2], argv[3]);
	struct options o = { .file = "Dockerfile" };
	struct build b = { .context = -1, .exit_code = -1, .cancelled = &cancelled, .layers = json_array() };
	if (parse_options(argc, argv, &o, &b) < 0)
		return usage();
	take_signals();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = prepare(&b, &o);
	if (rc == 0)
		rc = run(&b, o.file, o.args, o.nargs);
	if (rc < 0)
		emit_error(&b, rc);
	dockerfile_free(b.df);
	json_decref(b.base_config);
	if (b.context >= 0)
		close(b.context);
	client_fini(&b.client);
	curl_global_cleanup();
	return rc < 0 ? 1 : 0;
}

/*
 * e2b/main.c - space-e2b: the E2B front's process (gateway.h). spaced starts it for
 * --e2b-listen HOST:PORT on a socket it listens on (so a taken port is spaced's error at its
 * start), with spaced's Unix socket; it ends with spaced.
 *
 *   space-e2b --listen HOST:PORT | --listen-fd FD [--name NAME] --socket PATH [--sandbox-domain DOMAIN]
 *             [--proxy-address HOST:PORT]
 */
#include "e2b/gateway.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "e2b/builds.h"
#include "e2b/connect.h"
#include "e2b/signed.h"
#include "e2b/users.h"
#include "e2b/watch.h"

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct req *r = *req_cls;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->gw = cls;
		r->conn = conn;
		snprintf(r->method, sizeof(r->method), "%s", method);
		snprintf(r->url, sizeof(r->url), "%s", url);
		*req_cls = r;
		/* credentials are checked on the head: a refused request's body is never read */
		const char *sbid = gw_header(r, "E2b-Sandbox-Id");
		enum MHD_Result rc = MHD_YES;
		if (!sbid && signed_is(r))
			r->answered = !signed_admit(r, &rc);
		else
			r->answered = !(sbid ? envd_admit(r, sbid, &rc) : control_admit(r, &rc));
		return rc;
	}
	/* the sandbox plane's: named by the header, or by a signed URL's signature */
	const char *sbid = r->signed_sbid[0] ? r->signed_sbid : gw_header(r, "E2b-Sandbox-Id");
	if (r->answered) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (sbid ? envd_upload(r, sbid, upload_data, n) : builds_upload(r, upload_data, n))
			return MHD_YES;
		if (r->body.len + n > GW_MAX_BODY)
			r->too_large = true;
		else if (buf_put(&r->body, upload_data, n) < 0)
			return MHD_NO;
		return MHD_YES;
	}
	if (r->too_large)
		return gw_error(r, 413, "the body is over %d bytes", GW_MAX_BODY);
	return sbid ? envd_handle(r, sbid) : control_handle(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls, enum MHD_RequestTerminationCode why)
{
	struct req *r = *req_cls;
	if (!r)
		return;
	if (r->upload && r->upload_free)
		r->upload_free(r->upload);
	buf_free(&r->body);
	free(r);
	*req_cls = NULL;
}

static int parse_listen(const char *s, struct sockaddr_in *sa)
{
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || colon - s > 63)
		return -EINVAL;
	char host[64];
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
	struct gw *gw = cls;
	/* an SDK that stops reading a stream (a command's handle let go, a timeout) closes its
	 * connection mid-request: the ordinary end of such a call, not worth a line each */
	if (strstr(fmt, "closed by remote side"))
		return;
	int64_t now = gw_mono_ms();
	pthread_mutex_lock(&gw->log_lock);
	if (now - gw->log_window_ms >= GW_LOG_WINDOW_MS) {
		if (gw->log_count > GW_LOG_BURST)
			fprintf(stderr, "space-e2b: %d more messages in the last minute were not logged\n",
				gw->log_count - GW_LOG_BURST);
		gw->log_window_ms = now;
		gw->log_count = 0;
	}
	bool say = gw->log_count++ < GW_LOG_BURST;
	pthread_mutex_unlock(&gw->log_lock);
	if (!say)
		return;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	fprintf(stderr, "space-e2b: %s\n", line);
}

#define USAGE                                                                                            \
	"usage: space-e2b --listen HOST:PORT | --listen-fd FD [--name NAME] --socket PATH "                 \
	"[--sandbox-domain DOMAIN] [--proxy-address HOST:PORT]\n"

/* What the command line gives. */
struct args {
	const char *listen; /* HOST:PORT, or the name of the socket handed over */
	const char *sock;   /* spaced's Unix socket */
	int fd;             /* the socket handed over, or -1 */
	struct sockaddr_in sa; /* --listen's address, without fd */
};

/* The command line into o and gw's domain and proxy: 0, or the exit status (2) of a bad one. */
static int parse_args(int argc, char **argv, struct args *o, struct gw *gw)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "socket", required_argument, NULL, 's' },
		{ "listen-fd", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "sandbox-domain", required_argument, NULL, 'd' },
		{ "proxy-address", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	bool bad = false;
	int c;
	*o = (struct args){ .fd = -1 };
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'l' || c == 'n')
			o->listen = optarg;
		else if (c == 's')
			o->sock = optarg;
		else if (c == 'f')
			o->fd = atoi(optarg);
		else if (c == 'd')
			bad |= snprintf(gw->domain, sizeof(gw->domain), "%s", optarg) >= (int)sizeof(gw->domain);
		else if (c == 'p')
			bad |= snprintf(gw->proxy, sizeof(gw->proxy), "%s", optarg) >= (int)sizeof(gw->proxy);
		else
			return 2;
	}
	if (bad || !o->listen || !o->sock || optind != argc || (o->fd < 0 && parse_listen(o->listen, &o->sa) < 0) ||
	    (o->fd >= 0 && o->fd < 3)) {
		fprintf(stderr, USAGE);
		return 2;
	}
	return 0;
}

/* The front's state beside gw: the watchers, the builds' uploads, the users, spaced's client.
 * 0, or the exit status (1) with the reason logged. */
static int setup(struct gw *gw, const char *sock)
{
	static struct gw_watchers watchers;
	static struct gw_builds builds;
	static struct gw_users users;
	watchers_init(&watchers);
	gw->watchers = &watchers;
	if (builds_init(&builds) < 0) {
		fprintf(stderr, "space-e2b: cannot make a folder for template uploads: %s\n", strerror(errno));
		return 1;
	}
	gw->builds = &builds;
	users_init(&users);
	gw->users = &users;
	struct client_err err = { 0 };
	char host[600];
	snprintf(host, sizeof(host), "unix://%s", sock);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || client_init(&gw->up, host, NULL, NULL, &err) < 0) {
		fprintf(stderr, "space-e2b: %s\n", err.message[0] ? err.message : "cannot set up the client");
		return 1;
	}
	admit_init(&gw->admit);
	pthread_mutex_init(&gw->log_lock, NULL);
	gw->log_window_ms = gw_mono_ms();
	return 0;
}

/* libmicrohttpd serving gw on the socket o names, or NULL. */
static struct MHD_Daemon *serve(struct gw *gw, struct args *o)
{
	struct MHD_OptionItem where[] = {
		o->fd >= 0 ? (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, o->fd, NULL }
			   : (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &o->sa },
		{ MHD_OPTION_END, 0, NULL },
	};
	/* a connection's idle limit is the unauthenticated one until a request on it authenticates */
	return MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, admit_policy,
		gw, on_request, gw, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, gw, MHD_OPTION_ARRAY, where,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, gw, MHD_OPTION_NOTIFY_CONNECTION, admit_notify, gw,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)GW_UNAUTH_IDLE_S,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)GW_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)GW_MAX_PER_IP, MHD_OPTION_THREAD_STACK_SIZE, (size_t)GW_THREAD_STACK,
		MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--version") == 0)
		return printf("space-e2b %s\n", SPACE_VERSION) < 0;
	static struct gw gw;
	struct args o;
	int rc = parse_args(argc, argv, &o, &gw);
	if (rc)
		return rc;
	/* it ends with spaced, which started it */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread made from here on too */
	if ((rc = setup(&gw, o.sock)))
		return rc;
	struct MHD_Daemon *d = serve(&gw, &o);
	if (!d) {
		fprintf(stderr, "space-e2b: cannot listen on %s: %s\n", o.listen, strerror(errno));
		return 1;
	}
	fprintf(stderr, "space-e2b: serving E2B's API on http://%s\n", o.listen);
	if (getppid() == 1) /* spaced was gone before the death signal was asked for */
		raise(SIGTERM);
	int sig;
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	builds_fini(gw.builds);
	client_fini(&gw.up);
	curl_global_cleanup();
	return 0;
}

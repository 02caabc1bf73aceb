/*
 * cli/cmd_ports.c - space ports: the TCP ports listening inside a sandbox
 * (GET /v1/sandboxes/:id/ports); space port-forward: a local listener whose
 * connections are carried to a port inside (POST .../ports/connect, then the
 * process's stdin and output, one process of the CLI a connection).
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "sigfwd.h"
#include "stdinfwd.h"
#include "stream.h"

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

const char cmd_port_forward_usage[] =
	"Usage: space port-forward [--address ADDR] ID [LOCAL:]REMOTE\n"
	"\n"
	"Listen on ADDR:LOCAL (127.0.0.1, and REMOTE, by default; 0 picks a free port) and carry\n"
	"every connection made to it to TCP port REMOTE inside sandbox ID, through spaced's API:\n"
	"any TCP protocol, whatever the sandbox's network. Prints the address it listens on, then\n"
	"runs until interrupted. Each connection is a process in the sandbox while it lasts\n"
	"(`space ps`), at most 64 processes at once.\n"
	"\n"
	"Options:\n"
	"      --address ADDR   the local address to listen on (default 127.0.0.1)\n"
	"  -h, --help           show this help\n";

/* One connection, in a process of its own: conn becomes its stdin and stdout, which the
 * exec machinery forwards (cli/stdinfwd.h, cli/stream.h). Returns the exit status. */
static int forward_one(struct cli *cli, const char *id, long remote, int conn)
{
	struct client_err err = { 0 };
	struct stdinfwd fwd = { 0 };
	json_t *reply = NULL;
	long pid = -1;
	int code = 0, r;

	signal(SIGPIPE, SIG_IGN); /* a client gone is a write error, then the end */
	sigfwd_install();         /* Ctrl-C ends the connection inside, then this process */
	if (dup2(conn, 0) < 0 || dup2(conn, 1) < 0)
		return cli_error("dup2: %s", strerror(errno));
	close(conn);
	char *path = cli_sandbox_path(id, "/ports/connect");
	json_t *body = json_pack("{s:i}", "port", (int)remote);
	r = path && body ? client_request(&cli->client, "POST", path, body, &reply, &err) : -ENOMEM;
	free(path);
	json_decref(body);
	if (r == 0 && json_is_integer(json_object_get(reply, "pid")))
		pid = (long)json_integer_value(json_object_get(reply, "pid"));
	json_decref(reply);
	if (pid < 0)
		return r == -ENOMEM ? cli_error("out of memory") : cli_report(cli, &err);
	if ((r = stdinfwd_start(&fwd, &cli->client, id, pid, STDINFWD_INPUT)) == 0)
		r = stream_output(&cli->client, id, pid, &code, &err);
	stdinfwd_stop(&fwd);
	if (r) { /* our side ended first: the connection inside ends too */
		struct client_err ignored = { 0 };
		stream_signal(&cli->client, id, pid, SIGKILL, &ignored);
	}
	return r ? CLI_EXIT_FAIL : code;
}

/* [LOCAL:]REMOTE into its two ports; 0 or -1. */
static int parse_ports(const char *arg, long *local, long *remote)
{
	const char *colon = strchr(arg, ':');
	char first[16];
	if (colon) {
		if ((size_t)(colon - arg) >= sizeof(first))
			return -1;
		memcpy(first, arg, (size_t)(colon - arg));
		first[colon - arg] = '\0';
		if (cli_parse_int(first, 0, 65535, local) || cli_parse_int(colon + 1, 1, 65535, remote))
			return -1;
		return 0;
	}
	if (cli_parse_int(arg, 1, 65535, remote))
		return -1;
	*local = *remote;
	return 0;
}

static int listen_on(const char *address, long port, char *shown, size_t n)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char service[8];
	snprintf(service, sizeof(service), "%ld", port);
	int rc = getaddrinfo(address, service, &hints, &ai);
	if (rc)
		return cli_error("--address %s: %s", address, gai_strerror(rc)), -1;
	int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (s >= 0)
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s, 64) < 0) {
		cli_error("listening on %s port %ld: %s", address, port, strerror(errno));
		if (s >= 0)
			close(s);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[64], serv[8];
	getsockname(s, (struct sockaddr *)&ss, &len);
	getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(shown, n, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, serv);
	return s;
}

int cmd_port_forward(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "address", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *address = "127.0.0.1";
	struct client_err err = { 0 };
	json_t *reply = NULL;
	long local, remote;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'a')
			address = optarg;
		else if (c == 'h')
			return cli_help(cli);
		else
			return cli_bad_option(cli);
	}
	if (argc - optind != 2)
		return cli_usage_error(cli, "wants a sandbox ID and [LOCAL:]REMOTE");
	const char *id = argv[optind];
	if (parse_ports(argv[optind + 1], &local, &remote))
		return cli_usage_error(cli, "'%s' is not [LOCAL:]REMOTE (ports, REMOTE 1-65535, LOCAL 0-65535)",
				       argv[optind + 1]);
	/* the sandbox first: a mistyped id is an error now, not at the first connection */
	char *path = cli_sandbox_path(id, "");
	int r = path ? client_request(&cli->client, "GET", path, NULL, &reply, &err) : -ENOMEM;
	free(path);
	json_decref(reply);
	if (r)
		return r == -ENOMEM ? cli_error("out of memory") : cli_report(cli, &err);
	char shown[96];
	int s = listen_on(address, local, shown, sizeof(shown));
	if (s < 0)
		return CLI_EXIT_FAIL;
	struct sigaction sa = { .sa_handler = SIG_DFL, .sa_flags = SA_NOCLDWAIT }; /* no zombies */
	sigaction(SIGCHLD, &sa, NULL);
	printf("Forwarding from %s -> %s:%ld\n", shown, id, remote);
	fflush(stdout);
	for (;;) {
		int conn = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
				continue;
			cli_error("accept: %s", strerror(errno));
			close(s);
			return CLI_EXIT_FAIL;
		}
		pid_t child = fork();
		if (child == 0) {
			close(s);
			_exit(forward_one(cli, id, remote, conn));
		}
		if (child < 0)
			cli_error("fork: %s", strerror(errno));
		close(conn);
	}
}

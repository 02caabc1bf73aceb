/*
 * agent/connect.c - see connect.h.
 *
 * Two processes after the connection is made, so that neither direction waits on the other:
 * the child copies stdin to the socket (then shuts the socket's write side), the parent copies
 * the socket to stdout and, once the server closed, ends the child and exits.
 */
#include "connect.h"

#include "proto/agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes all of p; to a socket without SIGPIPE (a server gone is an error return), to stdout
 * with it (SIGPIPE is how the host says its reader is gone: the relay ends). */
static int write_all(int fd, const char *p, size_t n, bool sock)
{
	while (n > 0) {
		ssize_t w = sock ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Copies from to to until the end of from; 0, or -errno of the side that failed. */
static int copy(int from, int to, bool to_sock)
{
	static char buf[CONNECT_CHUNK];
	for (;;) {
		ssize_t n = read(from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		int rc = write_all(to, buf, (size_t)n, to_sock);
		if (rc < 0)
			return rc;
	}
}

/* A connected socket to the port on loopback (IPv4, then IPv6), or -errno of the first try. */
static int dial(unsigned port)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int first = 0;
	for (int i = 0; i < 2; i++) {
		int s = socket(i ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0) {
			first = first ? first : -errno;
			continue;
		}
		int rc = i ? connect(s, (struct sockaddr *)&v6, sizeof(v6)) : connect(s, (struct sockaddr *)&v4, sizeof(v4));
		if (rc == 0)
			return s;
		first = first ? first : -errno;
		close(s);
	}
	return first;
}

/* Both directions between a and b until each has ended, one of them in a child. */
static int join(int a, int b)
{
	pid_t child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		int rc = copy(a, b, true);
		shutdown(b, SHUT_WR);
		_exit(rc < 0 ? 1 : 0);
	}
	int rc = copy(b, a, true);
	shutdown(a, SHUT_WR);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	return rc;
}

/* One relay connection: the port, the answer, then the bytes both ways. */
static int relay_one(int c)
{
	struct timeval tv = { .tv_sec = RELAY_HELLO_TIMEOUT_S };
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	unsigned char p[2];
	size_t got = 0;
	while (got < 2) {
		ssize_t r = recv(c, p + got, 2 - got, 0);
		if (r <= 0)
			return 1;
		got += (size_t)r;
	}
	tv.tv_sec = 0;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	unsigned port = (unsigned)p[0] << 8 | p[1];
	int s = port ? dial(port) : -EINVAL;
	unsigned char status = (unsigned char)(s < 0 ? (-s > 255 ? EIO : -s) : 0);
	if (write_all(c, (const char *)&status, 1, true) < 0 || s < 0)
		return 1;
	return join(c, s) < 0;
}

int relay_listen(void)
{
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(SP_RELAY_PORT) };
	inet_pton(AF_INET, SP_NET_ADDR, &at.sin_addr);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	if (l < 0)
		return -errno;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&at, sizeof(at)) < 0 || listen(l, RELAY_BACKLOG) < 0) {
		int rc = -errno;
		close(l);
		return rc;
	}
	return l;
}

int relay_main(void)
{
	return relay_one(0);
}

int connect_main(const char *port_s)
{
	char *end;
	unsigned long port = strtoul(port_s, &end, 10);
	if (!*port_s || *end || port == 0 || port > 65535) {
		fprintf(stderr, "space-agent: %s is not a port (1-65535)\n", port_s);
		return 2;
	}
	int s = dial((unsigned)port);
	if (s < 0) {
		fprintf(stderr, "space-agent: connecting to port %lu inside the sandbox: %s\n", port, strerror(-s));
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "space-agent: fork: %s\n", strerror(errno));
		return 1;
	}
	if (child == 0) {
		int rc = copy(0, s, true);
		shutdown(s, SHUT_WR);
		_exit(rc < 0 && rc != -EPIPE && rc != -ECONNRESET ? 1 : 0);
	}
	int rc = copy(s, 1, false);
	kill(child, SIGKILL);
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	if (rc < 0 && rc != -EPIPE && rc != -ECONNRESET) {
		fprintf(stderr, "space-agent: port %lu: %s\n", port, strerror(-rc));
		return 1;
	}
	return 0;
}

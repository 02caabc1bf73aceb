/*
 * daemon/net/proxy_host.c - the port proxy's routing by Host header (see proxy.h): pure,
 * so the unit test and the fuzz target reach it without a daemon.
 */
#include "daemon/net/proxy.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

int proxy_parse_host(const char *host, size_t len, const char *domain, char id[SANDBOX_ID_LEN + 1], int *port)
{
	while (len > 0 && (host[len - 1] == ' ' || host[len - 1] == '\t'))
		len--;
	while (len > 0 && (*host == ' ' || *host == '\t'))
		host++, len--;
	const char *colon = memchr(host, ':', len);
	if (colon) { /* the proxy's own port: digits only */
		for (const char *p = colon + 1; p < host + len; p++)
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
		len = (size_t)(colon - host);
	}
	if (len > 0 && host[len - 1] == '.')
		len--; /* a fully qualified name */
	size_t dlen = strlen(domain);
	if (len < dlen + 1 || host[len - dlen - 1] != '.' || strncasecmp(host + len - dlen, domain, dlen) != 0)
		return -EINVAL;
	len -= dlen + 1; /* "<port>-<id>" */
	const char *dash = memchr(host, '-', len);
	if (!dash || dash == host || dash - host > 5 || (size_t)(host + len - dash - 1) != SANDBOX_ID_LEN)
		return -EINVAL;
	long p = 0;
	for (const char *q = host; q < dash; q++) {
		if (!isdigit((unsigned char)*q))
			return -EINVAL;
		p = p * 10 + (*q - '0');
	}
	if (p < 1 || p > 65535 || (dash - host > 1 && host[0] == '0'))
		return -EINVAL;
	for (int i = 0; i < SANDBOX_ID_LEN; i++) {
		char ch = (char)tolower((unsigned char)dash[1 + i]);
		if (!isxdigit((unsigned char)ch))
			return -EINVAL;
		id[i] = ch;
	}
	id[SANDBOX_ID_LEN] = '\0';
	*port = (int)p;
	return 0;
}

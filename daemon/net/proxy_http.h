/*
 * daemon/net/proxy_http.h - the port proxy's reading of HTTP/1.1 requests (RFC 9112), pure:
 * no sockets, no daemon, so the unit test and the fuzz target reach it as the proxy does.
 *
 * The proxy reads every request of a connection with it: proxy_http_head() checks one head
 * (strictly: anything two readers could take differently is refused, so what the proxy checks
 * is what the sandbox's server reads), proxy_http_rewrite() writes it again without the access
 * token, and proxy_http_body() finds where its body ends (Content-Length or chunked), so the
 * next request's head is found where the sandbox's server will find it.
 */
#ifndef SPACE_DAEMON_PROXY_HTTP_H
#define SPACE_DAEMON_PROXY_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXY_HEAD_MAX 16384        /* bytes of a request's head, its blank line included */
#define PROXY_CHUNK_LINE_MAX 1024   /* bytes of a chunk's size line (extensions included) */
#define PROXY_TOKEN_MAX 128         /* bytes of an access token the proxy reads */
#define PROXY_LENGTH_MAX 1000000000000000000ULL /* a Content-Length or chunk size over it is refused */

enum proxy_body_kind { PROXY_BODY_NONE, PROXY_BODY_LENGTH, PROXY_BODY_CHUNKED };

/* What a request's head says, as far as the proxy cares. Pointers are into the caller's buffer. */
struct proxy_head {
	size_t len;                 /* bytes of the head, its blank line included */
	const char *target;         /* the request target, as sent */
	size_t target_len;
	const char *host;           /* the Host header's value, NULL when there is none */
	size_t host_len;
	bool token_given;           /* a token came (X-Space-Token, E2b-Traffic-Access-Token or
				       the cookie space_token; a header before the cookie) */
	char token[PROXY_TOKEN_MAX + 1]; /* it; "" when it was too long to be anyone's */
	bool token_from_cookie;     /* it came from the cookie (a header seen later replaces it) */
	bool qtoken_given;          /* ?space_token= in the target */
	char qtoken[PROXY_TOKEN_MAX + 1]; /* it; "" when too long or of characters no token has */
	enum proxy_body_kind body;
	uint64_t length;            /* PROXY_BODY_LENGTH: the body's bytes */
	bool upgrade;               /* an Upgrade header: the answer may switch protocols (101) */
};

/*
 * Reads the request head at the start of buf[0, len). The head's length (> 0) with h filled;
 * 0 while the head is not all there yet (no blank line, len < PROXY_HEAD_MAX); -E2BIG when it
 * is longer than PROXY_HEAD_MAX; -ENOSYS for a Transfer-Encoding other than chunked; -EINVAL
 * for anything else that is not a plain HTTP/1.0 or 1.1 request: a bare LF, a control byte,
 * a line folded, a header name with a space before its colon, two Host headers, two
 * Content-Lengths, a Content-Length with a Transfer-Encoding, the method CONNECT.
 */
int proxy_http_head(const char *buf, size_t len, struct proxy_head *h);

/*
 * Writes the head buf[0, len) (one proxy_http_head() accepted) into out without the token
 * headers and the cookie space_token (a Cookie header left with no cookie goes). At most
 * PROXY_REWRITE_MAX(len) bytes: the length written, or -ENOSPC when room is short.
 */
#define PROXY_REWRITE_MAX(len) ((len) + (len) / 2)
int proxy_http_rewrite(const char *buf, size_t len, char *out, size_t room);

/*
 * Where a browser that sent its token in the query (target[0, len)) is sent back to: the
 * target without its space_token parameter when that is a path of this host (one '/' then
 * no '/' or '\\'), else "/". Always a NUL-terminated string of n - 1 bytes at most (n >= 2).
 */
void proxy_http_location(const char *target, size_t len, char *out, size_t n);

/* Where a request's body is; a fresh one from proxy_http_body_start() for each request. */
struct proxy_body {
	int state;
	uint64_t left;              /* bytes left of the body or of the chunk */
};

void proxy_http_body_start(struct proxy_body *b, const struct proxy_head *h);

/*
 * Reads body bytes from in[0, len) (what follows the head, or what followed the last call's
 * *took). *took: how many of them belong to the body, to pass on unchanged. 1 when the body
 * has ended (the next request's head starts at in + *took), 0 while it goes on (call again
 * with what follows in + *took, or with more bytes, when a chunk's size line is not all in),
 * -EINVAL for a chunked body that is not one (a size line over PROXY_CHUNK_LINE_MAX, a chunk
 * not ended by CRLF) or that has trailer fields (refused: they could carry the token).
 */
int proxy_http_body(struct proxy_body *b, const char *in, size_t len, size_t *took);

/* The answer to an Upgrade request, read as it passes on to the client; zeroed before it. */
struct proxy_status {
	char line[12];              /* "HTTP/1.1 101" */
	size_t n;                   /* bytes of it seen */
	uint32_t last4;             /* an interim (1xx) answer's last bytes: its end is CRLFCRLF */
	bool in_head;               /* in an interim answer's head */
};

/*
 * Reads the answer's next bytes p[0, n): 1 once its status is 101 (the connection switched
 * protocols: what follows is no longer HTTP), -1 once it is another final status (or not
 * HTTP/1.x at all), 0 while not known yet; interim answers (100, 103) are skipped.
 */
int proxy_http_status(struct proxy_status *s, const char *p, size_t n);

#endif

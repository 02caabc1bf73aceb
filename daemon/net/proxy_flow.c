/*
 * daemon/net/proxy_flow.c - the bytes of a proxied connection (proxy.c): each direction's
 * buffer of PROXY_BUF bytes, read into while it has room and written out as far as the other
 * side takes, and the client's input taken into it a request at a time (its head rewritten
 * without the token).
 */
#include "daemon/net/proxy_int.h"

#include <errno.h>
#include <string.h>

/* Room at the end of f for more bytes (what was sent is moved out of the way first). */
size_t proxy_flow_room(struct flow *f)
{
	if (f->off > 0) {
		memmove(f->buf, f->buf + f->off, f->len);
		f->off = 0;
	}
	return PROXY_BUF - f->len;
}

/* Moves the first n bytes of the client's (read) into c2u, which has room for them. */
void proxy_take_in(struct pconn *c, size_t n, bool copy)
{
	if (copy) {
		memcpy(c->c2u.buf + c->c2u.off + c->c2u.len, c->in, n);
		c->c2u.len += n;
	}
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
}

/* Request h (at the start of in, admitted) goes on without the token: -ENOSPC until c2u has room. */
int proxy_pass_head(struct pconn *c, const struct proxy_head *h)
{
	size_t room = proxy_flow_room(&c->c2u);
	int n = proxy_http_rewrite(c->in, h->len, c->c2u.buf + c->c2u.len, room);
	if (n < 0)
		return n;
	c->c2u.len += (size_t)n;
	proxy_take_in(c, h->len, false);
	proxy_http_body_start(&c->body, h);
	c->upgrade = h->upgrade;
	c->rstate = R_BODY;
	return 0;
}

/* Whether the client's side is read now (PIPE). */
bool proxy_reading_client(const struct pconn *c)
{
	return !c->in_eof && c->in_len < sizeof(c->in) && c->rstate != R_REFUSED;
}

/* Reads what src has into f while it has room: the bytes read (the last of f's), 0 when none
 * came, -1 when the connection is broken; f->eof at its end. */
ssize_t proxy_flow_read(struct flow *f, int src)
{
	size_t room = proxy_flow_room(f);
	if (f->eof || room == 0)
		return 0;
	ssize_t r = recv(src, f->buf + f->len, room, MSG_DONTWAIT);
	if (r > 0)
		f->len += (size_t)r;
	else if (r == 0)
		f->eof = true;
	else if (errno != EAGAIN && errno != EINTR)
		return -1;
	return r > 0 ? r : 0;
}

/* Sends what f holds to dst as far as it takes it: the bytes sent, or -1 when broken. */
ssize_t proxy_flow_write(struct flow *f, int dst)
{
	if (f->len == 0)
		return 0;
	ssize_t w = send(dst, f->buf + f->off, f->len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w > 0) {
		f->off += (size_t)w;
		f->len -= (size_t)w;
		return w;
	}
	return w < 0 && errno != EAGAIN && errno != EINTR ? -1 : 0;
}

/*
 * daemon/driver/qmp.c - a QMP client for one operation at a time (see qmp.h).
 */
#include "daemon/driver/qmp.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/base/clock.h"

/* The next whole line QEMU sent, parsed, waiting until deadline (monotonic ms). */
static int read_msg(struct qmp *q, int64_t deadline, json_t **out, struct err *e)
{
	for (;;) {
		char *nl = q->len ? memchr(q->buf, '\n', q->len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - q->buf) + 1;
			json_error_t je;
			json_t *j = json_loadb(q->buf, n, 0, &je);
			memmove(q->buf, q->buf + n, q->len - n);
			q->len -= n;
			if (!json_is_object(j)) {
				json_decref(j);
				return err_set(e, ERR_INTERNAL, EPROTO, "QEMU's monitor sent something that is not a "
					       "JSON object: %s", je.text);
			}
			*out = j;
			return 0;
		}
		if (q->len >= QMP_MAX_LINE)
			return err_set(e, ERR_INTERNAL, EPROTO, "QEMU's monitor sent a line over %d KiB",
				       QMP_MAX_LINE / 1024);
		int64_t left = deadline - mono_ms();
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return err_set(e, ERR_INTERNAL, ETIMEDOUT, "QEMU's monitor did not answer within %d s",
				       QMP_TIMEOUT_MS / 1000);
		ssize_t got = r < 0 ? -1 : recv(q->fd, q->buf + q->len, QMP_MAX_LINE - q->len, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return err_set(e, ERR_INTERNAL, got < 0 ? errno : EPIPE, "QEMU's monitor %s",
				       got < 0 ? strerror(errno) : "closed the connection");
		q->len += (size_t)got;
	}
}

/* Sends one line, with fd attached when it is not -1. */
static int send_msg(struct qmp *q, const char *text, int fd, struct err *e)
{
	size_t n = strlen(text), off = 0;
	while (off < n) {
		struct iovec iov = { .iov_base = (char *)text + off, .iov_len = n - off };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (fd >= 0 && off == 0) {
			memset(&u, 0, sizeof(u));
			m.msg_control = u.buf;
			m.msg_controllen = sizeof(u.buf);
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd, sizeof(int));
		}
		ssize_t w = sendmsg(q->fd, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return err_set(e, ERR_INTERNAL, errno, "writing to QEMU's monitor: %s", strerror(errno));
		off += (size_t)w;
	}
	return 0;
}

/* The answer to the command just sent: events are skipped. */
static int answer(struct qmp *q, const char *cmd, json_t **ret, struct err *e)
{
	int64_t deadline = mono_ms() + QMP_TIMEOUT_MS;
	for (;;) {
		json_t *j = NULL;
		int rc = read_msg(q, deadline, &j, e);
		if (rc < 0)
			return rc;
		json_t *r = json_object_get(j, "return");
		json_t *err = json_object_get(j, "error");
		if (r) {
			if (ret)
				*ret = json_incref(r);
			json_decref(j);
			return 0;
		}
		if (err) {
			const char *desc = json_string_value(json_object_get(err, "desc"));
			rc = err_set(e, ERR_INTERNAL, EREMOTEIO, "QEMU refused %s: %s", cmd, desc ? desc : "no reason");
			json_decref(j);
			return rc;
		}
		json_decref(j); /* an event, or the greeting's echo */
	}
}

int qmp_open(struct qmp *q, const char *path, struct err *e)
{
	memset(q, 0, sizeof(*q));
	q->fd = -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(e, ERR_INTERNAL, ENAMETOOLONG, "the monitor's path is too long: %s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	q->buf = malloc(QMP_MAX_LINE);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!q->buf || q->fd < 0) {
		qmp_close(q);
		return err_set(e, ERR_INTERNAL, ENOMEM, "cannot open a monitor session");
	}
	if (connect(q->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = errno;
		qmp_close(q);
		return err_set(e, ERR_INTERNAL, err, "connecting to QEMU's monitor: %s", strerror(err));
	}
	json_t *greeting = NULL;
	int rc = read_msg(q, mono_ms() + QMP_TIMEOUT_MS, &greeting, e);
	if (rc == 0 && !json_object_get(greeting, "QMP"))
		rc = err_set(e, ERR_INTERNAL, EPROTO, "QEMU's monitor did not greet as QMP does");
	json_decref(greeting);
	if (rc == 0)
		rc = qmp_call(q, "qmp_capabilities", NULL, -1, NULL, e);
	if (rc < 0)
		qmp_close(q);
	return rc;
}

int qmp_call(struct qmp *q, const char *cmd, json_t *args, int send_fd, json_t **ret, struct err *e)
{
	json_t *msg = json_pack("{s:s}", "execute", cmd);
	if (msg && args)
		json_object_set_new(msg, "arguments", args);
	else
		json_decref(args);
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (!text)
		return err_set(e, ERR_INTERNAL, ENOMEM, "cannot build the %s command", cmd);
	size_t n = strlen(text);
	char *line = realloc(text, n + 2);
	if (!line) {
		free(text);
		return err_set(e, ERR_INTERNAL, ENOMEM, "cannot build the %s command", cmd);
	}
	memcpy(line + n, "\n", 2);
	int rc = send_msg(q, line, send_fd, e);
	free(line);
	return rc < 0 ? rc : answer(q, cmd, ret, e);
}

void qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	free(q->buf);
	q->fd = -1;
	q->buf = NULL;
	q->len = 0;
}

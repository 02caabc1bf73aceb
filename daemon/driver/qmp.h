/*
 * daemon/driver/qmp.h - a client of QEMU's machine protocol (QMP): JSON
 * objects, one a line, on a Unix socket.
 *
 * A session is opened for one operation and closed after it: connect, read
 * QEMU's greeting, leave capability negotiation with qmp_capabilities, then
 * commands, each answered by {"return": ...} or {"error": {"class", "desc"}}.
 * Events QEMU sends meanwhile ({"event": ...}) are skipped. Every read has a
 * deadline, so a QEMU that stops answering fails the call instead of hanging
 * the job thread. QEMU serves one monitor client at a time: a second session
 * waits in the listener's backlog until the first closes.
 *
 * What QEMU sends is not trusted any more than the guest is (a guest cannot
 * write to the monitor, but a QEMU it has taken over could): lines are
 * bounded by QMP_MAX_LINE and parsed by jansson.
 */
#ifndef SPACE_DAEMON_QMP_H
#define SPACE_DAEMON_QMP_H

#include <jansson.h>

#include "lib/host/err.h"

#define QMP_MAX_LINE (256 * 1024) /* the longest answer we read (query-migrate, query-status: ~1 KiB) */
/* For each answer: QEMU answers in milliseconds on an idle host, but twenty QEMUs restoring at
 * once on two cores under TCG left some monitors silent for over 15 s; a stuck QEMU is found a
 * minute later instead. */
#define QMP_TIMEOUT_MS 60000

struct qmp {
	int fd;
	char *buf;  /* bytes read, not yet a whole line */
	size_t len;
};

/* Connects to the monitor at path and negotiates. Returns 0 or -errno with e filled. */
int qmp_open(struct qmp *q, const char *path, struct err *e);

/*
 * Runs cmd with args (a JSON object, taken over; NULL for none); with send_fd >= 0 the
 * descriptor travels with the command (SCM_RIGHTS), as getfd wants it. *ret, if not NULL,
 * gets the "return" value (json_decref it). An {"error"} answer is -EREMOTEIO with its
 * description in e. Returns 0 or -errno.
 */
int qmp_call(struct qmp *q, const char *cmd, json_t *args, int send_fd, json_t **ret, struct err *e);

void qmp_close(struct qmp *q);

#endif

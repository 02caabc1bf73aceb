/*
 * daemon/base/notify.h - spaced's word to the service manager that started it (systemd's
 * Type=notify, sd_notify(3) through libsystemd): ready once its API answers, stopping when it
 * begins to stop, and a status line of what it does.
 *
 * Each call does nothing when spaced was not started with NOTIFY_SOCKET in its environment,
 * and none can fail spaced: what the service manager does not take is dropped. The variable is
 * left in the environment (the status and the stop are told after the start), so the programs
 * spaced starts inherit it; the unit's NotifyAccess=main makes the manager hear spaced alone.
 */
#ifndef SPACE_DAEMON_NOTIFY_H
#define SPACE_DAEMON_NOTIFY_H

/* READY=1 with spaced's pid and a status line: call once the API answers on its socket. */
void notify_ready(const char *status);

/* STOPPING=1 with a status line: call when spaced begins to stop. */
void notify_stopping(const char *status);

/* STATUS=<printf of fmt>: what spaced does now, for `systemctl status`. */
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

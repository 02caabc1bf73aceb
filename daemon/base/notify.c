/*
 * daemon/base/notify.c - READY=1, STOPPING=1 and STATUS= to the service manager with
 * libsystemd's sd_notify(3) (see notify.h), which sends nothing without NOTIFY_SOCKET.
 */
#include "daemon/base/notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

void notify_ready(const char *status)
{
	sd_notifyf(0, "READY=1\nMAINPID=%ld\nSTATUS=%s", (long)getpid(), status);
}

void notify_stopping(const char *status)
{
	sd_notifyf(0, "STOPPING=1\nSTATUS=%s", status);
}

void notify_status(const char *fmt, ...)
{
	char *line;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sd_notifyf(0, "STATUS=%s", line);
	free(line);
}

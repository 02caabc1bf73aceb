/*
 * daemon/base/crash.c - named crash points (see crash.h).
 */
#include "daemon/base/crash.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/log.h"

static char crash_at[64];

void crash_init(void)
{
	const char *s = getenv("SPACE_TEST_CRASH_AT");
	snprintf(crash_at, sizeof(crash_at), "%s", s ? s : "");
	if (crash_at[0])
		log_warn("test hook: spaced kills itself at step %s", crash_at);
}

void crash_point(const char *step)
{
	if (!crash_at[0] || strcmp(crash_at, step) != 0)
		return;
	log_warn("test hook: killing spaced at step %s", step);
	kill(getpid(), SIGKILL);
}

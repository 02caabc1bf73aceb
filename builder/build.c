/*
 * builder/build.c - what the build's steps share with its phases (build.h): printing its
 * events, one JSON object a line, and saying why it failed.
 */
#include "builder/build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void build_emit(struct build *b, json_t *event)
{
	char *line = event ? json_dumps(event, JSON_COMPACT) : NULL;
	json_decref(event);
	if (!line)
		return;
	if (printf("%s\n", line) < 0 || fflush(stdout) != 0)
		*b->cancelled = 1; /* nobody reads the build any more */
	free(line);
}

void build_step_event(struct build *b, const struct dockerfile_step *s, bool cached)
{
	build_emit(b, json_pack("{s:s, s:i, s:i, s:i, s:s, s:b}", "type", "step", "step", (int)b->step, "steps",
				(int)b->df->n_steps, "line", s->line, "text", s->text, "cached", cached));
}

int build_fail(struct build *b, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
	va_end(ap);
	return -err;
}

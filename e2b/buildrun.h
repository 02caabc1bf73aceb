/*
 * e2b/buildrun.h - one template build of the front (builds.h), private to builds.c and
 * buildrun.c: its record, and its run through spaced's POST /v1/templates in a thread of its
 * own, whose events become its log (docs/e2b.md, "Building templates").
 *
 * Locking: gw_builds.lock guards the fields marked [lock]; the functions below that touch them
 * are called with it held unless they say otherwise.
 */
#ifndef SPACE_E2B_BUILDRUN_H
#define SPACE_E2B_BUILDRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2b/builds.h"
#include "e2b/recipe.h"

/* A build's state; E2B's status of each is state_names' (builds.c). */
enum buildrun_state { BUILDRUN_ASKED, BUILDRUN_BUILDING, BUILDRUN_WAITING, BUILDRUN_READY, BUILDRUN_FAILED };

struct gw_build {
	char id[37];                 /* a UUID, as E2B's */
	char tpl[GW_BUILD_NAME_MAX + 1]; /* the template's id: its name without a tag */
	char owner[GW_BUILD_OWNER_LEN + 1];
	json_t *names;               /* the names the build records, NAME[:TAG] */
	enum buildrun_state state;            /* [lock] */
	json_t *log;                 /* [lock] {timestamp, level, message, step} */
	bool cut;                    /* [lock] GW_BUILD_LOG_MAX reached */
	json_t *reason;              /* [lock] when BUILDRUN_FAILED */
	size_t step_from;            /* [lock] the log's entry where the current step began */
	int step;                    /* [lock] the E2B step being done (0: the base, -1: the end) */
	int64_t ended_ms;            /* [lock] when it became BUILDRUN_READY or BUILDRUN_FAILED, 0 before */
	int64_t asked_ms;            /* when it was asked for */
	char partial[GW_BUILD_LINE_MAX]; /* [lock] output after its last line break */
	size_t partial_len;
	bool partial_err;            /* [lock] it came from stderr */
	bool partial_cut;            /* [lock] the line was entered cut: the rest of it is dropped */
	/* the run's own, untouched by others once it started */
	struct recipe recipe;
	int context;                 /* the build context's file */
	struct gw *gw;
};

/* An upload under way (r->upload). */
struct upload {
	int fd;
	char part[512], final[512];
	long long bytes;
	bool too_large, failed;
};

/* Starts b's run in a detached thread (lock held): it sends b->context to spaced once per name
 * in b->names, takes b's state from the events, and closes b->context when it ends. 0, or a
 * negative errno when no thread could be made (b untouched). */
int buildrun_start(struct gw_build *b);
/* Ends b, not started, as failed with msg as its reason and last log entry (lock held). */
void buildrun_fail(struct gw_build *b, const char *msg);

#endif

/*
 * daemon/core/entry.h - file entries: the agent's A_STAT frames, read and checked, and the JSON
 * of an entry the files API answers with (docs/api.md, "Files").
 *
 * An A_STAT is struct sp_stat and a name, then, from an agent that has it, struct sp_stat_ext
 * with the owner's and group's names, a link's target and the absolute path (proto/agent.h). An
 * older agent's frame ends after the name: its entries have ids but no names, whole seconds,
 * and no link target.
 */
#ifndef SPACE_DAEMON_ENTRY_H
#define SPACE_DAEMON_ENTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "lib/frame.h"

struct entry {
	const char *name;           /* these strings point into the frame */
	uint64_t size;
	int64_t mtime;              /* seconds since the epoch */
	uint32_t mtime_nsec;        /* 0 from an older agent */
	uint32_t mode;              /* permission bits */
	uint32_t type;              /* SP_TYPE_* */
	uint32_t uid, gid;
	bool ext;                   /* the frame had struct sp_stat_ext and its strings */
	const char *owner, *group;  /* "" when the agent found no name (or sent none) */
	const char *target;         /* a link's target, else "" */
	const char *path;           /* the absolute path the agent resolved, "" if it sent none */
};

/*
 * Reads an A_STAT frame whose length was checked against struct sp_stat. Returns 0, or -EPROTO
 * when the name is missing, when bytes follow the name that are not a whole struct sp_stat_ext
 * with its four strings, or when its nanoseconds are 1e9 or more.
 */
int entry_parse(const struct frame *f, struct entry *e);

/*
 * The entry as the API shows it at path: name, path, type, size, mode ("0644"), mtime (RFC 3339,
 * with nanoseconds when the agent sent them), uid, gid, and, from an agent with the extension,
 * owner and group (the id as a decimal string when the sandbox has no name for it) and
 * symlink_target for a link. NULL when out of memory.
 */
json_t *entry_json(const struct entry *e, const char *path);

#endif

/*
 * daemon/core/entry.c - file entries from A_STAT frames, and their JSON (see entry.h).
 */
#include "daemon/core/entry.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proto/agent.h"

int entry_parse(const struct frame *f, struct entry *e)
{
	memset(e, 0, sizeof(*e));
	e->size = frame_get_u64(f->payload + offsetof(struct sp_stat, size));
	e->mtime = (int64_t)frame_get_u64(f->payload + offsetof(struct sp_stat, mtime));
	e->mode = frame_get_u32(f->payload + offsetof(struct sp_stat, mode)) & 07777;
	e->type = frame_get_u32(f->payload + offsetof(struct sp_stat, type));
	e->uid = frame_get_u32(f->payload + offsetof(struct sp_stat, uid));
	e->gid = frame_get_u32(f->payload + offsetof(struct sp_stat, gid));
	e->owner = e->group = e->target = e->path = "";
	size_t off = sizeof(struct sp_stat);
	if (!(e->name = frame_str(f, &off)))
		return -EPROTO;
	if (off == f->len)
		return 0; /* an agent from before the extension */
	if (f->len - off < sizeof(struct sp_stat_ext))
		return -EPROTO;
	e->mtime_nsec = frame_get_u32(f->payload + off + offsetof(struct sp_stat_ext, mtime_nsec));
	off += sizeof(struct sp_stat_ext);
	if (e->mtime_nsec >= 1000000000u || !(e->owner = frame_str(f, &off)) || !(e->group = frame_str(f, &off)) ||
	    !(e->target = frame_str(f, &off)) || !(e->path = frame_str(f, &off)))
		return -EPROTO;
	e->ext = true;
	return 0; /* what follows the path is for a later agent's fields */
}

/* A name, or the id in decimal when the sandbox has none for it (as ls shows it). */
static json_t *id_name(const char *name, uint32_t id)
{
	char num[16];
	if (*name)
		return json_string(name);
	snprintf(num, sizeof(num), "%u", id);
	return json_string(num);
}

json_t *entry_json(const struct entry *e, const char *path)
{
	static const char *types[] = { "other", "file", "dir", "symlink", "other" };
	char mode[8], when[48];
	snprintf(mode, sizeof(mode), "%04o", e->mode);
	time_t t = (time_t)e->mtime;
	struct tm tm;
	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));
	size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, e->ext ? ".%09uZ" : "Z", e->mtime_nsec);
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I}", "name", e->name, "path", path, "type",
			      types[e->type < 5 ? e->type : 0], "size", (json_int_t)e->size, "mode", mode, "mtime", when,
			      "uid", (json_int_t)e->uid, "gid", (json_int_t)e->gid);
	if (!j || !e->ext)
		return j;
	json_object_set_new(j, "owner", id_name(e->owner, e->uid));
	json_object_set_new(j, "group", id_name(e->group, e->gid));
	if (e->type == SP_TYPE_LINK)
		json_object_set_new(j, "symlink_target", json_string(e->target));
	return j;
}

/*
 * agent/fsuser.c - file requests done as a user of the sandbox (see fsuser.h).
 */
#include "fsuser.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

int fsuser_arg(const struct frame *f, size_t *off, struct fsuser *fu)
{
	memset(fu, 0, sizeof(*fu));
	if (*off >= f->len)
		return 0; /* a host that names no user, or one without SP_FEATURE_FILE_USER */
	const char *spec = frame_str(f, off);
	if (!spec)
		return -EPROTO;
	if (!*spec)
		return 0;
	int err = user_by_spec(spec, &fu->u);
	if (err < 0)
		return err;
	fu->set = true;
	return 0;
}

int fsuser_enter(const struct fsuser *fu)
{
	if (!fu->set)
		return 0;
	if (setgroups(fu->u.ngroups, fu->u.groups) < 0)
		return -errno;
	if (setegid(fu->u.gid) < 0) {
		int err = -errno;
		setgroups(0, NULL);
		return err;
	}
	if (seteuid(fu->u.uid) < 0) {
		int err = -errno;
		if (setegid(0) < 0 || setgroups(0, NULL) < 0)
			agent_log("giving back root's gid and groups after seteuid(%u) failed: %s", (unsigned)fu->u.uid,
				  strerror(errno));
		return err;
	}
	return 0;
}

void fsuser_leave(const struct fsuser *fu)
{
	if (!fu->set)
		return;
	/* back to root first: the gid and groups need its capabilities */
	if (seteuid(0) < 0 || setegid(0) < 0 || setgroups(0, NULL) < 0)
		agent_log("giving back root's ids after a request as uid %u: %s", (unsigned)fu->u.uid,
			  strerror(errno));
}

const char *fsuser_path(const struct fsuser *fu, const char *path, char *buf, size_t size)
{
	if (path[0] == '/')
		return path;
	if (!fu->set)
		return NULL;
	while (path[0] == '.' && path[1] == '/')
		path += 2; /* "./x" is x */
	if (strcmp(path, ".") == 0)
		path = "";
	const char *home = fu->u.home;
	bool slash = home[strlen(home) - 1] == '/';
	int n = *path ? snprintf(buf, size, "%s%s%s", home, slash ? "" : "/", path) : snprintf(buf, size, "%s", home);
	return n >= 0 && (size_t)n < size ? buf : NULL;
}

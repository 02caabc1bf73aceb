/*
 * e2b/users.c - envd's default user on space's sandboxes (users.h, docs/e2b.md "The default
 * user"): a call that names no user acts as `user` where the sandbox has that account. Whether it
 * has is spaced's stat of "/" as that user: an answer means it has, spaced's "no such user"
 * (400) that it has not, and so does a 409 (an agent from before file calls as a user, in a
 * sandbox resumed from an older release's image). The answer is kept per sandbox id (ids are never reused); a question
 * that fails otherwise (a sandbox that stopped) is not kept, and the call goes on as `user`, to
 * fail as it would have.
 */
#include "e2b/users.h"

#include <stdio.h>
#include <string.h>

void users_init(struct gw_users *u)
{
	pthread_mutex_init(&u->lock, NULL);
}

/* 1 when sbid is known to have the account, 0 when known not to, -1 when not known. */
static int known(struct gw_users *u, const char *sbid)
{
	int has = -1;
	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < GW_USERS_KNOWN && has < 0; i++)
		if (strcmp(u->known[i].sbid, sbid) == 0)
			has = u->known[i].has;
	pthread_mutex_unlock(&u->lock);
	return has;
}

static void remember(struct gw_users *u, const char *sbid, bool has)
{
	pthread_mutex_lock(&u->lock);
	struct gw_users_entry *e = &u->known[u->next];
	u->next = (u->next + 1) % GW_USERS_KNOWN;
	snprintf(e->sbid, sizeof(e->sbid), "%s", sbid);
	e->has = has;
	pthread_mutex_unlock(&u->lock);
}

/* Whether sandbox sbid has GW_DEFAULT_USER, asked of spaced. */
static bool has_default(struct gw *gw, const char *sbid)
{
	int has = known(gw->users, sbid);
	if (has >= 0)
		return has;
	char path[128];
	json_t *entry = NULL;
	struct client_err e = { 0 };
	if (!gw_sandbox_path(path, sizeof(path), sbid, "/files/stat?path=%2F&user=" GW_DEFAULT_USER))
		return true;
	if (client_request(&gw->up, "GET", path, NULL, &entry, &e) == 0) {
		json_decref(entry);
		remember(gw->users, sbid, true);
		return true;
	}
	/* no such account; or an agent from before file calls as a user (409), which can do a
	 * call that names no user only as root */
	if (e.kind == CLIENT_ERR_API &&
	    ((e.status == 400 && strstr(e.message, "no such user")) || e.status == 409)) {
		remember(gw->users, sbid, false);
		return false;
	}
	return true;
}

const char *users_of(struct req *r, const char *sbid, char *dst, size_t n)
{
	if (gw_user(r, dst, n))
		return dst;
	if (n <= strlen(GW_DEFAULT_USER) || !has_default(r->gw, sbid))
		return NULL;
	return strcpy(dst, GW_DEFAULT_USER);
}

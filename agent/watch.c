/*
 * agent/watch.c - folders watched for changes (watch.h): inotify events turned into A_EVENT
 * frames with names relative to the watched folder.
 *
 * inotify's events map onto the protocol's as E2B's do (after Go's fsnotify): IN_CREATE and
 * IN_MOVED_TO are CREATE, IN_MODIFY WRITE, IN_DELETE REMOVE, IN_MOVED_FROM RENAME, IN_ATTRIB
 * CHMOD. A recursive watch follows a folder moved away no more (its watch is removed) and a
 * folder moved in as a new one. The watched folder's own removal or move ends the watch.
 */
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "files.h"

#define WATCH_MASK                                                                                                   \
	(IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | \
	 IN_ONLYDIR)

static void pump(struct agent *a, struct watch *w);

static struct watch *find(struct agent *a, uint32_t tag)
{
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++)
		if (a->watches.slots[i] && a->watches.slots[i]->tag == tag)
			return a->watches.slots[i];
	return NULL;
}

static void watch_free(struct agent *a, struct watch *w)
{
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++)
		if (a->watches.slots[i] == w)
			a->watches.slots[i] = NULL;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nfolders; i++)
		free(w->folders[i].rel);
	for (size_t i = 0; i < w->qlen; i++)
		free(w->queue[(w->qhead + i) % AGENT_WATCH_QUEUE].name);
	free(w->folders);
	free(w->root);
	free(w->end_msg);
	free(w);
}

/* Once the queue has room, an SP_EVENT_LOST takes the place of the events dropped. */
static bool place_lost(struct watch *w)
{
	if (!w->lost)
		return true;
	char *none = w->qlen < AGENT_WATCH_QUEUE ? strdup("") : NULL;
	if (!none)
		return false;
	w->queue[(w->qhead + w->qlen++) % AGENT_WATCH_QUEUE] = (struct watch_event){ SP_EVENT_LOST, none };
	w->lost = false;
	return true;
}

/* Queues an event (name is taken; NULL only notes a loss); past AGENT_WATCH_QUEUE it is
 * dropped and the loss noted. */
static void push(struct watch *w, uint32_t type, char *name)
{
	if (!name || !place_lost(w) || w->qlen == AGENT_WATCH_QUEUE) {
		free(name);
		w->lost = true;
		place_lost(w);
		return;
	}
	w->queue[(w->qhead + w->qlen++) % AGENT_WATCH_QUEUE] = (struct watch_event){ type, name };
}

/* "rel/name", or name alone under the watched folder. */
static char *join(const char *rel, const char *name)
{
	char *s = NULL;
	if (asprintf(&s, "%s%s%s", rel, *rel ? "/" : "", name) < 0)
		return NULL;
	return s;
}

/* Ends w once what it queued is sent: with A_ERROR(err, msg), or A_END when err is 0. */
static void end(struct watch *w, int err, const char *msg)
{
	if (w->ending)
		return;
	w->ending = true;
	w->end_err = err;
	w->end_msg = msg ? strdup(msg) : NULL;
}

static struct watch_folder *folder_of(struct watch *w, int wd)
{
	for (size_t i = 0; i < w->nfolders; i++)
		if (w->folders[i].wd == wd)
			return &w->folders[i];
	return NULL;
}

static void folder_drop(struct watch *w, struct watch_folder *f)
{
	free(f->rel);
	*f = w->folders[--w->nfolders];
}

/*
 * Watches the folder rel (under w->root) and, for a recursive watch, every folder below it.
 * With report, each entry found is queued as made (it came before the watch could see it).
 * Returns 0, or -E2BIG past AGENT_WATCH_FOLDERS, or another -errno for the watched folder
 * itself; a subfolder that went meanwhile, or that cannot be watched, is passed over.
 */
static int add_tree(struct watch *w, const char *rel, bool report)
{
	char *path = *rel ? join(w->root, rel) : strdup(w->root);
	if (!path)
		return -ENOMEM;
	if (strcmp(w->root, "/") == 0 && *rel) /* "/" + "/" + rel */
		memmove(path, path + 1, strlen(path));
	int wd = inotify_add_watch(w->fd, path, WATCH_MASK | (*rel ? IN_DONT_FOLLOW : 0));
	int rc = 0;
	if (wd < 0) {
		rc = *rel ? 0 : -errno;
		goto out;
	}
	struct watch_folder *f = folder_of(w, wd);
	if (f) { /* the same folder again (moved back in): its name now */
		char *r = strdup(rel);
		if (r) {
			free(f->rel);
			f->rel = r;
		}
	} else {
		if (w->nfolders == AGENT_WATCH_FOLDERS) {
			inotify_rm_watch(w->fd, wd);
			rc = -E2BIG;
			goto out;
		}
		char *r = strdup(rel);
		if (!r) {
			inotify_rm_watch(w->fd, wd);
			rc = -ENOMEM;
			goto out;
		}
		w->folders[w->nfolders++] = (struct watch_folder){ wd, r };
	}
	if (!w->recursive && !report)
		goto out;
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = join(rel, de->d_name);
		if (report)
			push(w, SP_EVENT_CREATE, sub ? strdup(sub) : NULL);
		bool dir = de->d_type == DT_DIR;
		struct stat st;
		if (de->d_type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			dir = S_ISDIR(st.st_mode);
		if (sub && dir && w->recursive)
			rc = add_tree(w, sub, report);
		free(sub);
	}
	if (d)
		closedir(d);
out:
	free(path);
	return rc;
}

/* Stops following the folder rel and everything below it (moved away). */
static void drop_tree(struct watch *w, const char *rel)
{
	size_t n = strlen(rel);
	for (size_t i = 0; i < w->nfolders;) {
		const char *r = w->folders[i].rel;
		if (*r && strncmp(r, rel, n) == 0 && (r[n] == '\0' || r[n] == '/')) {
			inotify_rm_watch(w->fd, w->folders[i].wd);
			folder_drop(w, &w->folders[i]);
		} else {
			i++;
		}
	}
}

static void limit_hit(struct watch *w)
{
	char msg[PATH_MAX + 100];
	snprintf(msg, sizeof(msg), "watch %s: more than %u folders to follow", w->root, AGENT_WATCH_FOLDERS);
	end(w, E2BIG, msg);
}

/* One inotify event of w. */
static void on_event(struct watch *w, const struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		push(w, 0, NULL); /* notes the loss */
		return;
	}
	struct watch_folder *f = folder_of(w, ev->wd);
	if (!f)
		return;
	bool root = f->rel[0] == '\0';
	if (ev->mask & IN_IGNORED) { /* the folder is gone: its watch with it */
		folder_drop(w, f);
		if (root)
			end(w, 0, NULL);
		return;
	}
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
		if (root) { /* a subfolder's own end is told by its parent, with its name */
			push(w, ev->mask & IN_DELETE_SELF ? SP_EVENT_REMOVE : SP_EVENT_RENAME, strdup(""));
			end(w, 0, NULL);
		}
		return;
	}
	if (!ev->len || !ev->name[0])
		return;
	char *name = join(f->rel, ev->name);
	bool dir = ev->mask & IN_ISDIR;
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		push(w, SP_EVENT_CREATE, name ? strdup(name) : NULL);
		if (dir && w->recursive && name && add_tree(w, name, true) == -E2BIG)
			limit_hit(w);
	} else if (ev->mask & IN_MODIFY) {
		push(w, SP_EVENT_WRITE, name ? strdup(name) : NULL);
	} else if (ev->mask & IN_ATTRIB) {
		push(w, SP_EVENT_CHMOD, name ? strdup(name) : NULL);
	} else if (ev->mask & IN_DELETE) {
		push(w, SP_EVENT_REMOVE, name ? strdup(name) : NULL);
	} else if (ev->mask & IN_MOVED_FROM) {
		push(w, SP_EVENT_RENAME, name ? strdup(name) : NULL);
		if (dir && w->recursive && name)
			drop_tree(w, name);
	}
	free(name);
}

int watch_start(struct agent *a, const struct frame *f)
{
	size_t off = sizeof(struct sp_watch);
	const char *path = frame_str(f, &off);
	uint32_t flags = frame_get_u32(f->payload);
	struct stat st;
	if (!path)
		return -EPROTO;
	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return conn_send_error(a, f->chan, EINVAL, "path must be absolute and shorter than %d bytes: %s",
				       PATH_MAX, path);
	if (find(a, f->chan))
		return conn_send_error(a, f->chan, EBUSY, "tag %#x is already in use", f->chan);
	unsigned slot = 0;
	while (slot < AGENT_MAX_WATCHES && a->watches.slots[slot])
		slot++;
	if (slot == AGENT_MAX_WATCHES)
		return conn_send_error(a, f->chan, EAGAIN, "too many folders watched at once (%u)", AGENT_MAX_WATCHES);
	if (stat(path, &st) < 0)
		return conn_send_error(a, f->chan, errno, "watch %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return conn_send_error(a, f->chan, ENOTDIR, "watch %s: not a folder", path);
	struct watch *w = calloc(1, sizeof(*w));
	int err = -ENOMEM;
	if (w) {
		w->tag = f->chan;
		w->recursive = flags & SP_WATCH_RECURSIVE;
		w->credit = SP_WINDOW;
		w->root = strdup(path);
		w->folders = calloc(w->recursive ? AGENT_WATCH_FOLDERS : 1, sizeof(*w->folders));
		w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
		if (w->fd < 0)
			err = -errno;
		else if (w->root && w->folders)
			err = add_tree(w, "", false);
	}
	if (err < 0) {
		if (w)
			watch_free(a, w);
		if (err == -E2BIG)
			return conn_send_error(a, f->chan, E2BIG, "watch %s: more than %u folders to follow", path,
					       AGENT_WATCH_FOLDERS);
		return conn_send_error(a, f->chan, -err, "watch %s: %s", path, strerror(-err));
	}
	a->watches.slots[slot] = w;
	return conn_send(a, SP_A_OK, f->chan, NULL, 0, NULL);
}

bool watch_credit(struct agent *a, uint32_t tag, uint32_t bytes)
{
	struct watch *w = find(a, tag);
	if (!w)
		return false;
	w->credit += bytes;
	if (w->credit > SP_WINDOW)
		w->credit = SP_WINDOW;
	pump(a, w); /* now, as on_ready does: answers queued after this go after the events */
	return true;
}

bool watch_abort(struct agent *a, uint32_t tag)
{
	struct watch *w = find(a, tag);
	if (w)
		watch_free(a, w);
	return w != NULL;
}

/* The bytes an event's frame counts against the window. */
static size_t cost(const struct watch_event *e)
{
	return sizeof(struct sp_event) + strlen(e->name) + 1;
}

static bool can_send(const struct watch *w)
{
	if (w->qlen)
		return w->credit >= cost(&w->queue[w->qhead]);
	return w->ending;
}

/* Sends what w's credit allows, and its end once everything queued went. */
static void pump(struct agent *a, struct watch *w)
{
	while (can_send(w)) {
		if (!w->qlen) {
			if (w->end_err)
				conn_send_error(a, w->tag, w->end_err, "%s", w->end_msg ? w->end_msg : "watch ended");
			else
				conn_send(a, SP_A_END, w->tag, NULL, 0, NULL);
			watch_free(a, w);
			return;
		}
		struct watch_event *e = &w->queue[w->qhead];
		size_t n = cost(e);
		struct outframe *o = conn_frame_alloc(n);
		if (!o)
			return;
		uint8_t *p = conn_frame_payload(o);
		frame_put_u32(p, e->type);
		memcpy(p + sizeof(struct sp_event), e->name, n - sizeof(struct sp_event));
		conn_frame_queue(a, o, SP_A_EVENT, w->tag, n, NULL);
		w->credit -= n;
		free(e->name);
		w->qhead = (w->qhead + 1) % AGENT_WATCH_QUEUE;
		w->qlen--;
		place_lost(w); /* room again */
	}
}

void watch_pump(struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++)
		if (a->watches.slots[i])
			pump(a, a->watches.slots[i]);
}

/* Reads everything inotify holds for w. */
static void on_ready(struct agent *a, void *obj, int fd, short revents)
{
	struct watch *w = NULL;
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++) /* obj may have ended since the poll */
		if (a->watches.slots[i] == obj)
			w = obj;
	if (!w || w->fd != fd)
		return;
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n && !w->ending;) {
			const struct inotify_event *ev = (const void *)(buf + off);
			on_event(w, ev);
			off += (ssize_t)(sizeof(*ev) + ev->len);
		}
		if (w->ending)
			break;
	}
	pump(a, w); /* now: what comes after in this iteration (an answer) goes after the events */
}

void watch_poll(struct agent *a, struct pollset *ps)
{
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++) {
		struct watch *w = a->watches.slots[i];
		if (w && !w->ending)
			pollset_add(ps, w->fd, POLLIN, on_ready, w);
	}
}

bool watch_busy(const struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++)
		if (a->watches.slots[i] && can_send(a->watches.slots[i]))
			return true;
	return false;
}

void watch_abandon_all(struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_WATCHES; i++)
		if (a->watches.slots[i])
			watch_free(a, a->watches.slots[i]);
}

/*
 * daemon/driver/agent_file.h - the agent's and the shim's files, kept by their content.
 *
 * A gVisor sandbox restored from an image (a resume, a create from a snapshot, a fork) runs
 * the agent process that was checkpointed, and runsc gives that process its file mapping back
 * only if the file mounted at /.space/agent is the same one: an upgrade that replaced
 * space-agent leaves it unable to start a command. So the files a sandbox is made with are
 * kept in one folder, <state>/agents/, each named by the SHA-256 of its content, made once,
 * read-only. The record of which one a sandbox or an image uses is a hard link to it in the
 * sandbox's dir or beside the image: it goes with the dir or the image that holds it, so a
 * kept file that no link points to any more (a link count of 1) is no one's, and
 * agent_file_sweep removes it.
 *
 * Call from one thread at a time per link (a sandbox's operations are serialised).
 */
#ifndef SPACE_DAEMON_AGENT_FILE_H
#define SPACE_DAEMON_AGENT_FILE_H

#include <stddef.h>

#include "lib/host/err.h"

/* Keeps a copy of the file src in dir (made 0700 if missing) as dir/<sha256 of its content>,
 * unless one is there already: written to a temporary name, made 0555, synced and renamed.
 * The kept file's path into out. Returns 0 or -errno with *e filled. */
int agent_file_keep(const char *dir, const char *src, char *out, size_t n, struct err *e);

/* Makes `link` a hard link to `file` (a copy of it when they are on different file systems),
 * replacing whatever `link` was in one rename; nothing when it is that file already. Returns 0
 * or -errno with *e filled. */
int agent_file_link(const char *file, const char *link, struct err *e);

/* Removes from dir every kept file no link points to, but for the files named in keep[0..n)
 * (paths, as agent_file_keep gave them), and what a keep that stopped half-way left. Returns
 * how many it removed, or -errno. */
int agent_file_sweep(const char *dir, const char *const keep[], size_t n);

#endif

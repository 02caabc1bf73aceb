/*
 * agent/files.h - one-frame file operations (H_STAT, H_MKDIR, H_REMOVE,
 * H_RENAME, H_SYNC) and the helpers xfer.c shares: mkdir -p and A_STAT.
 */
#ifndef SPACE_AGENT_FILES_H
#define SPACE_AGENT_FILES_H

#include <stdint.h>
#include <sys/stat.h>

#include "../lib/frame.h"

struct agent;

/* Request handlers; return 0, or -EPROTO to close the connection. */
int files_stat(struct agent *a, const struct frame *f);
int files_mkdir(struct agent *a, const struct frame *f);
int files_remove(struct agent *a, const struct frame *f);
int files_rename(struct agent *a, const struct frame *f);
int files_sync(struct agent *a, const struct frame *f);

/* Creates path and its missing parents; the last one gets `mode` exactly.
 * An existing directory is fine. Returns 0 or -errno. */
int files_mkdir_p(const char *path, mode_t mode);

/* Queues A_STAT on chan describing st under `name`. */
int files_send_stat(struct agent *a, uint32_t chan, const struct stat *st, const char *name);

/* The last component of path ("/" for the root); points into path or a constant. */
const char *files_basename(const char *path, char *buf, size_t size);

/* Reads the single path string of a request at *off: NULL when it is missing
 * (the frame fails its check). */
const char *files_path_arg(const struct frame *f, size_t *off);

#endif

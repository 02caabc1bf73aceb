/*
 * builder/context.h - the build context: the files a build's COPY steps read, sent by the
 * client as a tar stream.
 */
#ifndef SPACE_BUILDER_CONTEXT_H
#define SPACE_BUILDER_CONTEXT_H

#include <stddef.h>

#define BUILD_CONTEXT_FILES_MAX 100000               /* entries of the archive */
#define BUILD_CONTEXT_BYTES_MAX (8ull << 30)         /* bytes of its files once unpacked */

/*
 * Unpacks the tar archive at archive (plain or gzip'd) into dir (made if missing), as user
 * nobody: regular files, folders and links only, none of them outside dir. Returns 0, or
 * -errno with a message for the client in msg (n bytes) naming the archive as `what` ("the
 * build context").
 */
int context_unpack(const char *archive, const char *dir, const char *what, char *msg, size_t n);

#endif

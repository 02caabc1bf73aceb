/*
 * e2b/files.h - E2B's files and filesystem.Filesystem service (files.c).
 */
#ifndef SPACE_E2B_FILES_H
#define SPACE_E2B_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "e2b/gateway.h"

/* An absolute path for p, for request r on sandbox sbid (checked), into dst: a relative one is
 * taken from the home of the user r acts as (users.h), or from /work for root by default (one
 * question to spaced for the home). false when p is empty, the home cannot be had, or the
 * result does not fit. */
bool files_abs_path(struct req *r, const char *sbid, const char *p, char *dst, size_t n);
/* The filesystem.Filesystem service's unary calls but the watchers' (watch.h), each
 * POST /filesystem.Filesystem/<method> on sandbox a->sbid (checked), routed by envd.c's table:
 * Stat, ListDir, MakeDir, Move, Remove; files_unknown answers any other method
 * (a->param[0]) "unimplemented", once its message and path are good. */
enum MHD_Result files_stat(struct req *r, const struct route_args *a);
enum MHD_Result files_list_dir(struct req *r, const struct route_args *a);
enum MHD_Result files_make_dir(struct req *r, const struct route_args *a);
enum MHD_Result files_move(struct req *r, const struct route_args *a);
enum MHD_Result files_remove(struct req *r, const struct route_args *a);
enum MHD_Result files_unknown(struct req *r, const struct route_args *a);
/* GET /files?path=P on sandbox a->sbid (checked): the file, streamed. */
enum MHD_Result files_download(struct req *r, const struct route_args *a);
/* A chunk of a POST /files multipart body for sandbox sbid (checked before the first chunk is
 * taken): true when taken, false when the request is not such an upload. */
bool files_upload(struct req *r, const char *sbid, const char *data, size_t n);
/* The end of a POST /files: the files written, or the first failure. */
enum MHD_Result files_upload_end(struct req *r, const struct route_args *a);

#endif

/*
 * e2b/process.h - E2B's process.Process service (process.c).
 */
#ifndef SPACE_E2B_PROCESS_H
#define SPACE_E2B_PROCESS_H

#include "e2b/gateway.h"

/* POST /process.Process/<method> on sandbox a->sbid (checked), routed by envd.c's table: the
 * streams Start and Connect, and the unary calls List, SendInput, CloseStdin, SendSignal and
 * Update (the last four on the process their message selects: not_found when there is none);
 * process_unknown answers any other method (a->param[0]) "unimplemented", once its message
 * is good. */
enum MHD_Result process_start(struct req *r, const struct route_args *a);
enum MHD_Result process_connect(struct req *r, const struct route_args *a);
enum MHD_Result process_list(struct req *r, const struct route_args *a);
enum MHD_Result process_send_input(struct req *r, const struct route_args *a);
enum MHD_Result process_close_stdin(struct req *r, const struct route_args *a);
enum MHD_Result process_send_signal(struct req *r, const struct route_args *a);
enum MHD_Result process_update(struct req *r, const struct route_args *a);
enum MHD_Result process_unknown(struct req *r, const struct route_args *a);

#endif

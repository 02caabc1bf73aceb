/*
 * e2b/process.h - E2B's process.Process service (process.c).
 */
#ifndef SPACE_E2B_PROCESS_H
#define SPACE_E2B_PROCESS_H

#include "e2b/gateway.h"

/* Answers POST /process.Process/<method> on sandbox sbid (checked). */
enum MHD_Result process_handle(struct req *r, const char *sbid, const char *method);

#endif

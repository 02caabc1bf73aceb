/*
 * daemon/base/crash.h - named crash points for the durability tests.
 *
 * Each step of a transition whose interruption the lifecycle promises to survive
 * calls crash_point("suspend:published") and the like. When spaced runs under the
 * tests with SPACE_TEST_CRASH_AT=<step> in its environment, the call at that step
 * kills spaced with SIGKILL, as a crash at that moment would; otherwise it does
 * nothing. docs/lifecycle.md lists the steps and what a crash at each leaves.
 */
#ifndef SPACE_DAEMON_BASE_CRASH_H
#define SPACE_DAEMON_BASE_CRASH_H

/* Reads SPACE_TEST_CRASH_AT once; call from main before any thread starts. */
void crash_init(void);
/* Kills spaced at once if step is the one named by SPACE_TEST_CRASH_AT. */
void crash_point(const char *step);

#endif

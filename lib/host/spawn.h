/*
 * lib/host/spawn.h - running host programs (runsc, mmdebstrap) from spaced.
 *
 * The child gets only the descriptors named here (everything else spaced
 * holds is O_CLOEXEC). The calls block until the program exits: use them
 * from job threads, never with d->lock held.
 */
#ifndef SPACE_LIB_HOST_SPAWN_H
#define SPACE_LIB_HOST_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Runs argv[0] (searched in PATH) with stdin from /dev/null, stdout to
 * out_fd and stderr to err_fd (-1: /dev/null). Returns its exit status
 * (0..255, 128+n for a signal) or -errno if it could not be started.
 */
int spawn_run(char *const argv[], int out_fd, int err_fd);

/* spawn_run with the working directory dir (apt-get download writes there). */
int spawn_run_in(const char *dir, char *const argv[], int out_fd, int err_fd);

/*
 * Starts argv with the descriptors keep[0..nkeep) given to the program as 3, 4, ... in that
 * order (a listening socket QEMU is to serve on, an image it is to read), all else closed (at
 * most SPAWN_MAX_KEEP), in a session of its own (a signal to spaced's terminal does not reach
 * it), and does not wait: returns its pid or -errno. It outlives spaced; while spaced runs,
 * the reaper reaps it when it exits.
 */
#define SPAWN_MAX_KEEP 8
pid_t spawn_start_keep(char *const argv[], const int *keep, int nkeep, int out_fd, int err_fd);

/*
 * spawn_run for a program that sets up the network namespace nsfd (a descriptor of a network
 * namespace, or of a file bound to one). With hide_net_core, the program gets a mount namespace
 * of its own in which /proc/sys/net/core, as seen from inside nsfd, is an empty read-only
 * folder: runsc 20221219 takes that folder's rmem_default for the sign of the host's namespace
 * and refuses to set up a sandbox's network, and kernels since 5.x show it in every namespace
 * (docs/network.md). The program itself runs in the caller's network namespace; without
 * hide_net_core, in nsfd.
 */
int spawn_run_netns(char *const argv[], int nsfd, bool hide_net_core, int out_fd, int err_fd);

/*
 * Runs argv and captures up to n-1 bytes of its stdout into out (NUL-terminated).
 * Only for programs that do not leave processes holding their stdout behind.
 */
int spawn_capture(char *const argv[], char *out, size_t n);

/*
 * Reaps pid, an exited child, unless a spawn call is waiting for it. Used by the
 * reaper for orphans spaced inherited; the two never take each other's child.
 */
void spawn_reap_orphan(pid_t pid);

#endif

/*
 * agent/shim/statx.c - libspace-shim.so, preloaded into every command the agent
 * starts (LD_PRELOAD=/.space/shim.so).
 *
 * gVisor 20221219 (Debian 12's runsc) rejects statx() with AT_NO_AUTOMOUNT
 * with EINVAL, and coreutils passes that flag: `ls -l` and `stat` fail on
 * every path. There is no automounting inside a sandbox, so the flag means
 * nothing there; this wrapper drops it. Only the raw system call is used, so
 * the library loads with any glibc.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask, struct statx *restrict buf)
{
	return (int)syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}

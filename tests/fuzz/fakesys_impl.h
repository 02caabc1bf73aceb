/*
 * tests/fuzz/fakesys_impl.h - prototypes of the fakes in fakesys.c (the
 * names fakesys.h maps the real calls to) and of their set-up.
 */
#ifndef SPACE_TESTS_FUZZ_FAKESYS_IMPL_H
#define SPACE_TESTS_FUZZ_FAKESYS_IMPL_H

#include <ftw.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Creates the scratch directory the fake directories are (removed at exit). */
void fz_sys_init(void);
/* The socket end fz_poll reads from to make room for the agent's writes. */
void fz_sys_set_drain(int fd);

int fz_open(const char *path, int flags, ...);
int fz_stat(const char *path, struct stat *st);
int fz_lstat(const char *path, struct stat *st);
int fz_mkdir(const char *path, mode_t mode);
int fz_chmod(const char *path, mode_t mode);
int fz_rmdir(const char *path);
int fz_unlink(const char *path);
int fz_rename(const char *from, const char *to);
int fz_sethostname(const char *name, size_t len);
int fz_ioctl(int fd, unsigned long req, ...);
int fz_nftw(const char *path, __nftw_func_t fn, int nfds, int flags);
void fz_sync(void);
int fz_kill(pid_t pid, int sig);
int fz_poll(struct pollfd *fds, nfds_t n, int timeout);

#endif

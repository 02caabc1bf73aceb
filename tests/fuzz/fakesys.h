/*
 * tests/fuzz/fakesys.h - force-included (clang -include) when the agent's
 * own sources are compiled for fuzz_agent_frames: it renames the system
 * calls through which a host request would touch the real file system or
 * real processes, so the fuzzer runs the agent's real code without ever
 * removing, renaming, creating or signalling anything, or renaming the
 * machine or feeding its random pool (H_IDENTITY), on the machine that
 * runs it (the agent normally runs as root inside a sandbox; the fuzzer
 * runs as whoever starts it, often root too).
 *
 * The macros are function-like, so `struct stat` stays a type while
 * `stat(...)` becomes fz_stat(...). fakesys.c implements the fakes: file
 * contents come from memfds, directories from one scratch directory that the
 * target creates and never changes, and every mutation "succeeds" or fails
 * as a hash of its path decides, without doing anything.
 */
#ifndef SPACE_TESTS_FUZZ_FAKESYS_H
#define SPACE_TESTS_FUZZ_FAKESYS_H

#define open(...) fz_open(__VA_ARGS__)
#define stat(...) fz_stat(__VA_ARGS__)
#define lstat(...) fz_lstat(__VA_ARGS__)
#define mkdir(...) fz_mkdir(__VA_ARGS__)
#define chmod(...) fz_chmod(__VA_ARGS__)
#define rmdir(...) fz_rmdir(__VA_ARGS__)
#define unlink(...) fz_unlink(__VA_ARGS__)
#define rename(...) fz_rename(__VA_ARGS__)
#define nftw(...) fz_nftw(__VA_ARGS__)
#define sync(...) fz_sync(__VA_ARGS__)
#define kill(...) fz_kill(__VA_ARGS__)
#define poll(...) fz_poll(__VA_ARGS__)
#define sethostname(...) fz_sethostname(__VA_ARGS__)
#define ioctl(...) fz_ioctl(__VA_ARGS__)

#endif

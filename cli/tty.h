/*
 * cli/tty.h - our own terminal, for `space exec -t` and `space shell`: raw
 * mode while a sandbox's terminal uses it, its size, and its size changes.
 *
 * Raw mode hands every key to the sandbox as typed (Ctrl-C included, which
 * the sandbox's terminal turns into SIGINT for its foreground job) and shows
 * only what the sandbox echoes. The settings it replaced come back with
 * tty_restore, which also runs at exit, so every way out of the CLI but
 * SIGKILL leaves the terminal as it found it.
 */
#ifndef SPACE_CLI_TTY_H
#define SPACE_CLI_TTY_H

#define TTY_DEFAULT_COLS 80
#define TTY_DEFAULT_ROWS 24

/* Puts fd 0, a terminal, into raw mode. Returns 0 or -errno (-ENOTTY when it is not one). */
int tty_raw(void);
/* Puts back the settings tty_raw replaced (nothing when it was not called). Idempotent. */
void tty_restore(void);
/* The size of our terminal (fd 1's, else fd 0's), or TTY_DEFAULT_COLS x TTY_DEFAULT_ROWS. */
void tty_size(int *cols, int *rows);
/* Catches SIGWINCH: returns the read end (O_CLOEXEC, non-blocking) of a pipe that gets a byte
 * at each change of our terminal's size, or -errno. */
int tty_winch_fd(void);

#endif

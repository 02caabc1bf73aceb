/*
 * agent/shim/termios.c - tcsetattr for gVisor's terminals, in libspace-shim.so.
 *
 * gVisor 20221219 answers TCSETSF (tcsetattr with TCSAFLUSH) with ENOTTY, and that is what
 * Python's tty.setraw and getpass, and many prompts, ask for. TCSAFLUSH is "set as TCSADRAIN
 * does, and flush the input", and gVisor has TCSETSW: when TCSETSF is refused, this does that.
 * Only raw system calls, as in statx.c, with the kernel's own struct termios.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#define KERNEL_NCCS 19

struct kernel_termios { /* the kernel's struct termios (TCSETS), not glibc's */
	tcflag_t c_iflag, c_oflag, c_cflag, c_lflag;
	cc_t c_line;
	cc_t c_cc[KERNEL_NCCS];
};

int tcsetattr(int fd, int optional_actions, const struct termios *t)
{
	static const unsigned long cmds[] = { [TCSANOW] = TCSETS, [TCSADRAIN] = TCSETSW, [TCSAFLUSH] = TCSETSF };
	if (optional_actions < TCSANOW || optional_actions > TCSAFLUSH) {
		errno = EINVAL;
		return -1;
	}
	struct kernel_termios k = {
		.c_iflag = t->c_iflag, .c_oflag = t->c_oflag, .c_cflag = t->c_cflag, .c_lflag = t->c_lflag,
		.c_line = t->c_line,
	};
	memcpy(k.c_cc, t->c_cc, KERNEL_NCCS);
	long rc = syscall(SYS_ioctl, fd, cmds[optional_actions], &k);
	if (rc < 0 && errno == ENOTTY && optional_actions == TCSAFLUSH) {
		/* gVisor's terminal, or no terminal at all: TCSETSW tells. The flush is done where the
		 * terminal has it (gVisor's has not: what was typed ahead then stays). */
		int saved = errno;
		long set = syscall(SYS_ioctl, fd, TCSETSW, &k);
		if (set == 0)
			syscall(SYS_ioctl, fd, TCFLSH, TCIFLUSH);
		rc = set;
		if (set < 0)
			errno = saved;
	}
	return (int)rc;
}

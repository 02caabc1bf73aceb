/*
 * agent/main.c - space-agent's entry point and event loop.
 *
 * main() reads as its phases: as a microVM's init (`--vm`), first what an init
 * system would do (vminit.h: /dev, /proc, /sys, the kernel modules); become a
 * proper init (when PID 1: make /work, write /etc/hostname and /etc/hosts,
 * ignore the signals a sandboxed process could send us, make sure fds 0-2
 * exist), route SIGCHLD to a signalfd, pick a boot id, pick the transport
 * (the virtio-serial port in a VM, the host socket otherwise), then run the loop.
 * The loop is single-threaded: each iteration connects if due, fires
 * timeouts, lets transfers send what credit allows, flushes the outgoing
 * queue, and sleeps in poll() until a descriptor or the nearest deadline
 * wakes it. Nothing below main() exits; the loop runs forever.
 */
#include "agent.h"
#include "spawn.h"
#include "connect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dispatch.h"
#include "files.h"
#include "identity.h"
#include "probe.h"
#include "vminit.h"
#include "proto/agent.h"
#include "vport.h"

/* fds 0-2 must exist so that no pipe of ours lands there. */
static int setup_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n < 0)
			return -errno;
		if (n != fd) {
			/* a lower fd was free: the loop fills them in order */
			close(n);
			return -EBADF;
		}
	}
	return 0;
}

/*
 * As PID 1 no signal may end the agent: every signal a process in the
 * sandbox could send and that can be ignored is ignored (gVisor delivers to
 * init whatever it does not ignore, SIGSEGV and real-time signals included).
 * SIGKILL and SIGSTOP cannot be: spaced notices a dead or stopped agent. A
 * fault of the agent's own still ends it: the kernel forces those. SIGPIPE is
 * ignored in every mode: writes report EPIPE instead. SIGCHLD and SIGIO are
 * blocked and read from a signalfd. Commands get every signal back to default (spawn.c).
 */
static int setup_signals(struct agent *a)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPIPE, &sa, NULL) < 0)
		return -errno;
	if (a->pid1) {
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
				sigaction(sig, &sa, NULL); /* the C library's own signals refuse: fine */
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGIO); /* the serial port: a host came back (vport.c) */
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	a->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return a->sigfd < 0 ? -errno : 0;
}

static void on_signal(struct agent *a, void *obj, int fd, short revents)
{
	struct signalfd_siginfo si[16];
	ssize_t r;
	while ((r = read(fd, si, sizeof(si))) > 0)
		for (size_t i = 0; i < (size_t)r / sizeof(si[0]); i++)
			if (si[i].ssi_signo == SIGIO)
				conn_host_back(a);
	proc_reap(a);
}

/* A connection to the loopback relay (connect.h): a process of its own, the connection as
 * its stdin (accepted sockets block); its exit is reaped as an orphan's. */
static void on_relay(struct agent *a, void *obj, int fd, short revents)
{
	(void)obj;
	(void)revents;
	if (fd != a->relay_fd)
		return;
	for (int i = 0; i < RELAY_BACKLOG; i++) {
		int c = accept4(fd, NULL, NULL, 0);
		if (c < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				agent_log("the loopback relay: accept: %s", strerror(errno));
			return;
		}
		pid_t pid = fork();
		if (pid == 0) {
			char *argv[] = { "space-agent", RELAY_ARG, NULL };
			if (dup2(c, 0) == 0)
				execv("/proc/self/exe", argv);
			_exit(127);
		}
		if (pid < 0)
			agent_log("the loopback relay: fork: %s", strerror(errno));
		close(c);
	}
}

static int ms_until(uint64_t deadline, uint64_t now)
{
	if (deadline == UINT64_MAX)
		return -1;
	if (deadline <= now)
		return 0;
	uint64_t d = deadline - now;
	return d > 60000u ? 60000 : (int)d;
}

static void loop_run(struct agent *a)
{
	static struct pollset ps; /* large; one per process, kept off the stack */
	for (;;) {
		uint64_t now = agent_now_ms();
		conn_tick(a, now);
		proc_tick(a, now);
		oom_tick(a, now);
		xfer_pump(a);
		watch_pump(a);
		conn_flush(a);

		ps.n = 0;
		pollset_add(&ps, a->sigfd, POLLIN, on_signal, NULL);
		if (a->relay_fd >= 0)
			pollset_add(&ps, a->relay_fd, POLLIN, on_relay, NULL);
		proc_watch(a, &ps);
		watch_poll(a, &ps);
		conn_watch(a, &ps);

		uint64_t deadline = conn_deadline(a);
		uint64_t pd = proc_deadline(a);
		if (pd < deadline)
			deadline = pd;
		if ((pd = oom_deadline(a)) < deadline)
			deadline = pd;
		int timeout = xfer_busy(a) || watch_busy(a) ? 0 : ms_until(deadline, now);
		int n = poll(ps.fds, ps.n, timeout);
		if (n < 0) {
			if (errno != EINTR)
				agent_log("poll: %s", strerror(errno));
			continue;
		}
		/* order matters: the signalfd (reaping) first, the connection
		 * (which may start processes) last; see struct pollset */
		for (unsigned i = 0; i < ps.n && n > 0; i++) {
			if (!ps.fds[i].revents)
				continue;
			n--;
			ps.fn[i](a, ps.obj[i], ps.fds[i].fd, ps.fds[i].revents);
		}
	}
}

/* Whether the kernel started us as a microVM's init. It hands init, besides what follows
 * "--", every word of its command line that it does not know (nokaslr is one), so the
 * argument is looked for among all of them. */
static bool has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], arg) == 0)
			return true;
	return false;
}

/* A VM's name, from SP_VM_NAME_ARG<name> among init's arguments, or NULL. */
static const char *vm_name_arg(int argc, char **argv)
{
	size_t k = strlen(SP_VM_NAME_ARG);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], SP_VM_NAME_ARG, k) == 0)
			return argv[i] + k;
	return NULL;
}

/* The sandbox's resolver is its gateway (spaced's, docs/network.md): a template's own
 * resolv.conf names the host it was built on, which a sandbox cannot reach. */
static int write_resolv_conf(void)
{
	static const char text[] = "# spaced's resolver, through this sandbox's gateway (space: docs/network.md)\n"
				   "nameserver " SP_NET_GATEWAY "\n";
	int fd = open("/etc/resolv.conf.space", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int rc = write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1) ? 0 : -EIO;
	close(fd);
	if (rc == 0 && rename("/etc/resolv.conf.space", "/etc/resolv.conf") < 0)
		rc = -errno;
	if (rc < 0)
		unlink("/etc/resolv.conf.space");
	return rc;
}

int main(int argc, char **argv)
{
	struct agent a = { .sigfd = -1 };
	int err;

	if (argc == 2 && strcmp(argv[1], "--version") == 0)
		return printf("space-agent %s\n", SPACE_VERSION) < 0;
	if (argc == 2 && strcmp(argv[1], "--pid1-state") == 0)
		return probe_pid1_state();
	if (argc == 3 && strcmp(argv[1], "--identity") == 0)
		return identity_main(argv[2]);
	if (argc == 3 && strcmp(argv[1], CONNECT_ARG) == 0)
		return connect_main(argv[2]);
	if (argc == 2 && strcmp(argv[1], RELAY_ARG) == 0)
		return relay_main();
	if (argc >= 2 && strcmp(argv[1], KEEPER_ARG) == 0)
		return spawn_keeper_main(argc, argv);
	a.relay_fd = -1;

	a.pid1 = getpid() == 1;
	bool vm = a.pid1 && has_arg(argc, argv, SP_VM_INIT_ARG);
	if (vm)
		a.vm_env = vminit_settings;
	const struct conn_transport *transport = &conn_unix;
	const char *where = getenv("SPACE_AGENT_SOCK");
	if (!where || !*where)
		where = SP_AGENT_SOCK;
	if (vm) {
		transport = &vport_transport;
		where = SP_AGENT_PORT;
		vminit_boot(); /* logs what failed; the agent serves what it can */
		if (!vm_name_arg(argc, argv))
			vminit_warm(); /* a guest without a name becomes a template's booted image */
	}

	if ((err = setup_std_fds()) < 0) {
		agent_log("standard fds: %s", strerror(-err));
		return 1;
	}
	if (a.pid1) {
		umask(022);
		if ((err = files_mkdir_p("/work", 0755)) < 0)
			agent_log("mkdir /work: %s", strerror(-err));
		/* the runtime named the kernel after the sandbox; the files follow. A VM's kernel
		 * is named here, from the name the host put on its command line. */
		char name[IDENTITY_NAME_MAX + 2] = "";
		const char *vm_name = vm ? vm_name_arg(argc, argv) : NULL;
		if (vm_name && identity_name_ok(vm_name) && sethostname(vm_name, strlen(vm_name)) < 0)
			agent_log("sethostname %s: %s", vm_name, strerror(errno));
		if ((!vm || vm_name) && gethostname(name, sizeof(name)) == 0 && (err = identity_files("/etc", name)) < 0)
			agent_log("/etc/hosts and /etc/hostname: %s", strerror(-err));
	} else if (!a.pid1) {
		/* outside a sandbox (tests): still adopt orphans like init would */
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	}
	if ((err = setup_signals(&a)) < 0) {
		agent_log("signals: %s", strerror(-err));
		return 1;
	}
	if (getrandom(&a.boot_id, sizeof(a.boot_id), 0) != (ssize_t)sizeof(a.boot_id)) {
		agent_log("getrandom: %s", strerror(errno));
		return 1;
	}
	if (conn_init(&a, transport, where, &dispatch_hooks) < 0) {
		agent_log("out of memory");
		return 1;
	}
	if (a.pid1 && (a.relay_fd = relay_listen()) >= 0 && (err = write_resolv_conf()) < 0)
		agent_log("/etc/resolv.conf: %s", strerror(-err));
	proc_init(&a);
	oom_init(&a);
	xfer_init(&a);
	if (vm)
		a.conn.fast_retries = AGENT_FAST_RETRIES; /* the port appears moments after the modules load */
	agent_log("started (pid %d), host %s %s", (int)getpid(), transport->kind, where);
	loop_run(&a);
	return 0;
}

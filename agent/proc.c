/*
 * agent/proc.c - the table of processes: start (H_EXEC), output under
 * credit, stdin, signals, timeouts, reaping, exit reports and H_PS.
 *
 * Life of a process: proc_exec validates the request, resolves the user and
 * the environment, and spawns (spawn.c); the slot is PROC_RUNNING and the
 * host hears A_STARTED. Its stdout/stderr pipes are polled only while it
 * has credit, so output waits in the pipe otherwise. When the leader is
 * reaped the slot turns PROC_EXITED and is drained: both pipes are read until
 * they are empty (waiting for credit when bytes remain), then A_EXIT is
 * queued behind the last output frame, the pipes are closed, and the process
 * moves to the ring of remembered exits. Any other child (an orphan adopted
 * by PID 1, or a process the agent gave up on) is simply reaped.
 */
#include "agent.h"
#include "oom.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "spawn.h"
#include "../lib/user.h"

#define UID_BY_NAME 0xffffffffu
#define WORKDIR "/work"

extern char **environ;

void proc_init(struct agent *a)
{
	struct proc_table *t = &a->procs;
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		t->slots[i].out[0] = t->slots[i].out[1] = t->slots[i].in = t->slots[i].keeper = -1;
	}
}

static struct proc *proc_find(struct agent *a, uint32_t pid)
{
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		struct proc *p = &a->procs.slots[i];
		if (p->state != PROC_FREE && (uint32_t)p->pid == pid)
			return p;
	}
	return NULL;
}

bool proc_started(struct agent *a, uint32_t pid)
{
	struct proc *p = proc_find(a, pid);
	return p && p->state == PROC_RUNNING;
}

void proc_oom(struct agent *a, uint32_t owner, uint32_t victim, uint64_t rss, uint64_t used, uint64_t limit,
	      const char *cmdline)
{
	struct proc *p = proc_find(a, owner);
	if (!p)
		return;
	if (owner == victim)
		p->oom = true;
	uint8_t fixed[sizeof(struct sp_oom)] = { 0 };
	frame_put_u32(fixed + offsetof(struct sp_oom, victim), victim);
	frame_put_u64(fixed + offsetof(struct sp_oom, rss), rss);
	frame_put_u64(fixed + offsetof(struct sp_oom, used), used);
	frame_put_u64(fixed + offsetof(struct sp_oom, limit), limit);
	if (conn_send(a, SP_A_OOM, owner, fixed, sizeof(fixed), cmdline) < 0)
		agent_log("pid %u: memory report lost (out of memory)", owner);
}

static struct proc *proc_free_slot(struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++)
		if (a->procs.slots[i].state == PROC_FREE)
			return &a->procs.slots[i];
	return NULL;
}

static int send_credit(struct agent *a, uint32_t chan, uint64_t bytes)
{
	uint8_t c[sizeof(struct sp_credit)];
	frame_put_u32(c, (uint32_t)bytes);
	return conn_send(a, SP_A_CREDIT, chan, c, sizeof(c), NULL);
}

/* Asks p's keeper to send sig to its terminal's foreground group. */
static void keeper_send(struct proc *p, int sig)
{
	uint8_t b = (uint8_t)sig;
	if (p->keeper >= 0 && write(p->keeper, &b, 1) != 1)
		agent_log("pid %d: its terminal's keeper missed signal %d: %s", (int)p->pid, sig, strerror(errno));
}

/* ---- starting ---- */

/* argv joined by spaces, cut at AGENT_CMDLINE_MAX - 1 bytes. */
static char *join_cmdline(const char *const *argv, size_t argc)
{
	char *s = malloc(AGENT_CMDLINE_MAX);
	if (!s)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < argc && n < AGENT_CMDLINE_MAX - 1; i++) {
		if (i)
			s[n++] = ' ';
		size_t l = strlen(argv[i]);
		if (l > AGENT_CMDLINE_MAX - 1 - n)
			l = AGENT_CMDLINE_MAX - 1 - n;
		memcpy(s + n, argv[i], l);
		n += l;
	}
	s[n] = '\0';
	return s;
}

/* Everything proc_exec has parsed from the frame (strings point into it). */
struct exec_args {
	uint32_t flags, uid, gid, timeout_ms, argc, envc;
	uint16_t rows, cols; /* SP_EXEC_PTY */
	const char *user, *cwd;
	const char **argv; /* argc + NULL */
	const char **env;  /* envc */
};

/* Returns 0, -EPROTO for a frame that must close the connection, or -EINVAL. */
static int exec_parse(const struct frame *f, struct exec_args *x)
{
	const uint8_t *p = f->payload;
	x->flags = frame_get_u32(p + offsetof(struct sp_exec, flags));
	x->uid = frame_get_u32(p + offsetof(struct sp_exec, uid));
	x->gid = frame_get_u32(p + offsetof(struct sp_exec, gid));
	x->timeout_ms = frame_get_u32(p + offsetof(struct sp_exec, timeout_ms));
	x->argc = frame_get_u32(p + offsetof(struct sp_exec, argc));
	x->envc = frame_get_u32(p + offsetof(struct sp_exec, envc));
	/* an unterminated last string is a broken frame, not a bad request */
	if (f->len > sizeof(struct sp_exec) && p[f->len - 1] != '\0')
		return -EPROTO;
	if (x->argc < 1 || x->argc > SP_MAX_ARGS || x->envc > SP_MAX_ARGS - x->argc)
		return -EINVAL;
	size_t off = sizeof(struct sp_exec);
	if (x->flags & SP_EXEC_PTY) {
		if (f->len < off + sizeof(struct sp_winsize))
			return -EPROTO;
		x->rows = frame_get_u16(p + off + offsetof(struct sp_winsize, rows));
		x->cols = frame_get_u16(p + off + offsetof(struct sp_winsize, cols));
		off += sizeof(struct sp_winsize);
		if (!x->rows || !x->cols || x->rows > SP_PTY_MAX || x->cols > SP_PTY_MAX)
			return -EINVAL;
	}
	x->user = frame_str(f, &off);
	x->cwd = frame_str(f, &off);
	x->argv = calloc(x->argc + 1, sizeof(*x->argv));
	x->env = calloc(x->envc + 1, sizeof(*x->env));
	if (!x->argv || !x->env)
		return -ENOMEM;
	if (!x->user || !x->cwd)
		return -EINVAL;
	for (uint32_t i = 0; i < x->argc; i++)
		if (!(x->argv[i] = frame_str(f, &off)))
			return -EINVAL;
	for (uint32_t i = 0; i < x->envc; i++)
		if (!(x->env[i] = frame_str(f, &off)))
			return -EINVAL;
	return 0;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where a process starts: cwd as asked when absolute; else, for a user named (other than root),
 * in its home as login does when it has one (nobody's is /nonexistent), else in WORKDIR, with a
 * relative cwd taken from there; NULL when that does not fit in n bytes. */
static const char *exec_cwd(const struct exec_args *x, const struct user_info *ui, char *buf, size_t n)
{
	if (x->cwd[0] == '/')
		return x->cwd;
	const char *base = x->uid == UID_BY_NAME && is_dir(ui->home) ? ui->home : WORKDIR;
	if (!*x->cwd)
		return base;
	bool slash = base[strlen(base) - 1] == '/';
	return snprintf(buf, n, "%s%s%s", base, slash ? "" : "/", x->cwd) < (int)n ? buf : NULL;
}

/* Starts the process; on failure answers A_ERROR itself. */
static int exec_start(struct agent *a, uint32_t tag, const struct exec_args *x)
{
	struct user_info ui;
	char **envp = NULL, *strings = NULL, *cmdline = NULL;
	char msg[512], cwdbuf[PATH_MAX];
	int err;

	struct proc *p = proc_free_slot(a);
	if (!p)
		return conn_send_error(a, tag, EAGAIN, "too many processes (%u running)",
				       AGENT_MAX_PROCS);
	if (x->uid == UID_BY_NAME) {
		err = *x->user ? user_by_name(x->user, &ui) : -EINVAL;
		if (err < 0)
			return conn_send_error(a, tag, -err, "user %s: %s", x->user,
					       err == -ENOENT ? "no such user" : strerror(-err));
	} else {
		user_by_id(x->uid, x->gid, &ui);
	}
	const char *cwd = exec_cwd(x, &ui, cwdbuf, sizeof(cwdbuf));
	if (!cwd)
		return conn_send_error(a, tag, ENAMETOOLONG, "cwd %s: %s", x->cwd, strerror(ENAMETOOLONG));
	err = spawn_env(environ, x->env, x->envc, ui.home, &envp, &strings);
	cmdline = join_cmdline(x->argv, x->argc);
	if (err < 0 || !cmdline) {
		err = conn_send_error(a, tag, ENOMEM, "out of memory");
		goto out;
	}
	struct spawn_req req = {
		/* the agent's own program: its file under gVisor, the initramfs's init in a VM */
		.path = x->flags & SP_EXEC_AGENT ? "/proc/self/exe" : NULL,
		.argv = (char *const *)x->argv,
		.argc = x->argc,
		.envp = envp,
		.cwd = cwd,
		.user = &ui,
		.want_stdin = x->flags & SP_EXEC_STDIN,
		.pty = x->flags & SP_EXEC_PTY,
		.rows = x->rows,
		.cols = x->cols,
		.keeper = !a->vm_env, /* gVisor's terminal raises no signals itself */
	};
	struct spawn_out so;
	err = spawn_start(&req, &so, msg, sizeof(msg));
	if (err < 0) {
		err = conn_send_error(a, tag, -err, "%s", msg);
		goto out;
	}
	*p = (struct proc){
		.state = PROC_RUNNING,
		.pid = so.pid,
		.out = { so.out, so.err },
		.in = so.in,
		.pty = req.pty,
		.keeper = so.keeper,
		.credit = SP_WINDOW,
		.deadline = x->timeout_ms ? agent_now_ms() + x->timeout_ms : 0,
		.started_ms = agent_wall_ms(),
		.cmdline = cmdline,
	};
	cmdline = NULL;
	uint8_t started[sizeof(struct sp_started)];
	frame_put_u32(started, (uint32_t)so.pid);
	err = conn_send(a, SP_A_STARTED, tag, started, sizeof(started), NULL);
out:
	free(cmdline);
	spawn_env_free(envp, strings);
	return err;
}

int proc_exec(struct agent *a, const struct frame *f)
{
	struct exec_args x = { 0 };
	int err = exec_parse(f, &x);
	if (err == -EINVAL)
		err = conn_send_error(a, f->chan, EINVAL,
				      "exec: need argc >= 1, argc + envc <= %u, every string and a terminal of "
				      "1..%u rows and columns", SP_MAX_ARGS, SP_PTY_MAX);
	else if (err == -ENOMEM)
		err = conn_send_error(a, f->chan, ENOMEM, "exec: out of memory");
	else if (err == 0)
		err = exec_start(a, f->chan, &x);
	free(x.argv);
	free(x.env);
	return err;
}

/* ---- output and exit ---- */

/*
 * Reads one chunk of out[idx] as an output frame, within credit.
 * Returns 1 when bytes were queued, 0 when the pipe is empty for now (or
 * memory is short), -1 when it reached EOF or failed (it is then closed).
 */
static int read_output(struct agent *a, struct proc *p, int idx)
{
	size_t want = p->credit < SP_MAX_PAYLOAD ? (size_t)p->credit : SP_MAX_PAYLOAD;
	struct outframe *o = conn_frame_alloc(want);
	if (!o)
		return 0;
	ssize_t n = read(p->out[idx], conn_frame_payload(o), want);
	if (n > 0) {
		conn_frame_queue(a, o, idx ? SP_A_STDERR : SP_A_STDOUT, (uint32_t)p->pid,
				 (size_t)n, p);
		p->credit -= (uint64_t)n;
		return 1;
	}
	free(o);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	close(p->out[idx]);
	p->out[idx] = -1;
	return -1;
}

static void stdin_close(struct proc *p)
{
	if (p->in >= 0)
		close(p->in);
	p->in = -1;
	p->in_close = false;
	while (p->in_head) {
		struct stdin_chunk *c = p->in_head;
		p->in_head = c->next;
		free(c);
	}
	p->in_tail = NULL;
}

static void remember_exit(struct agent *a, struct proc *p)
{
	struct proc_table *t = &a->procs;
	struct proc_exited *e = &t->exited[t->exited_next];
	free(e->cmdline);
	*e = (struct proc_exited){
		.pid = p->pid,
		.code = p->code,
		.signo = p->signo,
		.started_ms = p->started_ms,
		.cmdline = p->cmdline,
	};
	p->cmdline = NULL;
	t->exited_next = (t->exited_next + 1) % SP_EXITED_KEEP;
	if (t->exited_count < SP_EXITED_KEEP)
		t->exited_count++;
}

/* Both pipes are done: report the exit and free the slot. */
static void proc_finish(struct agent *a, struct proc *p)
{
	uint8_t ex[sizeof(struct sp_exit)];
	frame_put_u32(ex + offsetof(struct sp_exit, code), (uint32_t)p->code);
	frame_put_u32(ex + offsetof(struct sp_exit, signo), (uint32_t)p->signo);
	frame_put_u32(ex + offsetof(struct sp_exit, flags),
		      (p->timedout ? SP_EXIT_TIMEDOUT : 0) | (p->oom ? SP_EXIT_OOM : 0));
	frame_put_u32(ex + offsetof(struct sp_exit, rsvd), 0);
	if (conn_send(a, SP_A_EXIT, (uint32_t)p->pid, ex, sizeof(ex), NULL) < 0)
		agent_log("pid %d: exit report lost (out of memory)", (int)p->pid);
	stdin_close(p);
	if (p->keeper >= 0)
		close(p->keeper);
	conn_disown(a, p);
	remember_exit(a, p);
	*p = (struct proc){ .state = PROC_FREE, .out = { -1, -1 }, .in = -1, .keeper = -1 };
}

/* Has the pipe bytes waiting? (EOF and "no writer yet" both say no.) */
static bool pipe_has_data(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* An exited process: read what its pipes still hold, then finish. */
static void proc_drain(struct agent *a, struct proc *p)
{
	for (int idx = 0; idx < 2; idx++) {
		while (p->out[idx] >= 0) {
			if (p->credit == 0) {
				if (pipe_has_data(p->out[idx]))
					return; /* wait for H_CREDIT */
				close(p->out[idx]);
				p->out[idx] = -1;
				break;
			}
			int r = read_output(a, p, idx);
			if (r == 0 && p->out[idx] >= 0 && !pipe_has_data(p->out[idx])) {
				close(p->out[idx]);
				p->out[idx] = -1;
			} else if (r == 0) {
				return; /* out of memory: try again on the next credit */
			}
		}
	}
	proc_finish(a, p);
}

void proc_reap(struct agent *a)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0)
			break;
		struct proc *p = proc_find(a, (uint32_t)pid);
		if (!p || p->state != PROC_RUNNING)
			continue; /* an orphan: reaping is all it needed */
		p->state = PROC_EXITED;
		p->deadline = 0;
		if (WIFSIGNALED(st)) {
			p->signo = WTERMSIG(st);
			p->code = 128 + p->signo;
			/* the kernel's own OOM killer (a microVM's) reports as the watcher does */
			if (p->signo == SIGKILL && !p->oom && oom_kernel_killed(a))
				proc_oom(a, (uint32_t)pid, (uint32_t)pid, 0, 0, oom_sandbox_memory(), p->cmdline);
		} else {
			p->code = WEXITSTATUS(st);
		}
		proc_drain(a, p);
	}
}

void proc_credit(struct agent *a, uint32_t pid, uint32_t bytes)
{
	struct proc *p = proc_find(a, pid);
	if (!p)
		return;
	p->credit += bytes;
	if (p->credit > AGENT_CREDIT_MAX)
		p->credit = AGENT_CREDIT_MAX;
	if (p->state == PROC_EXITED)
		proc_drain(a, p);
}

void proc_on_connect(struct agent *a)
{
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		struct proc *p = &a->procs.slots[i];
		if (p->state == PROC_FREE)
			continue;
		p->credit = p->queued < SP_WINDOW ? SP_WINDOW - p->queued : 0;
		p->in_unacked = 0;
		if (p->state == PROC_EXITED)
			proc_drain(a, p);
	}
}

/* ---- stdin ---- */

/* Writes queued stdin without blocking; returns credit for bytes of this
 * connection that reached the pipe (or were discarded because it broke). */
static void stdin_flush(struct agent *a, struct proc *p)
{
	/* credit is owed only to the connection the bytes came on (generations
	 * start at 1; 0 matches nothing while disconnected) */
	uint64_t gen = conn_up(a) ? a->conn.generation : 0, acked = 0;
	while (p->in_head && p->in >= 0) {
		struct stdin_chunk *c = p->in_head;
		ssize_t w = write(p->in, c->data + c->off, c->len - c->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w < 0) { /* EPIPE: the process closed its stdin */
			for (struct stdin_chunk *d = c; d; d = d->next)
				if (d->generation == gen)
					acked += d->len - d->off;
			stdin_close(p);
			break;
		}
		c->off += (size_t)w;
		if (c->generation == gen)
			acked += (uint64_t)w;
		if (c->off == c->len) {
			p->in_head = c->next;
			if (!p->in_head)
				p->in_tail = NULL;
			free(c);
		}
	}
	if (!p->in_head && p->in_close)
		stdin_close(p);
	if (acked) {
		p->in_unacked -= acked < p->in_unacked ? acked : p->in_unacked;
		send_credit(a, (uint32_t)p->pid, acked);
	}
}

/* Queues len bytes for p's stdin; counted against the host's credit when they came from it. */
static int stdin_queue(struct agent *a, struct proc *p, const uint8_t *data, size_t len, bool from_host)
{
	struct stdin_chunk *c = malloc(sizeof(*c) + len);
	if (!c)
		return -ENOMEM;
	/* a generation no connection has: nothing is credited for the agent's own bytes */
	*c = (struct stdin_chunk){ .generation = from_host ? a->conn.generation : UINT64_MAX, .len = len };
	memcpy(c->data, data, len);
	if (p->in_tail)
		p->in_tail->next = c;
	else
		p->in_head = c;
	p->in_tail = c;
	if (from_host)
		p->in_unacked += len;
	stdin_flush(a, p);
	return 0;
}

/*
 * What is typed at a terminal gVisor keeps: its signal keys (VINTR, VQUIT, VSUSP, while ISIG is
 * on, as the program set them) become the keeper's signals, as a terminal would make them, and
 * are taken out; the rest is queued. The keys taken out are credited back at once.
 */
static int keys_typed(struct agent *a, struct proc *p, const uint8_t *data, size_t len)
{
	struct termios t;
	if (tcgetattr(p->in, &t) < 0 || !(t.c_lflag & ISIG))
		return stdin_queue(a, p, data, len, true);
	static const struct { int cc, sig; } keys[] = { { VINTR, SIGINT }, { VQUIT, SIGQUIT }, { VSUSP, SIGTSTP } };
	size_t from = 0, taken = 0;
	for (size_t i = 0; i <= len; i++) {
		int sig = 0;
		for (size_t k = 0; i < len && k < sizeof(keys) / sizeof(keys[0]); k++)
			if (t.c_cc[keys[k].cc] != _POSIX_VDISABLE && data[i] == t.c_cc[keys[k].cc])
				sig = keys[k].sig;
		if (!sig && i < len)
			continue;
		if (i > from && stdin_queue(a, p, data + from, i - from, true) < 0)
			return -ENOMEM;
		if (sig) {
			keeper_send(p, sig);
			taken++;
		}
		from = i + 1;
	}
	return taken ? send_credit(a, (uint32_t)p->pid, taken) : 0;
}

int proc_stdin(struct agent *a, const struct frame *f)
{
	struct proc *p = proc_find(a, f->chan);
	if (!p)
		return 0; /* gone: nothing to deliver to */
	if (f->len > SP_WINDOW - p->in_unacked)
		return -EPROTO; /* more than the host's credit */
	if (f->len == 0 && p->pty) { /* a terminal's input ends as a person ends it: its EOF character */
		struct termios t;
		uint8_t eof = tcgetattr(p->in, &t) == 0 && t.c_cc[VEOF] ? t.c_cc[VEOF] : 4;
		return stdin_queue(a, p, &eof, 1, false);
	}
	if (f->len == 0) {
		p->in_close = true;
		stdin_flush(a, p);
		return 0;
	}
	if (p->in < 0) /* no stdin pipe (any more): the bytes are consumed as lost */
		return send_credit(a, f->chan, f->len);
	if (p->keeper >= 0)
		return keys_typed(a, p, f->payload, f->len);
	return stdin_queue(a, p, f->payload, f->len, true);
}

/*
 * Sends sig to every process group of the session sid: what a signal to a terminal's process
 * means, since an interactive shell moves itself and each of its jobs into groups of their own.
 */
static void signal_session(pid_t sid, int sig)
{
	DIR *d = opendir("/proc");
	pid_t sent[16];
	unsigned nsent = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[64], buf[512];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		const char *rest = strrchr(buf, ')'); /* after the command's name, which may hold anything */
		int pgrp, session;
		if (!rest || sscanf(rest, ") %*c %*d %d %d", &pgrp, &session) != 2 || session != sid)
			continue;
		bool dup = false;
		for (unsigned i = 0; i < nsent; i++)
			dup |= sent[i] == pgrp;
		if (!dup && kill(-pgrp, sig) == 0 && nsent < sizeof(sent) / sizeof(sent[0]))
			sent[nsent++] = pgrp;
	}
	if (d)
		closedir(d);
	kill(-sid, sig); /* the leader's own group, whatever the listing showed */
}

/* Signals p: its process group, or for a terminal every group of its session. */
static void proc_kill(struct proc *p, int sig)
{
	if (p->pty)
		signal_session(p->pid, sig);
	else
		kill(-p->pid, sig);
}

int proc_resize(struct agent *a, const struct frame *f)
{
	struct proc *p = proc_find(a, f->chan);
	struct winsize ws = {
		.ws_row = frame_get_u16(f->payload + offsetof(struct sp_winsize, rows)),
		.ws_col = frame_get_u16(f->payload + offsetof(struct sp_winsize, cols)),
	};
	/* the kernel signals the terminal's foreground process group (SIGWINCH) */
	if (!p || !p->pty || p->in < 0 || !ws.ws_row || !ws.ws_col || ws.ws_row > SP_PTY_MAX ||
	    ws.ws_col > SP_PTY_MAX)
		return 0;
	(void)a;
	if (ioctl(p->in, TIOCSWINSZ, &ws) < 0)
		agent_log("pid %d: resize: %s", (int)p->pid, strerror(errno));
	else /* a VM's kernel signals the foreground group itself; gVisor's keeper does it there */
		keeper_send(p, SIGWINCH);
	return 0;
}

/* ---- signals, timeouts, polling, listing ---- */

int proc_signal(struct agent *a, const struct frame *f)
{
	uint32_t signo = frame_get_u32(f->payload);
	struct proc *p = proc_find(a, f->chan);
	if (p && p->state == PROC_RUNNING && signo >= 1 && signo <= 64)
		proc_kill(p, (int)signo);
	return 0;
}

void proc_tick(struct agent *a, uint64_t now)
{
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		struct proc *p = &a->procs.slots[i];
		if (p->state != PROC_RUNNING || !p->deadline || now < p->deadline)
			continue;
		proc_kill(p, SIGKILL);
		p->timedout = true;
		p->deadline = 0;
	}
}

uint64_t proc_deadline(const struct agent *a)
{
	uint64_t d = UINT64_MAX;
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		const struct proc *p = &a->procs.slots[i];
		if (p->state == PROC_RUNNING && p->deadline && p->deadline < d)
			d = p->deadline;
	}
	return d;
}

static void on_pipe(struct agent *a, void *obj, int fd, short revents)
{
	struct proc *p = obj;
	if (p->state != PROC_RUNNING)
		return; /* reaped in this iteration: drained already */
	for (int idx = 0; idx < 2; idx++)
		if (p->out[idx] == fd && p->credit)
			read_output(a, p, idx);
	if (p->in == fd)
		stdin_flush(a, p);
}

void proc_watch(struct agent *a, struct pollset *ps)
{
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		struct proc *p = &a->procs.slots[i];
		if (p->state != PROC_RUNNING)
			continue;
		for (int idx = 0; idx < 2; idx++)
			if (p->out[idx] >= 0 && p->credit)
				pollset_add(ps, p->out[idx], POLLIN, on_pipe, p);
		if (p->in >= 0 && p->in_head)
			pollset_add(ps, p->in, POLLOUT, on_pipe, p);
	}
}

static void send_proc(struct agent *a, uint32_t tag, uint32_t pid, uint32_t state, int code,
		      int signo, uint64_t started_ms, const char *cmdline)
{
	uint8_t b[sizeof(struct sp_proc)];
	frame_put_u32(b + offsetof(struct sp_proc, pid), pid);
	frame_put_u32(b + offsetof(struct sp_proc, state), state);
	frame_put_u32(b + offsetof(struct sp_proc, code), (uint32_t)code);
	frame_put_u32(b + offsetof(struct sp_proc, signo), (uint32_t)signo);
	frame_put_u64(b + offsetof(struct sp_proc, started_ms), started_ms);
	conn_send(a, SP_A_PROC, tag, b, sizeof(b), cmdline ? cmdline : "");
}

int proc_ps(struct agent *a, const struct frame *f)
{
	struct proc_table *t = &a->procs;
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++) {
		const struct proc *p = &t->slots[i];
		/* an exited leader whose output is still draining has not
		 * reported A_EXIT yet: it is running as far as the host knows */
		if (p->state != PROC_FREE)
			send_proc(a, f->chan, (uint32_t)p->pid, SP_PROC_RUNNING, 0, 0,
				  p->started_ms, p->cmdline);
	}
	unsigned first = (t->exited_next + SP_EXITED_KEEP - t->exited_count) % SP_EXITED_KEEP;
	for (unsigned k = 0; k < t->exited_count; k++) {
		const struct proc_exited *e = &t->exited[(first + k) % SP_EXITED_KEEP];
		send_proc(a, f->chan, (uint32_t)e->pid, SP_PROC_EXITED, e->code, e->signo,
			  e->started_ms, e->cmdline);
	}
	return conn_send(a, SP_A_END, f->chan, NULL, 0, NULL);
}

uint32_t proc_max_pid(const struct agent *a)
{
	uint32_t m = 0;
	for (unsigned i = 0; i < AGENT_MAX_PROCS; i++)
		if (a->procs.slots[i].state != PROC_FREE && (uint32_t)a->procs.slots[i].pid > m)
			m = (uint32_t)a->procs.slots[i].pid;
	for (unsigned k = 0; k < a->procs.exited_count; k++)
		if ((uint32_t)a->procs.exited[k].pid > m)
			m = (uint32_t)a->procs.exited[k].pid;
	return m;
}

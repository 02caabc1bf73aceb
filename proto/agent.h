/*
 * proto/agent.h - the wire format between spaced and space-agent, version 3.
 *
 * One byte stream (a Unix socket for the gvisor driver, vsock for the vm
 * driver) carries frames in both directions. Every frame is a fixed 12-byte
 * header followed by `len` payload bytes:
 *
 *     u32 len    payload length, at most SP_MAX_PAYLOAD
 *     u8  type   one of enum sp_msg
 *     u8  flags  zero unless a message says otherwise
 *     u16 rsvd   zero
 *     u32 chan   which process (its pid inside the sandbox) or which request
 *
 * All integers are little-endian. Payload layouts are given next to each
 * message; fixed parts are the packed structs below, strings follow them
 * and are NUL-terminated. A receiver checks `len` against the message's
 * fixed size and every string against the end of the payload before it
 * reads anything; a frame that fails the check closes the connection.
 *
 * Channels: a running process is addressed by its pid inside the sandbox.
 * Requests (exec start, file operations, ping, ps) are addressed by a tag the
 * host picks with SP_CHAN_REQ set, so tags never collide with pids.
 *
 * Flow control: output travels only against credit. The agent may have at
 * most the credit the host granted outstanding for a channel (initially
 * SP_WINDOW for every process and every file read); the host returns credit
 * with H_CREDIT as it hands bytes on. Data the host sends (stdin, file
 * uploads) is bounded the same way by A_CREDIT, initially SP_WINDOW.
 * A process whose output is not being taken blocks on its pipe; nothing is
 * dropped.
 *
 * Changing any layout here requires bumping SP_PROTO_VERSION, except for fields appended after
 * a payload's end that an older peer never reads and a newer one takes only when present
 * (struct sp_hello_ext, struct sp_stat_ext, the user of file requests).
 */
#ifndef SPACE_PROTO_AGENT_H
#define SPACE_PROTO_AGENT_H

#include <stdint.h>

#define SP_PROTO_VERSION 3u
/* The oldest agent a host still speaks with: a sandbox suspended, or a snapshot taken, under an
 * earlier release resumes with the agent it had. Version 2 added terminals (SP_EXEC_PTY,
 * H_RESIZE), version 3 watching folders (H_WATCH, A_EVENT); a host never sends them to an
 * older agent. */
#define SP_PROTO_MIN_VERSION 1u
#define SP_HDR_SIZE 12u
#define SP_MAX_PAYLOAD (64u * 1024u)  /* largest payload of any frame */
#define SP_WINDOW (256u * 1024u)      /* initial credit per channel */
#define SP_CHAN_REQ 0x80000000u       /* set in every request tag */
#define SP_MAX_ARGS 4096u             /* argv + env entries in one exec */
#define SP_EXITED_KEEP 128u           /* exited processes the agent remembers */

/* Where the agent finds things inside the sandbox. */
#define SP_AGENT_SOCK "/.space/sock/agent.sock"
#define SP_AGENT_RETRY_MS 200u /* reconnect period when the host is away */

/* A microVM: the agent is /init of an initramfs spaced builds (daemon/driver/vm_guest.c),
 * started with SP_VM_INIT_ARG (the kernel command line ends with "-- --vm"), loads the
 * modules named in SP_VM_MODULE_ORDER (one a line, in load order) from
 * SP_VM_MODULE_DIR/<name>.ko, and reaches the host over the virtio-serial port named
 * SP_AGENT_PORT instead of a socket. */
#define SP_VM_INIT_ARG "--vm"
/* ... and SP_VM_NAME_ARG<name> after it: the sandbox's name, for its host name and /etc files */
#define SP_VM_NAME_ARG "--name="
/* The agent's environment in a microVM (what runsc gives it under gVisor): "K=V" strings, each
 * ended by a NUL, in QEMU's fw_cfg file of this name (read through the device's ports). */
#define SP_VM_ENV_NAME "opt/space/env"
#define SP_VM_MODULE_DIR "/.space/modules"
#define SP_VM_MODULE_ORDER "/.space/modules/order"
#define SP_AGENT_PORT "space.agent"
/* Its root file system, when the VM has these virtio-blk disks (found by their serial): the
 * template's read-only erofs image under an overlay whose upper/ and work/ are on the
 * sandbox's own ext4 disk, the same layout as the gVisor driver's layer. */
#define SP_VM_TEMPLATE_SERIAL "space-template"
#define SP_VM_DISK_SERIAL "space-disk"

enum sp_msg {
	/* host -> agent */
	SP_H_PING = 1,        /* chan=tag, no payload -> A_PONG */
	SP_H_EXEC = 2,        /* chan=tag, struct sp_exec + strings -> A_STARTED|A_ERROR */
	SP_H_STDIN = 3,       /* chan=pid, bytes; len 0 closes stdin */
	SP_H_SIGNAL = 4,      /* chan=pid, struct sp_signal (to the process group) */
	SP_H_CREDIT = 5,      /* chan=pid or tag, struct sp_credit */
	SP_H_PS = 6,          /* chan=tag -> A_PROC* then A_END */
	SP_H_FREAD = 7,       /* chan=tag, path -> A_STAT, A_DATA*, A_END | A_ERROR */
	SP_H_FWRITE = 8,      /* chan=tag, struct sp_fwrite + path -> A_OK, then H_DATA*, H_END -> A_END|A_ERROR */
	SP_H_DATA = 9,        /* chan=tag, bytes of an upload */
	SP_H_END = 10,        /* chan=tag, no payload: upload complete */
	SP_H_STAT = 11,       /* chan=tag, path -> A_STAT | A_ERROR */
	SP_H_LIST = 12,       /* chan=tag, path -> A_STAT (one per entry, name set) then A_END | A_ERROR */
	SP_H_MKDIR = 13,      /* chan=tag, struct sp_mode + path (parents made) -> A_OK | A_ERROR */
	SP_H_REMOVE = 14,     /* chan=tag, path (recursive) -> A_OK | A_ERROR */
	SP_H_RENAME = 15,     /* chan=tag, from \0 to \0 -> A_OK | A_ERROR */
	SP_H_SYNC = 16,       /* chan=tag -> A_OK once sync(2) returned */
	SP_H_DETACH = 17,     /* chan=0, no payload: send what is queued, close the connection,
	                         then retry connecting every SP_AGENT_RETRY_MS as after any drop */
	SP_H_ABORT = 18,      /* chan=tag: the host gave up on a request (upload, read or watch) */
	SP_H_OPEN = 19,       /* chan=0, struct sp_open: a connection starts here (the host's first
	                         frame on a transport without connections of its own, the
	                         virtio-serial port) -> A_OPEN with the same nonce, then A_HELLO */
	SP_H_IDENTITY = 20,   /* chan=tag, struct sp_identity + name: the sandbox was restored from
	                         another one's image (a fork, a template's booted image): take this
	                         host name (and /etc files), a new machine id, mix the seed into
	                         the kernel's random pool and reseed it; in a VM, take the
	                         environment again from QEMU's fw_cfg -> A_OK | A_ERROR */
	SP_H_PORTS = 21,      /* chan=tag, no payload: the TCP ports listening inside -> A_PORT*
	                         (at most SP_PORTS_MAX, no two alike) then A_END | A_ERROR */
	SP_H_ENV = 22,        /* chan=tag, "NAME=VALUE\0" strings: into the agent's environment,
	                         which every process it starts afterwards inherits (a sandbox of the
	                         warm pool given its create's env) -> A_OK | A_ERROR, all or none */
	SP_H_RESIZE = 23,     /* chan=pid, struct sp_winsize: the new size of a process's terminal
	                         (SP_EXEC_PTY), whose foreground process group gets SIGWINCH; no
	                         answer, like H_SIGNAL (version 2) */
	SP_H_WATCH = 24,      /* chan=tag, struct sp_watch + path: watch a folder -> A_OK once
	                         watching, then A_EVENT* (against the tag's credit) until H_ABORT,
	                         or A_END (the folder went) | A_ERROR (a limit) (version 3) */
	SP_H_CLOCK = 25,      /* chan=tag, struct sp_clock: the host's wall clock; a VM's agent sets
	                         the guest's to it -> A_OK | A_ERROR (SP_FEATURE_CLOCK) */

	/* agent -> host */
	SP_A_HELLO = 64,      /* chan=0, struct sp_hello; first frame on every connection */
	SP_A_PONG = 65,       /* chan=tag */
	SP_A_STARTED = 66,    /* chan=tag, struct sp_started */
	SP_A_STDOUT = 67,     /* chan=pid, bytes */
	SP_A_STDERR = 68,     /* chan=pid, bytes */
	SP_A_EXIT = 69,       /* chan=pid, struct sp_exit; after all output of the process */
	SP_A_ERROR = 70,      /* chan=tag, struct sp_error + message */
	SP_A_OK = 71,         /* chan=tag, no payload */
	SP_A_CREDIT = 72,     /* chan=pid or tag, struct sp_credit */
	SP_A_PROC = 73,       /* chan=tag, struct sp_proc + cmdline (args joined by spaces) */
	SP_A_STAT = 74,       /* chan=tag, struct sp_stat + name */
	SP_A_DATA = 75,       /* chan=tag, bytes of a download */
	SP_A_END = 76,        /* chan=tag, no payload: listing or download complete */
	SP_A_OOM = 77,        /* chan=pid of the started process whose session or descendants held
	                         the victim, struct sp_oom + the victim's cmdline: the sandbox's
	                         memory reached its limit and the agent killed its largest process */
	SP_A_OPEN = 78,       /* chan=0, struct sp_open: the answer to H_OPEN; what the agent sent
	                         before it belongs to an earlier connection */
	SP_A_PORT = 79,       /* chan=tag, struct sp_port: one listening socket */
	SP_A_EVENT = 80,      /* chan=tag, struct sp_event + name: a change in a watched folder,
	                         counted against the tag's window like A_DATA (version 3) */
};

/* SP_H_EXEC flags */
#define SP_EXEC_STDIN 0x1u   /* keep stdin open as a pipe (else /dev/null) */
#define SP_EXEC_AGENT 0x2u   /* argv is for the agent's own program (/proc/self/exe), not a
                                command to look up: `space-agent --connect PORT` relays its
                                stdin and stdout to a TCP connection made inside the sandbox */
#define SP_EXEC_PTY 0x4u     /* (version 2) the process gets a terminal of its own as its
                                controlling terminal and stdin, stdout and stderr: a struct
                                sp_winsize follows struct sp_exec, before the strings; its output
                                comes as A_STDOUT only, H_STDIN is what is typed (always open), and
                                an H_STDIN of length 0 types the terminal's end-of-file character */

struct sp_exec {
	uint32_t flags;
	uint32_t uid;        /* 0xffffffff: look up `user` string */
	uint32_t gid;
	uint32_t timeout_ms; /* 0: none; on expiry the process group gets SIGKILL */
	uint32_t argc;       /* >= 1 */
	uint32_t envc;
	/* then: user \0 cwd \0 argv[0] \0 ... argv[argc-1] \0 env[0] \0 ... env[envc-1] \0
	 * user is a name looked up in /etc/passwd when uid is 0xffffffff, else "";
	 * cwd "" means /work. env entries are KEY=VALUE and extend the defaults. */
} __attribute__((packed));

struct sp_winsize {
	uint16_t rows;       /* 1..SP_PTY_MAX */
	uint16_t cols;       /* 1..SP_PTY_MAX */
} __attribute__((packed));

#define SP_PTY_MAX 4096u /* rows or columns of a terminal */

struct sp_signal {
	uint32_t signo;
} __attribute__((packed));

struct sp_credit {
	uint32_t bytes;
} __attribute__((packed));

struct sp_hello {
	uint32_t version;  /* SP_PROTO_VERSION */
	uint32_t max_pid;  /* highest pid the agent tracks, for the host's bookkeeping */
	uint64_t boot_id;  /* random per agent start; changes only if the sandbox restarted */
} __attribute__((packed));

/* Appended to struct sp_hello by an agent that has any of SP_FEATURE_* (added within version 2;
 * a hello of only sizeof(struct sp_hello) bytes means none). A host uses a feature only when the
 * agent named it. */
struct sp_hello_ext {
	uint32_t features; /* SP_FEATURE_* */
	uint32_t rsvd;     /* zero */
} __attribute__((packed));

/* File requests (H_FREAD, H_FWRITE, H_STAT, H_LIST, H_MKDIR, H_REMOVE, H_RENAME) take one more
 * string after their own: the user they are done as, "" for the agent itself (root). A name of
 * the sandbox's /etc/passwd, "UID" (which must have an entry there) or "UID:GID". The agent
 * takes that user's uid, gid and groups as its effective ids for the request, so access is
 * checked as the user would meet it and what it creates is the user's; with a user, a relative
 * path is taken from the user's home. Answers that name the path (A_STAT, and the A_OK of
 * H_FWRITE and H_MKDIR) carry it absolute. */
#define SP_FEATURE_FILE_USER 0x1u

/* The agent takes H_CLOCK: it sets its machine's wall clock (a microVM's agent only; gVisor's
 * clock is the host's). A guest's clock stands still while QEMU is stopped, so a VM restored
 * from an image (a template's booted image, a suspend, a snapshot) or continued after a pause
 * would otherwise run behind by the time it did not run. */
#define SP_FEATURE_CLOCK 0x2u

struct sp_clock {
	int64_t sec;       /* CLOCK_REALTIME of the host when it sent the frame */
	uint32_t nsec;
	uint32_t rsvd;     /* zero */
} __attribute__((packed));

struct sp_open {
	uint64_t nonce;    /* random, chosen by the host for each connection */
} __attribute__((packed));

struct sp_identity {
	uint8_t seed[32];  /* fresh randomness from the host: a fork must not repeat its parent's */
} __attribute__((packed));

struct sp_started {
	uint32_t pid;
} __attribute__((packed));

#define SP_EXIT_TIMEDOUT 0x1u
#define SP_EXIT_OOM 0x2u      /* killed because the sandbox's memory reached its limit */

struct sp_exit {
	int32_t code;      /* exit status, or 128 + signal if killed */
	int32_t signo;     /* signal that killed it, 0 if it exited */
	uint32_t flags;    /* SP_EXIT_* */
	uint32_t rsvd;
} __attribute__((packed));

struct sp_oom {
	uint32_t victim;   /* its pid */
	uint32_t rsvd;
	uint64_t rss;      /* its resident bytes when it was chosen */
	uint64_t used;     /* the sandbox's memory in use then */
	uint64_t limit;    /* the sandbox's memory limit */
	/* then: the victim's cmdline \0 */
} __attribute__((packed));

struct sp_error {
	int32_t err;       /* positive errno */
	/* then: message \0 */
} __attribute__((packed));

#define SP_PROC_RUNNING 0u
#define SP_PROC_EXITED 1u

struct sp_proc {
	uint32_t pid;
	uint32_t state;    /* SP_PROC_* */
	int32_t code;      /* valid when exited */
	int32_t signo;
	uint64_t started_ms; /* wall clock, ms since the epoch */
	/* then: cmdline \0 */
} __attribute__((packed));

/* A sandbox's network as the sandbox sees it, the same in every one (docs/network.md): its
 * interface's address (/30) and the gateway, the edge of its own network namespace. A
 * microVM's agent sets them on eth0; gVisor takes them from its namespace. */
#define SP_NET_ADDR "169.254.0.21"
#define SP_NET_GATEWAY "169.254.0.22"
#define SP_NET_NETMASK "255.255.255.252"
/* The agent's relay listens on SP_NET_ADDR:SP_RELAY_PORT (`space-agent --relay`): a connection
 * sends the port (2 bytes, network order), gets one byte back (0, or the errno of connecting to
 * it on loopback, 127.0.0.1 then ::1) and then is that connection. The port proxy reaches
 * servers bound to loopback only through it; only spaced's namespace reaches the address. */
#define SP_RELAY_PORT 1

#define SP_PORTS_MAX 1024u  /* listening sockets in one answer to H_PORTS */
#define SP_FAMILY_IPV4 4u
#define SP_FAMILY_IPV6 6u

struct sp_port {
	uint16_t port;
	uint8_t family;    /* SP_FAMILY_* */
	uint8_t rsvd;
	uint8_t addr[16];  /* the address it is bound to, in network order (IPv4: the first 4) */
} __attribute__((packed));

#define SP_WATCH_RECURSIVE 0x1u /* follow subfolders too, those made later included */

struct sp_watch {
	uint32_t flags;    /* SP_WATCH_* */
	/* then: path \0 of a folder */
} __attribute__((packed));

/* What changed (struct sp_event's type); the name is relative to the watched folder, "" for
 * the folder itself. */
#define SP_EVENT_CREATE 1u  /* made, or moved in (the new name of a rename) */
#define SP_EVENT_WRITE 2u   /* its contents changed */
#define SP_EVENT_REMOVE 3u  /* removed */
#define SP_EVENT_RENAME 4u  /* moved away (the old name of a rename) */
#define SP_EVENT_CHMOD 5u   /* its metadata changed: mode, owner, times */
#define SP_EVENT_LOST 6u    /* events were dropped here (the host took too few); name "" */

struct sp_event {
	uint32_t type;     /* SP_EVENT_* */
	/* then: name \0 */
} __attribute__((packed));

#define SP_FWRITE_APPEND 0x1u

struct sp_fwrite {
	uint32_t mode;     /* permission bits for a new file */
	uint32_t flags;    /* SP_FWRITE_* */
	/* then: path \0 ; parent directories are created */
} __attribute__((packed));

struct sp_mode {
	uint32_t mode;
	/* then: path \0 */
} __attribute__((packed));

#define SP_TYPE_FILE 1u
#define SP_TYPE_DIR 2u
#define SP_TYPE_LINK 3u
#define SP_TYPE_OTHER 4u

struct sp_stat {
	uint64_t size;
	int64_t mtime;     /* seconds since the epoch */
	uint32_t mode;     /* permission bits */
	uint32_t type;     /* SP_TYPE_* */
	uint32_t uid;
	uint32_t gid;
	/* then: name \0 (last path component; for H_LIST the entry name)
	 * then, from an agent that has it (added within version 2; a host takes the fields above
	 * alone when the payload ends after name): struct sp_stat_ext */
} __attribute__((packed));

struct sp_stat_ext {
	uint32_t mtime_nsec; /* nanoseconds of mtime, 0..999999999 */
	uint32_t rsvd;       /* zero */
	/* then: owner \0 group \0 target \0 path \0
	 * owner, group: the names of uid and gid in the sandbox's /etc/passwd and /etc/group, ""
	 * when they have none; target: a link's target ("" for anything else), at most PATH_MAX
	 * bytes; path: the entry's absolute path as the agent resolved it */
} __attribute__((packed));

#endif

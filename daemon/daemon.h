/*
 * daemon/daemon.h - the objects spaced is made of and the rule that guards them.
 *
 * Threads: one HTTP thread (libmicrohttpd, internal polling), one I/O thread
 * (io/loop.c: every agent socket in one epoll set), and short-lived job threads
 * for slow sandbox work (create, delete: runsc, mounts). All of them share
 * the sandbox registry, and every field below marked [L] is read and
 * written only with d->lock held. Nothing slow is ever done with the lock
 * held: no runsc, no mount, no blocking socket I/O.
 *
 * Ownership: the registry owns sandboxes; a sandbox owns its processes and
 * its agent channel; an HTTP connection owns its struct op, which a sandbox
 * or process only borrows while the op is linked to it (op.c).
 */
#ifndef SPACE_DAEMON_DAEMON_H
#define SPACE_DAEMON_DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "daemon/base/clock.h"
#include "daemon/core/starts.h"
#include "daemon/core/state.h"
#include "daemon/io/chan.h"
#include "daemon/io/loop.h"
#include "daemon/settings.h"
#include "lib/buf.h"

#define SPACE_MAX_SANDBOXES 256          /* sandboxes that exist at once */
#define TENANT_MAX_SANDBOXES 64          /* of them, owned by one tenant (TCP token) */
#define TENANT_MAX_REQUESTS 64           /* requests of one tenant in flight at once, streams apart */
/* Requests of one tenant that wait on a process (an exec, a process's output, a wait: the streams
 * that background commands hold for their whole lives) in flight at once. One costs spaced a
 * descriptor and 64 KiB (its connection's memory, HTTP_MAX_HEADER_BYTES), no thread
 * (bench/streams.py): 64 MiB for a tenant at its limit. */
#define TENANT_MAX_STREAMS 1024
#define TENANT_NAME_MAX 63               /* bytes of a tenant's name; a longer one is refused, never cut */
/* Snapshots one tenant may keep, and the disk they may take (sizes measured when each is made);
 * spaced --tenant-snapshots / --tenant-snapshot-mb lower or raise them. */
#define TENANT_MAX_SNAPSHOTS 64
#define TENANT_MAX_SNAPSHOT_BYTES (64ull << 30)
/* Volumes (core/volume.h): a sandbox mounts at most SANDBOX_MAX_VOLUMES of them, each at a path of
 * at most VOLUME_PATH_MAX bytes; a volume's name is at most VOLUME_NAME_MAX bytes. */
#define SANDBOX_MAX_VOLUMES 8
#define VOLUME_NAME_MAX 63
#define VOLUME_PATH_MAX 255
#define SANDBOX_ID_LEN 12                /* hex characters */
#define SANDBOX_TOKEN_LEN 32             /* hex characters of a sandbox's access token */
#define SANDBOX_MAX_EXITED 128           /* exited processes remembered per sandbox */
#define SANDBOX_MAX_PROCS_TRACKED 512    /* process records per sandbox (running + remembered) */
#define PROC_TAG_MAX 128                 /* bytes of a process's tag (its start's "tag") */
#define SANDBOX_MAX_PENDING (64u * 2u * 256u * 1024u) /* unread output held for one sandbox */
#define PROC_MAX_READERS 16              /* output streams reading one process at once */
#define SANDBOX_MAX_READERS 128          /* output streams reading one sandbox's processes at once */
/* A process started with "output": "drop": the most recent output kept, while nobody reads it,
 * for a reader that joins later (a connected reader holds the process back instead). */
#define PROC_DROP_KEEP (64u * 1024u)
#define AGENT_HELLO_TIMEOUT_MS 30000     /* from runsc start to the agent's hello */
/* Liveness: an agent someone waits on that said nothing for AGENT_PING_AFTER_MS is pinged; a
 * ping unanswered for AGENT_DEADLINE_MS gets the agent continued (something inside may have
 * stopped it) and as long again before the sandbox fails as unresponsive. */
#define AGENT_PING_AFTER_MS 5000
#define AGENT_DEADLINE_MS 15000
#define AGENT_OPEN_MS 5000        /* an unanswered H_OPEN of a running or creating sandbox is sent again after it */
/* An impostor can answer pings for a PID 1 it stopped, so while someone waits on a sandbox its
 * PID 1 is also looked at from the host (the runtime's view of it) every AGENT_PROBE_MS. */
#define AGENT_PROBE_MS 10000
#define STREAM_KEEPALIVE_MS 15000           /* an NDJSON stream silent this long gets a keepalive */
/* Request tags spaced keeps for itself; those of requests start above them. */
#define AGENT_TAG_HELLO_PS 0u               /* the process listing asked for on every hello */
#define AGENT_TAG_PING 1u                   /* the liveness ping */
#define AGENT_TAG_CLOCK 2u                  /* the wall clock given to a VM's agent (peer_send_clock) */
#define AGENT_TAG_FIRST 3u
#define DEFAULT_MEMORY_MB 512
#define MAX_CPUS 64                      /* a sandbox's size: cpus, memory */
#define MIN_MEMORY_MB 64
#define MAX_MEMORY_MB 65536
#define DEFAULT_CPUS 1
#define DEFAULT_TIMEOUT_S 300
/* Processes: the host cgroup's pids limit counts runsc's own host processes and threads too
 * (under ptrace every sandboxed process has a host stub), so it sits well above the limit a
 * sandbox's processes meet inside, where a fork bomb fails with EAGAIN. */
#define DEFAULT_PIDS_LIMIT 4096
#define SANDBOX_NPROC 1024
#define ISOLATION_KINDS 2                /* gvisor, microvm (core/isolation.c) */
#define ISOLATION_NAME_MAX 15            /* bytes of a kind's name */

struct driver;
struct driver_ops;
struct store;
struct op;
struct peer_events;
struct pool;
struct metrics_history;
struct stats;


struct proc {
	struct proc *next;
	uint32_t pid;
	char *cmd;
	json_t *spec;               /* [L] {"argv", "env", "cwd"[, "tag"][, "pty"]} of a start spaced asked for
	                               ("pty": its terminal's {"cols", "rows"}, kept as resized);
	                               NULL for one known only from the agent (after a restart) */
	int64_t started_ms;
	bool exited;
	int32_t code, signo;
	bool timed_out;
	bool oom_killed;            /* [L] killed by the sandbox's memory watcher */
	uint32_t oom_kills;         /* [L] processes of its own the watcher killed, itself included */
	bool listed;                /* [L] named by the current connection's agent (started or listed) */
	bool hearsay;               /* [L] known only from the agent's word (a listing, output, an exit),
	                               never from a start spaced asked for */
	struct op *readers;         /* [L] the streams and captures taking its output (op->next_reader) */
	int nreaders;               /* [L] how many: at most PROC_MAX_READERS through the output route */
	bool drop;                  /* [L] output policy "drop": output is discarded while no reader is
	                               connected rather than holding the process back (else "block");
	                               a connected reader holds it back under either */
	struct buf pending;         /* [L] output received while nobody read it: all of it under "block"
	                               (the credit bounds it), the last PROC_DROP_KEEP bytes under "drop" */
	uint32_t pending_raw;       /* [L] payload bytes in it (counted in sb->pending_bytes) */
	uint32_t pending_out;       /* [L] of them, output bytes (their credit waits for a reader) */
	uint64_t dropped;           /* [L] output bytes discarded unread since a reader last joined */
	uint32_t owed;              /* [L] bytes received on this connection, credit not yet returned */
	struct op *waiters;         /* [L] waits for its exit, and stdin writers */
	uint32_t stdin_credit;      /* [L] stdin bytes the agent will take */
};

/* What spaced knows of the agent on the other end of a sandbox's channel. [L] */
struct peer {
	uint64_t boot_id;
	uint32_t version;           /* the protocol its hello named (SP_PROTO_MIN_VERSION..) */
	uint32_t features;          /* SP_FEATURE_* its hello named (struct sp_hello_ext), 0: none */
	bool listing;               /* a process listing on AGENT_TAG_HELLO_PS is outstanding */
	bool relist;                /* ... and another is wanted once it ends */
	int64_t ping_ms;            /* when the unanswered ping went out, 0: none */
	bool nudging;               /* a job is continuing an agent that stopped answering */
	int64_t probe_ms;           /* when PID 1 was last looked at from the host */
	bool probing;               /* a job is looking at it now */
};

/* Whether a sandbox belongs to a warm pool (core/pool.h). */
enum sb_pool {
	SB_POOL_NONE,    /* its creator's: listed, reachable */
	SB_POOL_WARM,    /* waits in pool pool_index for a create to claim it */
	SB_POOL_CLAIMED, /* a create claims it: hidden until the claim is recorded */
};

/* A volume a sandbox mounts: recorded with it, kept while it is suspended, and the rule of
 * one read-write holder at a time is checked against every sandbox's (core/volume.h). */
struct sb_volume {
	char name[VOLUME_NAME_MAX + 1];
	char path[VOLUME_PATH_MAX + 1]; /* absolute, inside the sandbox */
	bool read_only;
};

/* What a sandbox is: set when it is made (or claimed from a warm pool) or adopted, then only
 * read. */
struct sb_conf {
	char template[64];
	/* its template's defaults for a process that names none (an image's working folder and
	 * user): "" and has_user false for none */
	char workdir[256];
	bool has_user;
	uint32_t uid, gid;
	char isolation[ISOLATION_NAME_MAX + 1]; /* its kind ("gvisor", "microvm"): which driver runs it */
	char tenant[TENANT_NAME_MAX + 1]; /* who owns it: "" for the Unix socket's administrator */
	int cpus, memory_mb;
	int disk_mb;                /* size of its disk */
	json_t *env;                /* object of strings */
	json_t *metadata;           /* object of strings */
	int net_slot;               /* its slot of the host's transit range (net/net.h), with network */
	char net_transit[20];       /* that range, as it was when the sandbox was made */
	/* Two secrets that do not stand in for each other: access_token is what the E2B front's
	 * sandbox plane takes (its envdAccessToken: commands and files); traffic_token is what
	 * opens its ports through the port proxy (E2B's trafficAccessToken), and nothing else. */
	char access_token[SANDBOX_TOKEN_LEN + 1];
	char traffic_token[SANDBOX_TOKEN_LEN + 1];
	int64_t created_ms;
	char dir[512];              /* <state>/sandboxes/<id> */
	struct sb_volume volumes[SANDBOX_MAX_VOLUMES]; /* the volumes it mounts */
	int nvolumes;
};

struct sandbox {
	struct sandbox *next;
	char id[SANDBOX_ID_LEN + 1];
	struct daemon *d;
	struct sb_conf conf;

	/* its settings, which requests may change [L] */
	double timeout_s;           /* idle timeout, 0: none */
	double lifetime_s;          /* its lifetime in seconds as last set (create, claim, timeout route) */
	bool timeout_kill;          /* on expiry: delete instead of suspend */
	bool keepalive;             /* a running process counts as activity */
	bool public_ports;          /* its ports open to anyone who reaches the proxy */
	bool auto_resume;           /* a request for its agent resumes it when paused or suspended;
	                               else the request is refused (409) */
	json_t *network;            /* its egress policy (net/policy.h); NULL: it has no network */
	int cpu_shares;             /* cgroup cpu.shares its runtime gets (0: the default, 1024) */

	/* its life [L] */
	enum sb_state state;
	char reason[128];           /* why it failed */
	char *start_cmd, *ready_cmd; /* its template's (core/ready.h), while it is being made; else NULL */
	enum sb_pool pooled;        /* core/pool.h: whether it is a warm pool's, hidden from all */
	int pool_index;             /* with SB_POOL_WARM: its pool's index in d->pools */
	int64_t expires_ms;         /* wall clock when its lifetime ends, 0: none */
	int64_t deadline_ms;        /* wall clock when the idle timeout fires, 0: not armed */
	int64_t remaining_ms;       /* idle time left when it was suspended */
	uint64_t seq;               /* the number of its newest record (store_record) */
	bool net_changing;          /* a change of its policy is under way */

	/* its agent [L] */
	struct chan chan;           /* the agent's channel (io/chan.h) */
	struct peer peer;
	struct proc *procs;
	struct op *ops;             /* requests waiting for an agent reply, by tag */
	struct op *deferred;        /* requests waiting for the sandbox to resume */
	uint32_t next_tag;
	uint64_t pending_bytes;     /* unread output held for its processes, all together */

	/* its memory [L] */
	bool dead;                  /* removed from the registry; freed by the I/O thread */
	bool watched;               /* a job watches it after its agent dropped */
	int refs;                   /* jobs using it: the I/O thread frees it only at 0 */
	struct metrics_history *metrics; /* its samples (core/metrics.h), NULL before the first */
	struct sandbox *grave;      /* next in the I/O thread's list of sandboxes to free */
};

#define DRIVER_CALLS_MAX 16 /* the calls of a driver counted (driver/call.c) */

/* One isolation kind and the driver that runs it on this host (core/isolation.h). */
struct driver_slot {
	const char *kind;               /* "gvisor", "microvm": the driver's name too */
	const struct driver_ops *ops;   /* NULL: the kind is unavailable here */
	struct driver *drv;             /* its instance, once initialised */
	char why[256];                  /* unavailable: why (the driver's own words) */
	/* driver/call.c's counts of each call of it: calls, failures, nanoseconds (atomics) */
	uint64_t counts[DRIVER_CALLS_MAX][3];
};

/* Requests in flight for one tenant (TCP only), while it has any. */
struct tenant_load {
	struct tenant_load *next;
	char tenant[TENANT_NAME_MAX + 1];
	int requests;
	int streams;                /* of them, those that wait on a process (TENANT_MAX_STREAMS) */
	uint64_t captured;          /* bytes its captures hold (TENANT_MAX_CAPTURE) */
};

struct proxy;
struct build;
struct dns;
struct net_watch;

struct daemon {
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* broadcast when an agent says hello or a job ends */
	struct sandbox *sandboxes;  /* [L] oldest first */
	int nsandboxes;             /* [L] */
	int jobs;                   /* [L] job threads running */

	struct settings cfg;        /* read once at start (config.h), then only read */
	char *tls_cert, *tls_key;   /* the PEM text of --tls-cert and --tls-key (http_tls_load) */
	int builds;                 /* [L] template builds in flight (core/build.c) */
	struct build *build_list;   /* [L] those builds */
	struct recipe *recipe_list; /* [L] the builds from recipes under way */
	char net_tag[8];            /* this spaced's mark on its interfaces and table (net_init) */

	struct store *store;
	/* Every kind this spaced knows, set up once at start before any thread runs and only read
	 * after; isolation is the default of creates that name none. */
	struct driver_slot drivers[ISOLATION_KINDS];
	const struct driver_slot *isolation;

	int reaperfd;               /* SIGCHLD signalfd, or -1 */
	struct loop loop;           /* the I/O thread; its timers are [L] */
	const struct peer_events *peer_events; /* how agent events reach the sandbox layer */
	struct sandbox *graveyard;  /* [L] sandboxes the I/O thread is to free */
	struct tenant_load *loads;  /* [L] tenants with requests in flight */
	uint64_t admin_captured;    /* [L] bytes the administrator's captures hold */
	struct stats *stats;        /* spaced's own counters (core/stats.h: atomics, no lock) */
	struct starts starts;       /* the turns to boot (core/starts.h: its own lock) */
	bool stopping;

	void *mhd_unix, *mhd_tcp;   /* struct MHD_Daemon * */
	int e2b_fd;                 /* its listening socket, kept to start it again; -1: none */
	int e2b_pidfd;              /* the running front's pidfd; -1: none */
	int64_t e2b_started_ms;     /* when it was last started (mono ms) */
	bool cache_trimming;        /* [L] a trim job runs */
	struct proxy *proxy;        /* the port proxy, when it runs (net/proxy.h) */
	struct pool *pools;         /* --pool (core/pool.h) */
	bool serving;               /* [L] the start is over: the API is up */
	int npools;
	struct dns *dns;            /* that resolver (net/dns.h) */
	struct net_watch *net_watch; /* the thread that puts the sandboxes' rules back (net/net.h) */
	bool metrics_busy;          /* [L] the sampling job runs (core/metrics.h) */
	int64_t metrics_at_ms;      /* [L] when it last started (mono ms) */
	char status[128];           /* [L] the status line last told the service manager (base/notify.h) */
};

#endif

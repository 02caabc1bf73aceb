/*
 * daemon/settings.h - what spaced was told to be: every value its flags and configuration
 * file set (daemon/config.c reads them once at start, with their defaults), and the paths of
 * the programs it runs beside itself. Read-only once the start is over, so read without
 * d->lock.
 */
#ifndef SPACE_DAEMON_SETTINGS_H
#define SPACE_DAEMON_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#define NET_PERMITS_MAX 64 /* spaced --egress-permit ranges */

struct settings {
	/* where */
	char state_dir[512];        /* --state-dir */
	char cache_dir[512];        /* --cache-dir */
	char socket_path[512];      /* --socket */
	char listen_addr[128];      /* --listen HOST:PORT, "" for none */
	char tls_cert_path[512];    /* --tls-cert, --tls-key: "" for plain HTTP on the TCP listener */
	char tls_key_path[512];
	char proxy_listen[128];     /* --proxy-listen HOST:PORT, "" for no port proxy */
	char proxy_domain[128];     /* --proxy-domain (default "localhost") */
	char e2b_listen[128];       /* --e2b-listen HOST:PORT, "" for no E2B front */

	/* the programs beside spaced */
	char agent_path[512];       /* --agent: the space-agent binary mounted into sandboxes */
	char shim_path[512];        /* libspace-shim.so beside it, "" if missing */
	char build_path[512];       /* space-build beside the agent: the template builder (builder/) */
	char e2b_path[512];         /* space-e2b beside the agent: the E2B front (e2b/) */
	char recipes_dir[512];      /* --recipes: templates built on first use (core/recipe.h) */
	char ui_dir[512];           /* --ui: the web console's files (api/ui.h) */

	/* sandboxes */
	const char *vm_accel;       /* --accel: auto, kvm or tcg (the microvm driver's) */
	bool auto_resume;           /* exec and file requests resume a paused or suspended sandbox */
	int max_starting;           /* --max-starting, 0: the default (core/starts.h) */
	int ready_timeout_s;        /* --ready-timeout: a template's ready command's (core/ready.h) */
	int max_snapshots;          /* per tenant (TENANT_MAX_SNAPSHOTS unless configured) */
	uint64_t max_snapshot_bytes;/* per tenant (TENANT_MAX_SNAPSHOT_BYTES unless configured) */
	uint64_t reserve_bytes;     /* free space a snapshot or fork must leave on the state dir */
	long long cache_max_bytes;  /* --cache-max-mb in bytes, 0: no bound (core/system.h) */

	/* networks */
	int default_egress;         /* --default-egress: enum net_egress of creates that name none */
	char net_permits[NET_PERMITS_MAX][20]; /* --egress-permit CIDRs sandboxes may reach
	                                               despite NET_BLOCKED */
	int net_npermits;
	char net_transit[20];       /* --net-transit: the range of the sandboxes' slots (net/net.h) */
	char dns_upstream[64];      /* --dns-upstream ADDR[:PORT], "" for /etc/resolv.conf's */
	int dns_port;               /* --dns-port: the sandboxes' resolver's, in spaced's namespace */
	int proxy_idle_s;           /* --proxy-idle-timeout (default PROXY_IDLE_TIMEOUT_S) */
};

#endif

/*
 * daemon/core/sandbox_view.c - a sandbox as the API shows it: its JSON view, with its times,
 * its network (policy, addresses, bytes sent and received) and its tokens.
 */
#include "daemon/core/sandbox.h"

#include <stdio.h>
#include <string.h>

#include "daemon/net/net.h"

static json_t *time_or_null(int64_t ms)
{
	char when[32];
	if (ms <= 0)
		return json_null();
	clock_format(when, sizeof(when), ms);
	return json_string(when);
}

/* Its policy, its addresses and what it has sent and received; null for a sandbox made before
 * sandboxes had a network. */
static json_t *network_json(const struct sandbox *sb)
{
	if (!sb->network)
		return json_null();
	char reach[16];
	uint64_t out = 0, in = 0;
	net_host_reach(sb, reach, sizeof(reach));
	net_bytes(sb, &out, &in);
	json_t *o = json_deep_copy(sb->network);
	json_object_update_missing_new(o, json_pack("{s:s, s:s, s:s, s:I, s:I}", "address", NET_SANDBOX_ADDR,
						    "gateway", NET_GATEWAY_ADDR, "host_address", reach,
						    "bytes_out", (json_int_t)out, "bytes_in", (json_int_t)in));
	return o;
}

json_t *sandbox_json(const struct sandbox *sb)
{
	/* to the millisecond: creates a moment apart still list in the order they were made */
	char created[40], whole[32];
	clock_format(whole, sizeof(whole), sb->conf.created_ms);
	snprintf(created, sizeof(created), "%.*s.%03dZ", (int)strlen(whole) - 1, whole, (int)(sb->conf.created_ms % 1000));
	bool ticking = sb->state == SB_RUNNING || sb->state == SB_PAUSED;
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:O, s:s, s:f, s:f, s:s, s:b, s:o, s:o, s:s}", "id",
			      sb->id, "state", sb_state_name(sb->state), "template", sb->conf.template, "cpus", sb->conf.cpus,
			      "memory_mb", sb->conf.memory_mb, "disk_mb", sb->conf.disk_mb, "metadata", sb->conf.metadata, "created_at",
			      created, "timeout", sb->timeout_s,
			      "lifetime", sb->lifetime_s, "timeout_action", sb->timeout_kill ? "kill" : "suspend",
			      "keepalive_processes", sb->keepalive, "timeout_at",
			      time_or_null(ticking ? sb->deadline_ms : 0), "expires_at",
			      time_or_null(sb->expires_ms),
			      "isolation", sb->conf.isolation);
	json_object_set_new(o, "driver", json_string(sb->conf.isolation)); /* isolation's older name */
	if (sb->state == SB_SUSPENDED && sb->timeout_s > 0)
		json_object_set_new(o, "timeout_left_ms", json_integer(sb->remaining_ms));
	if (sb->state == SB_FAILED)
		json_object_set_new(o, "reason", json_string(sb->reason));
	json_object_set_new(o, "network", network_json(sb));
	json_object_set_new(o, "public_ports", json_boolean(sb->public_ports));
	json_object_set_new(o, "auto_resume", json_boolean(sb->auto_resume));
	json_object_set_new(o, "access_token", json_string(sb->conf.access_token));
	json_object_set_new(o, "traffic_token", json_string(sb->conf.traffic_token));
	json_t *vols = json_array();
	for (int i = 0; i < sb->conf.nvolumes; i++)
		json_array_append_new(vols, json_pack("{s:s, s:s, s:b}", "name", sb->conf.volumes[i].name, "path",
						      sb->conf.volumes[i].path, "read_only", sb->conf.volumes[i].read_only));
	json_object_set_new(o, "volumes", vols);
	return o;
}

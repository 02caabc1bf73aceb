/*
 * daemon/api/routes.c - the route table of API v1 and matching a request to it.
 *
 * Every route is one line of the table; matching is by path segments, with
 * ":id" and ":pid" capturing a sandbox id and a process id. The handlers
 * live in api_sandbox.c, api_exec.c, api_files.c and api_volumes.c; they reach the request
 * checks of api.c, never this table.
 */
#include "daemon/api/api.h"
#include "daemon/store/template.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/snapshot.h"

static const struct route routes[] = {
	{ "GET", "/v1/health", api_health, NULL },
	{ "GET", "/v1/version", api_version, NULL },
	{ "GET", "/v1/system/df", api_system_df, NULL },
	{ "POST", "/v1/system/prune", api_system_prune, NULL },
	{ "GET", "/v1/templates", api_templates, NULL },
	{ "POST", "/v1/templates", api_template_build, api_template_build_upload },
	{ "PUT", "/v1/templates/:tpl", api_template_put, NULL },
	{ "GET", "/v1/templates/:tpl", api_template_get, NULL },
	{ "DELETE", "/v1/templates/:tpl", api_template_delete, NULL },
	{ "DELETE", "/v1/templates/:tpl/build", api_template_build_cancel, NULL },
	{ "POST", "/v1/volumes", api_volume_create, NULL },
	{ "GET", "/v1/volumes", api_volume_list, NULL },
	{ "GET", "/v1/volumes/:vol", api_volume_get, NULL },
	{ "DELETE", "/v1/volumes/:vol", api_volume_delete, NULL },
	{ "POST", "/v1/sandboxes", api_sandbox_create, NULL },
	{ "GET", "/v1/sandboxes", api_sandbox_list, NULL },
	{ "GET", "/v1/sandboxes/:id", api_sandbox_get, NULL },
	{ "DELETE", "/v1/sandboxes/:id", api_sandbox_delete, NULL },
	{ "POST", "/v1/sandboxes/:id/pause", api_sandbox_pause, NULL },
	{ "POST", "/v1/sandboxes/:id/resume", api_sandbox_resume, NULL },
	{ "POST", "/v1/sandboxes/:id/suspend", api_sandbox_suspend, NULL },
	{ "POST", "/v1/sandboxes/:id/sync", api_sandbox_sync, NULL },
	{ "POST", "/v1/sandboxes/:id/timeout", api_sandbox_timeout, NULL },
	{ "PATCH", "/v1/sandboxes/:id/network", api_sandbox_network, NULL },
	{ "POST", "/v1/sandboxes/:id/snapshot", api_sandbox_snapshot, NULL },
	{ "POST", "/v1/sandboxes/:id/fork", api_sandbox_fork, NULL },
	{ "GET", "/v1/snapshots", api_snapshot_list, NULL },
	{ "GET", "/v1/snapshots/:snap", api_snapshot_get, NULL },
	{ "DELETE", "/v1/snapshots/:snap", api_snapshot_delete, NULL },
	{ "POST", "/v1/sandboxes/:id/exec", api_exec, NULL },
	{ "POST", "/v1/sandboxes/:id/processes", api_proc_start, NULL },
	{ "GET", "/v1/sandboxes/:id/processes", api_proc_list, NULL },
	{ "GET", "/v1/sandboxes/:id/processes/:pid", api_proc_get, NULL },
	{ "GET", "/v1/sandboxes/:id/processes/:pid/output", api_proc_output, NULL },
	{ "POST", "/v1/sandboxes/:id/processes/:pid/stdin", api_proc_stdin, api_proc_stdin_upload },
	{ "DELETE", "/v1/sandboxes/:id/processes/:pid/stdin", api_proc_stdin_close, NULL },
	{ "POST", "/v1/sandboxes/:id/processes/:pid/signal", api_proc_signal, NULL },
	{ "POST", "/v1/sandboxes/:id/processes/:pid/resize", api_proc_resize, NULL },
	{ "GET", "/v1/sandboxes/:id/processes/:pid/wait", api_proc_wait, NULL },
	{ "GET", "/v1/sandboxes/:id/files", api_file_read, NULL },
	{ "PUT", "/v1/sandboxes/:id/files", api_file_write, api_file_write_upload },
	{ "DELETE", "/v1/sandboxes/:id/files", api_file_remove, NULL },
	{ "GET", "/v1/sandboxes/:id/files/stat", api_file_stat, NULL },
	{ "GET", "/v1/sandboxes/:id/files/list", api_file_list, NULL },
	{ "GET", "/v1/sandboxes/:id/files/watch", api_file_watch, NULL },
	{ "POST", "/v1/sandboxes/:id/files/mkdir", api_file_mkdir, NULL },
	{ "POST", "/v1/sandboxes/:id/files/rename", api_file_rename, NULL },
	{ "GET", "/v1/sandboxes/:id/ports", api_port_list, NULL },
	{ "GET", "/v1/sandboxes/:id/metrics", api_sandbox_metrics, NULL },
	{ "POST", "/v1/sandboxes/:id/ports/connect", api_port_connect, NULL },
	{ "GET", "/metrics", api_metrics, NULL },
};

/* Matches url against pattern; captures into op. */
static bool match(struct op *op, const char *pattern, const char *url)
{
	const char *p = pattern, *u = url;
	while (*p && *u) {
		if (*p != '/' || *u != '/')
			return false;
		p++;
		u++;
		size_t pl = strcspn(p, "/"), ul = strcspn(u, "/");
		if (pl == 3 && strncmp(p, ":id", 3) == 0) {
			if (ul == 0 || ul > SANDBOX_ID_LEN)
				return false;
			memcpy(op->sbid, u, ul);
			op->sbid[ul] = '\0';
		} else if (pl == 4 && strncmp(p, ":tpl", 4) == 0) {
			if (ul == 0 || ul >= sizeof(op->tpl))
				return false;
			memcpy(op->tpl, u, ul);
			op->tpl[ul] = '\0';
			template_name_canon(op->tpl); /* NAME:latest is NAME */
		} else if (pl == 4 && strncmp(p, ":vol", 4) == 0) {
			if (ul == 0 || ul >= sizeof(op->vol))
				return false;
			memcpy(op->vol, u, ul);
			op->vol[ul] = '\0';
		} else if (pl == 5 && strncmp(p, ":snap", 5) == 0) {
			if (ul == 0 || ul > SNAPSHOT_ID_LEN)
				return false;
			memcpy(op->snapid, u, ul);
			op->snapid[ul] = '\0';
		} else if (pl == 4 && strncmp(p, ":pid", 4) == 0) {
			char num[16];
			if (ul == 0 || ul >= sizeof(num))
				return false;
			memcpy(num, u, ul);
			num[ul] = '\0';
			char *end;
			unsigned long v = strtoul(num, &end, 10);
			if (*end || v == 0 || v >= SP_CHAN_REQ)
				return false;
			op->pid = (uint32_t)v;
		} else if (pl != ul || strncmp(p, u, pl) != 0) {
			return false;
		}
		p += pl;
		u += ul;
	}
	return *p == '\0' && (*u == '\0' || strcmp(u, "/") == 0);
}

const struct route *api_match(struct op *op, const char *method, const char *url)
{
	bool path_known = false;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!match(op, routes[i].pattern, url))
			continue;
		path_known = true;
		if (strcmp(routes[i].method, method) == 0)
			return &routes[i];
	}
	if (path_known)
		err_set(&op->err, ERR_METHOD, EINVAL, "%s is not allowed on %s", method, url);
	else
		err_set(&op->err, ERR_NOT_FOUND, ENOENT, "no such route: %s %s", method, url);
	return NULL;
}

bool api_route_waits(const struct route *r)
{
	return r->handler == api_exec || r->handler == api_proc_output || r->handler == api_proc_wait ||
	       r->handler == api_file_watch;
}

/*
 * daemon/api/api_ports.c - routes about a sandbox's network ports.
 *
 * GET /v1/sandboxes/:id/ports: the TCP sockets listening inside, as the agent
 * reads them from the sandbox's kernel (H_PORTS; agent/ports.h), whatever the
 * address they are bound to. The answer is made in daemon/core/op.c as the
 * A_PORT frames arrive.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/api/api.h"
#include "daemon/core/sandbox.h"

int api_port_list(struct op *op)
{
	struct sandbox *sb = api_sandbox(op, true);
	if (!sb)
		return API_DONE;
	json_decref(op->json);
	op->json = json_pack("{s:[]}", "ports");
	free(op->what);
	op->what = strdup("listing the ports");
	return api_request(op, sb, OP_CALL, SP_H_PORTS, NULL, 0, NULL, NULL);
}

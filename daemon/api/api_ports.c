/*
 * daemon/api/api_ports.c - routes about a sandbox's network ports.
 *
 * GET /v1/sandboxes/:id/ports: the TCP sockets listening inside, as the agent
 * reads them from the sandbox's kernel (H_PORTS; agent/ports.h), whatever the
 * address they are bound to. The answer is made in daemon/core/op.c as the
 * A_PORT frames arrive.
 *
 * POST /v1/sandboxes/:id/ports/connect {"port": N}: a TCP connection to port N
 * made inside the sandbox, as a background process whose stdin and stdout are
 * the connection (`space-agent --connect N`, agent/connect.h); the client
 * drives it with the processes routes, as `space port-forward` does.
 */
#include <errno.h>
#include <stdio.h>
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

int api_port_connect(struct op *op)
{
	static const struct field fields[] = { { "port", F_INT }, { NULL, 0 } };
	json_t *body;
	if (api_body(op, fields, &body) < 0)
		return API_DONE;
	json_t *port = json_object_get(body, "port");
	json_int_t n = json_integer_value(port);
	json_decref(body);
	if (!port || n < 1 || n > 65535) {
		err_set(&op->err, ERR_INVALID, EINVAL, "\"port\" must be a TCP port, 1-65535");
		return API_DONE;
	}
	struct sandbox *sb = api_sandbox(op, true);
	if (!sb)
		return API_DONE;
	char num[8];
	snprintf(num, sizeof(num), "%d", (int)n);
	json_t *argv = json_pack("[s, s, s]", "space-agent", "--connect", num);
	int rc = argv ? api_agent_process(op, sb, argv) : API_DONE;
	if (!argv)
		err_set(&op->err, ERR_INTERNAL, ENOMEM, "out of memory");
	json_decref(argv);
	return rc;
}

/*
 * e2b/shape.c - E2B's shapes of spaced's things (shape.h): state running and resuming read
 * "running"; pausing, paused, suspending and suspended read "paused"; a sandbox being made,
 * failed or being deleted is not shown. E2B's template "base" is spaced's "default".
 */
#include "e2b/shape.h"

#include <string.h>

const char *shape_e2b_template(const char *space)
{
	return space && strcmp(space, "default") == 0 ? "base" : space ? space : "";
}

const char *shape_template(const char *e2b)
{
	return !e2b || strcmp(e2b, "base") == 0 ? "default" : e2b;
}

const char *shape_state(const char *st)
{
	if (!st)
		return NULL;
	if (strcmp(st, "running") == 0 || strcmp(st, "resuming") == 0)
		return "running";
	if (strcmp(st, "pausing") == 0 || strcmp(st, "paused") == 0 || strcmp(st, "suspending") == 0 ||
	    strcmp(st, "suspended") == 0)
		return "paused";
	return NULL;
}

json_t *shape_domain(const struct req *r)
{
	return r->gw->domain[0] ? json_string(r->gw->domain) : json_null();
}

/* The token its ports need through the proxy (its traffic token, which opens nothing else):
 * none (null) when they are public. */
static json_t *traffic_token(const json_t *sb)
{
	return json_is_true(json_object_get(sb, "public_ports")) ? json_null()
								 : json_incref(json_object_get(sb, "traffic_token"));
}

json_t *shape_sandbox(const struct req *r, const json_t *sb)
{
	const char *tpl = shape_e2b_template(json_string_value(json_object_get(sb, "template")));
	return json_pack("{s:s?, s:s, s:s, s:s, s:s, s:s?, s:o, s:o}", "sandboxID",
			 json_string_value(json_object_get(sb, "id")), "templateID", tpl, "alias", tpl, "clientID", "space",
			 "envdVersion", GW_ENVD_VERSION, "envdAccessToken",
			 json_string_value(json_object_get(sb, "access_token")), "trafficAccessToken", traffic_token(sb),
			 "domain", shape_domain(r));
}

json_t *shape_body(struct req *r)
{
	if (buf_avail(&r->body) == 0)
		return json_object();
	json_t *b = json_loadb((const char *)buf_head(&r->body), buf_avail(&r->body), 0, NULL);
	if (!json_is_object(b)) {
		json_decref(b);
		return NULL;
	}
	return b;
}

long shape_timeout(const json_t *b, long def)
{
	const json_t *t = json_object_get(b, "timeout");
	if (!t || json_is_null(t))
		return def;
	if (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > SHAPE_TIMEOUT_MAX_S)
		return -1;
	return (long)json_integer_value(t);
}

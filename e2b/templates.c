/*
 * e2b/templates.c - E2B's template look-ups on spaced's templates (docs/e2b.md, "Templates").
 *
 * Template.exists / aliasExists (GET /templates/aliases/{alias}) is true for a template of
 * spaced ("base" being "default") and for a snapshot of the key's tenant, by id or name (a
 * snapshot is a template in E2B); Template.getTags (GET /templates/{id}/tags) lists the tags
 * spaced's template names carry: NAME is NAME:latest, NAME:TAG a template of its own
 * (docs/templates.md). A template another key built through E2B (builds.h) is left out of both,
 * and a create from it is refused (builds_may_use). Assigning and removing tags is refused in
 * control.c: spaced gives a template no second name.
 */
#include "e2b/gateway.h"

#include "e2b/builds.h"
#include "e2b/shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* spaced's templates r's key may see, or NULL with the answer queued in *rc. */
static json_t *templates_of(struct req *r, struct client *c, enum MHD_Result *rc)
{
	json_t *all = NULL;
	struct client_err e = { 0 };
	if (client_request(c, "GET", "/v1/templates", NULL, &all, &e) < 0) {
		*rc = gw_error_from(r, &e);
		return NULL;
	}
	char owner[GW_BUILD_OWNER_LEN + 1];
	builds_owner(gw_header(r, "X-API-KEY"), owner);
	json_t *list = json_object_get(all, "templates");
	for (size_t i = json_array_size(list); i-- > 0;)
		if (!builds_visible(json_array_get(list, i), owner))
			json_array_remove(list, i);
	return all;
}

/* The tag of template name have under the name wanted (NAME), or NULL when it is not one of its. */
static const char *tag_of(const char *have, const char *wanted)
{
	size_t n = strlen(wanted);
	if (!have || strncmp(have, wanted, n) != 0)
		return NULL;
	return have[n] == '\0' ? "latest" : have[n] == ':' ? have + n + 1 : NULL;
}

enum MHD_Result templates_alias(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *alias = a->param[0];
	enum MHD_Result rc = MHD_NO;
	json_t *all = templates_of(r, c, &rc), *t;
	if (!all)
		return rc;
	const char *name = shape_template(alias), *tag = NULL;
	size_t i;
	json_array_foreach(json_object_get(all, "templates"), i, t) {
		const char *have = json_string_value(json_object_get(t, "name"));
		if (have && (strcmp(have, name) == 0 || ((tag = tag_of(name, have)) && strcmp(tag, "latest") == 0)))
			break;
	}
	bool found = i < json_array_size(json_object_get(all, "templates"));
	json_decref(all);
	if (found)
		return gw_json(r, 200, json_pack("{s:s, s:b}", "templateID", alias, "public", true));
	struct client_err e = { 0 };
	if (client_request(c, "GET", "/v1/snapshots", NULL, &all, &e) < 0)
		return gw_error_from(r, &e);
	json_array_foreach(json_object_get(all, "snapshots"), i, t) {
		const char *id = json_string_value(json_object_get(t, "id"));
		const char *have = json_string_value(json_object_get(t, "name"));
		if (id && (strcmp(id, alias) == 0 || (have && strcmp(have, alias) == 0))) {
			rc = gw_json(r, 200, json_pack("{s:s, s:b}", "templateID", id, "public", false));
			json_decref(all);
			return rc;
		}
	}
	json_decref(all);
	return gw_error(r, 404, "no template or snapshot %s", alias);
}

enum MHD_Result templates_tags(struct req *r, const struct route_args *a)
{
	struct client *c = a->c;
	const char *id = a->param[0];
	enum MHD_Result rc = MHD_NO;
	json_t *all = templates_of(r, c, &rc), *t, *tags = json_array();
	if (!all)
		return rc;
	const char *name = shape_template(id);
	size_t i;
	json_array_foreach(json_object_get(all, "templates"), i, t) {
		const char *tag = tag_of(json_string_value(json_object_get(t, "name")), name);
		if (tag)
			json_array_append_new(tags, json_pack("{s:s, s:O?, s:O?}", "tag", tag, "buildID",
							      json_object_get(t, "key"), "createdAt",
							      json_object_get(t, "created_at")));
	}
	json_decref(all);
	if (json_array_size(tags) == 0) {
		json_decref(tags);
		return gw_error(r, 404, "template %s not found", id);
	}
	return gw_json(r, 200, tags);
}

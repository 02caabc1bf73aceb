/*
 * daemon/core/isolation.c - the isolation kinds and their drivers (see isolation.h).
 *
 * The kinds are listed here, whether or not this spaced has their driver, so a request
 * for a kind this host lacks is told so rather than that the kind does not exist. Adding
 * a driver is adding it to driver.c's table; adding a kind is a line below too. The
 * drivers are looked up through the finder main() hands over (driver_find), so this
 * module, and what links it, does not bring in every driver.
 */
#include "daemon/core/isolation.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/driver/driver.h"

static const char *const kinds[ISOLATION_KINDS] = { "gvisor", "microvm" };

const struct driver_slot *isolation_find(struct daemon *d, const char *name)
{
	for (int i = 0; i < ISOLATION_KINDS; i++)
		if (d->drivers[i].kind && strcmp(d->drivers[i].kind, name) == 0)
			return &d->drivers[i];
	return NULL;
}

/* "\"gvisor\", \"microvm\"" into buf, for the messages that name the kinds. */
static const char *kind_list(char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < ISOLATION_KINDS && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s\"%s\"", i ? ", " : "", kinds[i]);
	return buf;
}

int isolation_init(struct daemon *d, const char *deflt, isolation_finder find, struct err *e)
{
	char names[64];
	for (int i = 0; i < ISOLATION_KINDS; i++)
		d->drivers[i].kind = kinds[i];
	d->isolation = isolation_find(d, deflt);
	if (!d->isolation)
		return err_set(e, ERR_INVALID, EINVAL, "unknown isolation %s (known: %s)", deflt,
			       kind_list(names, sizeof(names)));
	for (int i = 0; i < ISOLATION_KINDS; i++) {
		struct driver_slot *k = &d->drivers[i];
		const struct driver_ops *ops = find(k->kind);
		struct err ie = { 0 };
		if (!ops)
			snprintf(k->why, sizeof(k->why), "this spaced was built without the %s driver", k->kind);
		else if (ops->init(d, &k->drv, &ie) < 0)
			snprintf(k->why, sizeof(k->why), "%s", ie.msg);
		else
			k->ops = ops;
		if (k->ops)
			continue;
		if (k == d->isolation)
			return err_set(e, ERR_ISOLATION_BROKEN, ENOTSUP, "isolation %s is unavailable: %s", k->kind,
				       k->why);
		log_info("isolation %s is unavailable: %s", k->kind, k->why);
	}
	return 0;
}

const struct driver_slot *isolation_pick(struct daemon *d, const char *name, struct err *e)
{
	char names[64];
	const struct driver_slot *k = name ? isolation_find(d, name) : d->isolation;
	if (!k)
		err_set(e, ERR_INVALID, EINVAL, "isolation must be one of %s", kind_list(names, sizeof(names)));
	else if (!k->ops)
		err_set(e, ERR_ISOLATION_REFUSED, ENOTSUP, "isolation %s is unavailable on this host: %s", k->kind,
			k->why);
	return k && k->ops ? k : NULL;
}

json_t *isolation_json(struct daemon *d)
{
	json_t *available = json_object(), *unavailable = json_object();
	for (int i = 0; i < ISOLATION_KINDS; i++) {
		const struct driver_slot *k = &d->drivers[i];
		json_object_set_new(available, k->kind, k->ops ? json_string(driver_runtime(k)) : json_null());
		if (!k->ops)
			json_object_set_new(unavailable, k->kind, json_string(k->why));
	}
	return json_pack("{s:s, s:o, s:o}", "default", d->isolation->kind, "available", available, "unavailable",
			 unavailable);
}

/*
 * daemon/driver/driver.c - the table of isolation drivers (see driver.h).
 */
#include "daemon/driver/driver.h"

#include <string.h>

static const struct driver_ops *const drivers[] = { &driver_gvisor, &driver_vm };

const struct driver_ops *driver_find(const char *name)
{
	/* "auto": gvisor, which runs everywhere and starts fastest here. */
	if (strcmp(name, "auto") == 0)
		return drivers[0];
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

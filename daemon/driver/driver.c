/*
 * daemon/driver/driver.c - the table of isolation drivers (see driver.h).
 */
#include "daemon/driver/driver.h"

#include <string.h>

/* One entry a driver, named after the isolation kind it runs (core/isolation.c). */
static const struct driver_ops *const drivers[] = { &driver_gvisor, &driver_vm };

const struct driver_ops *driver_find(const char *name)
{
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

/*
 * agent/fwcfg.c - see fwcfg.h.
 */
#include "fwcfg.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>

#define FWCFG_MAX_FILES 1024u /* QEMU keeps far fewer (its FW_CFG_FILE_SLOTS) */

long fwcfg_find_read(fwcfg_read_fn *read, void *ctx, const char *name, void *buf, size_t max)
{
	uint32_t count_be;
	int rc = read(FWCFG_FILE_DIR, &count_be, sizeof(count_be), ctx);
	if (rc < 0)
		return rc;
	uint32_t count = be32toh(count_be);
	if (count > FWCFG_MAX_FILES)
		return -EPROTO;
	/* an item is read from its start whenever it is selected: the count again, then the entries */
	size_t len = sizeof(count_be) + (size_t)count * sizeof(struct fwcfg_file);
	unsigned char *dir = malloc(len);
	if (!dir)
		return -ENOMEM;
	if ((rc = read(FWCFG_FILE_DIR, dir, len, ctx)) < 0) {
		free(dir);
		return rc;
	}
	long found = -ENOENT;
	uint16_t select = 0;
	for (uint32_t i = 0; i < count && found == -ENOENT; i++) {
		struct fwcfg_file f;
		memcpy(&f, dir + sizeof(count_be) + (size_t)i * sizeof(f), sizeof(f));
		if (memchr(f.name, '\0', sizeof(f.name)) && strcmp(f.name, name) == 0) {
			found = (long)be32toh(f.size);
			select = be16toh(f.select);
		}
	}
	free(dir);
	if (found < 0)
		return found;
	if ((size_t)found > max)
		return -EFBIG;
	if (found > 0 && (rc = read(select, buf, (size_t)found, ctx)) < 0)
		return rc;
	return found;
}

static int port_read(uint16_t sel, void *buf, size_t n, void *ctx)
{
	(void)ctx;
	outw(sel, FWCFG_PORT_SEL);
	insb(FWCFG_PORT_DATA, buf, (unsigned long)n);
	return 0;
}

long fwcfg_read_file(const char *name, void *buf, size_t max)
{
	if (ioperm(FWCFG_PORT_SEL, 2, 1) < 0)
		return -errno;
	long rc = fwcfg_find_read(port_read, NULL, name, buf, max);
	ioperm(FWCFG_PORT_SEL, 2, 0); /* the processes it starts inherit its permissions */
	return rc;
}

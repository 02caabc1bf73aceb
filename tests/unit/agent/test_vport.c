/*
 * tests/unit/agent/test_vport.c - finding the agent's virtio-serial port by
 * its name (agent/vport.c), in a directory standing for /sys: the port named
 * space.agent among others, a name that is only a prefix of another, ports
 * that have not appeared yet, and a device name that does not fit.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/vport.h"

static char sys[64];

static void port(const char *dev, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/class", sys);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/class/virtio-ports", sys);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/class/virtio-ports/%s", sys, dev);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/class/virtio-ports/%s/name", sys, dev);
	FILE *f = fopen(p, "we");
	assert_non_null(f);
	fputs(name, f);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(sys, sizeof(sys), "/tmp/space-test-vport-XXXXXX");
	return mkdtemp(sys) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sys);
	return system(cmd);
}

static void finds_by_name(void **state)
{
	char dev[64];
	assert_int_equal(vport_find(sys, "space.agent", dev, sizeof(dev)), -ENOENT); /* no ports yet */
	port("vport0p1", "org.qemu.guest_agent.0\n");
	assert_int_equal(vport_find(sys, "space.agent", dev, sizeof(dev)), -ENOENT);
	port("vport0p2", "space.agent.old\n"); /* a longer name is another port */
	port("vport0p3", "space\n");           /* and so is a shorter one */
	assert_int_equal(vport_find(sys, "space.agent", dev, sizeof(dev)), -ENOENT);
	port("vport1p4", "space.agent\n");
	assert_int_equal(vport_find(sys, "space.agent", dev, sizeof(dev)), 0);
	assert_string_equal(dev, "/dev/vport1p4");
	assert_int_equal(vport_find(sys, "org.qemu.guest_agent.0", dev, sizeof(dev)), 0);
	assert_string_equal(dev, "/dev/vport0p1");
	assert_int_equal(vport_find(sys, "space.agent", dev, strlen("/dev/vport1p4")), -ENAMETOOLONG);
	assert_int_equal(vport_find(sys, "space.agent", dev, strlen("/dev/vport1p4") + 1), 0);
}

static void unnamed_port(void **state)
{
	char dev[64];
	port("vport0p1", ""); /* a port without a name matches no name */
	assert_int_equal(vport_find(sys, "", dev, sizeof(dev)), -ENOENT);
	assert_int_equal(vport_find("/nonexistent-sysfs", "space.agent", dev, sizeof(dev)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(finds_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(unnamed_port, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

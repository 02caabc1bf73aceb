/*
 * lib/host/names.h - the names and sizes spaced and space-build agree on.
 *
 * space-build asks spaced for templates by name and leaves its steps in the machine's cache
 * for spaced to start sandboxes from, and it must leave out of a step's files the folder
 * spaced mounts into every sandbox's root. These are the constants both sides read from one
 * place; the modules that own them (daemon/store/template.h, daemon/driver/oci.h) include
 * this header.
 */
#ifndef SPACE_LIB_HOST_NAMES_H
#define SPACE_LIB_HOST_NAMES_H

#define TEMPLATE_DEFAULT "default"
#define TEMPLATE_NAME_MAX 63        /* bytes of a template's name: NAME[:TAG] (template_name_ok) */
#define TEMPLATE_TAG_DEFAULT "latest" /* NAME:latest is NAME */
#define TEMPLATE_EXTRA_MAX 1024     /* bytes of a named template's own package list */

/* A build's steps (builder/) are kept as root filesystems of their own in the cache,
 * <cache>/build/<key>/rootfs, key TEMPLATE_BUILD_KEY_LEN hex digits of a hash of the step and
 * every step before it. The builder starts a RUN step's sandbox from the step before by the
 * name "build/<key>", which only the Unix socket's clients may give (api_sandbox.c). */
#define TEMPLATE_BUILD_PREFIX "build/"
#define TEMPLATE_BUILD_KEY_LEN 32

#define OCI_SPACE_DIR "/.space"     /* where spaced mounts the agent, its socket and the shim
				     * in a sandbox's root (daemon/driver/oci.h) */

#endif

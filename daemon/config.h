/*
 * daemon/config.h - spaced's configuration: its defaults, then a configuration file, then the
 * command line, each later one winning, read once at start into struct settings (d->cfg)
 * and struct config.
 *
 * The file is CONFIG_DEFAULT_PATH when it exists, or the one --config names (which must
 * exist). Each line is `name = value` or `name` alone, where name is one of spaced's long
 * flags without its dashes (`dns-port = 5353`, `no-auto-resume`); `#` starts a comment, blank
 * lines are skipped. An option that may be given several times (template, egress-permit,
 * pool) may be on several lines, and the command line's add to the file's; any other given
 * again takes the later value. Every value is checked as its flag's is: a bad line stops
 * spaced, naming the file, the line and what is wrong.
 */
#ifndef SPACE_DAEMON_CONFIG_H
#define SPACE_DAEMON_CONFIG_H

#include <stdio.h>

#include "daemon/daemon.h"
#include "daemon/store/template.h"

#define CONFIG_DEFAULT_PATH "/etc/space/spaced.conf"
#define CONFIG_LINE_MAX 4096 /* bytes of one line of the file, its newline included */

struct config {
	const char *isolation; /* the default kind's name */
	struct template_spec templates[TEMPLATE_MAX_NAMED]; /* what --template names, besides default */
	int ntemplates;
	char path[512]; /* the file read, "" for none */
};

/*
 * Fills d and c from the defaults, the file and argv. Returns 0 to go on (optind then
 * indexes what follows the options: a subcommand), 1 when --help printed the usage, or
 * -EINVAL having said why on stderr.
 */
int config_load(struct daemon *d, struct config *c, int argc, char **argv);

/* Finds the programs and files spaced runs beside itself, in the agent's folder (build/ or
 * <prefix>/lib/space/): the shim, the builder, the E2B front, the recipes and the web console
 * (unless named), making the agent's path absolute. Warns about a missing optional one;
 * returns -ENOENT having said why on stderr when the agent, or the E2B front that
 * --e2b-listen needs, is missing. */
int config_programs(struct settings *s);

/* spaced's usage, to f. */
void config_usage(FILE *f);

#endif

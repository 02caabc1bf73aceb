/*
 * agent/identity.h - the sandbox's name as programs inside look it up: the
 * kernel's host name, /etc/hostname, and /etc/hosts (localhost for IPv4 and
 * IPv6, and the sandbox's own name, as on a Debian machine).
 *
 * The agent writes the files as PID 1 on a sandbox's first boot (the runtime
 * set the kernel's name from the sandbox id). A sandbox restored from another
 * one's image (a fork, a create from a snapshot) carries that one's name in
 * its kernel and files: the host then runs `space-agent --identity NAME`
 * beside PID 1, with the capability to set the host name, to give it its own.
 *
 * What a template or the sandbox's own programs wrote to /etc/hosts is kept:
 * only the line that names the sandbox is the agent's (marked with a comment,
 * and replaced on a rename), and localhost lines are added only when missing.
 */
#ifndef SPACE_AGENT_IDENTITY_H
#define SPACE_AGENT_IDENTITY_H

#define IDENTITY_NAME_MAX 63    /* a host name label, as sethostname and DNS allow */
#define IDENTITY_HOSTS_MAX 65536 /* a larger /etc/hosts is left as it is */

/* Whether name is a host name label: 1-63 of [a-z0-9-], not starting or ending with '-'. */
int identity_name_ok(const char *name);

/* Makes <etc>/hostname hold name and <etc>/hosts resolve localhost and name, keeping every
 * other line of <etc>/hosts; each file is replaced by a rename, and only when it changes.
 * Returns 0 or -errno. */
int identity_files(const char *etc, const char *name);

/* `space-agent --identity NAME`: sets the kernel's host name to NAME, then the files in /etc.
 * Returns the exit status: 0, 1 on a failure (said on stderr), 2 on a bad name. */
int identity_main(const char *name);

/* Sets the kernel's host name to name, then the files in /etc. Returns 0 or -errno. */
int identity_take(const char *name);

/* Gives <etc>/machine-id a new random id, when it holds one (an empty or missing file is left
 * for whoever fills it at boot). Returns 0 or -errno. */
int identity_machine_id(const char *etc);

/* Mixes n bytes of seed into the kernel's random pool, credits them (RNDADDENTROPY) and
 * reseeds the generator from it (RNDRESEEDCRNG): a sandbox restored from an image would
 * otherwise go on from its parent's state. 0 or -errno. */
int identity_reseed(const unsigned char *seed, unsigned n);

#endif

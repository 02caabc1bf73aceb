/*
 * daemon/base/reaper.c - reaping orphans inherited as a subreaper (see reaper.h).
 */
#include "daemon/base/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/host/spawn.h"

int reaper_init(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return -errno;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* Whether pid is a zombie, from /proc/<pid>/stat. */
static int is_zombie(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parens */
	return paren && paren[1] == ' ' && paren[2] == 'Z';
}

/* Reaps the zombie children listed in one /proc/self/task/<tid>/children file. */
static void reap_listed(const char *path)
{
	char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *save = NULL, *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		pid_t pid = (pid_t)atoi(tok);
		if (pid > 0 && is_zombie(pid))
			spawn_reap_orphan(pid);
	}
}

void reaper_run(int fd)
{
	struct signalfd_siginfo si;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	DIR *dp = opendir("/proc/self/task");
	if (!dp)
		return;
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		reap_listed(path);
	}
	closedir(dp);
}

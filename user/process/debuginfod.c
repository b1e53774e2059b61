// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "debuginfod.h"

#define PROFILE_SCRIPT "/etc/profile.d/debuginfod.sh"
#define URLS_GLOB "/etc/debuginfod/*.urls"
#define DEFAULT_SECONDS 10.0

static double monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends a file's contents to buf with its newlines made spaces, as `cat | tr` would. */
static void append_urls(const char *file, char *buf, size_t n)
{
	size_t at = strlen(buf);
	FILE *f = fopen(file, "re");
	int c;

	if (!f)
		return;
	while ((c = getc(f)) != EOF && at + 1 < n)
		buf[at++] = c == '\n' ? ' ' : (char) c;
	buf[at] = '\0';
	fclose(f);
}

/* Debian's profile script, for the processes that did not run it (sudo, services). */
static void system_servers(void)
{
	const char *env = getenv(DEBUGINFOD_URLS_ENV_VAR);
	char urls[4096] = "";
	glob_t g;
	size_t i;

	if ((env && *env) || access(PROFILE_SCRIPT, R_OK))
		return;
	if (glob(URLS_GLOB, 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++)
		append_urls(g.gl_pathv[i], urls, sizeof(urls));
	globfree(&g);
	if (urls[strspn(urls, " \t")])
		setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1);
}

const char *debuginfod_servers(void)
{
	const char *urls;

	system_servers();
	urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	return urls && urls[strspn(urls, " \t")] ? urls : "";
}

static double deadline_seconds(void)
{
	const char *s = getenv("RBMEMTRACE_DEBUGINFOD_SECONDS");
	double v = s ? strtod(s, NULL) : 0;

	return v > 0 && v < 3600 ? v : DEFAULT_SECONDS;
}

/* libdebuginfod calls it about once a second while it waits: non-zero cancels. */
static int past_deadline(debuginfod_client *c, long done, long total)
{
	const double *deadline = debuginfod_get_user_data(c);

	(void) done;
	(void) total;
	return monotonic() > *deadline;
}

int debuginfod_fetch(const char *hex, char *path, size_t n, char *url, size_t urln, char *why,
		     size_t whyn)
{
	double deadline = monotonic() + deadline_seconds();
	debuginfod_client *c;
	char *found = NULL;
	const char *u;
	int fd;

	url[0] = path[0] = '\0';
	if (!*debuginfod_servers()) {
		snprintf(why, whyn, "no debuginfod server configured (DEBUGINFOD_URLS)");
		return -ENOSYS;
	}
	setenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR, "0", 0);
	setenv(DEBUGINFOD_TIMEOUT_ENV_VAR, "5", 0);
	c = debuginfod_begin();
	if (!c) {
		snprintf(why, whyn, "cannot start a debuginfod client");
		return -ENOMEM;
	}
	debuginfod_set_user_data(c, &deadline);
	debuginfod_set_progressfn(c, past_deadline);
	fd = debuginfod_find_debuginfo(c, (const unsigned char *) hex, 0, &found);
	u = debuginfod_get_url(c);
	snprintf(url, urln, "%s", u ? u : "the debuginfod cache");
	if (fd < 0) {
		snprintf(why, whyn, "debuginfod (%s) has no debug info for build-id %s: %s",
			 debuginfod_servers(), hex,
			 monotonic() > deadline ? "it took too long" : strerror(-fd));
		debuginfod_end(c);
		return fd;
	}
	close(fd);
	snprintf(path, n, "%s", found);
	free(found);
	debuginfod_end(c);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "cli.h"
#include "diag.h"
#include "escape.h"
#include "fleet_hosts.h"

static bool valid_port(const char *p)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(p, &end, 10);
	return *p && !*end && !errno && v >= 1 && v <= 65535 && isdigit((unsigned char)*p);
}

int fleet_parse_host(const char *spec, struct fleet_host *h, char *err, size_t errlen)
{
	const char *at = strrchr(spec, '@'), *host = at ? at + 1 : spec, *colon;
	char user[128] = "", name[256];
	size_t ulen = at ? (size_t)(at - spec) : 0;

	memset(h, 0, sizeof(*h));
	/* A host that looks like an option would be one to ssh. */
	if (!*host || *spec == '-' || *host == '-' || ulen >= sizeof(user) ||
	    strlen(host) >= sizeof(name) || strpbrk(spec, " \t\r\n'\"\\;|&$`")) {
		snprintf(err, errlen, "invalid host \"%s\" (expected [user@]host[:port])", spec);
		return -1;
	}
	memcpy(user, spec, ulen);
	snprintf(name, sizeof(name), "%s", host);
	if (name[0] == '[') { /* [v6]:port */
		char *close = strchr(name, ']');

		if (!close || (close[1] && (close[1] != ':' || !valid_port(close + 2)))) {
			snprintf(err, errlen, "invalid host \"%s\" (expected [v6addr]:port)", spec);
			return -1;
		}
		if (close[1])
			snprintf(h->port, sizeof(h->port), "%s", close + 2);
		*close = '\0';
		memmove(name, name + 1, strlen(name));
	} else if ((colon = strchr(name, ':')) && !strchr(colon + 1, ':')) {
		if (!valid_port(colon + 1)) {
			snprintf(err, errlen, "invalid port in host \"%s\"", spec);
			return -1;
		}
		snprintf(h->port, sizeof(h->port), "%s", colon + 1);
		name[colon - name] = '\0';
	}
	if (!name[0]) {
		snprintf(err, errlen, "invalid host \"%s\"", spec);
		return -1;
	}
	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(h->dest, sizeof(h->dest), "%s%s%s", user, ulen ? "@" : "", name);
	return 0;
}

int fleet_parse_literal_host(const char *spec, struct fleet_host *h, char *err, size_t errlen)
{
	const unsigned char *p;

	memset(h, 0, sizeof(*h));
	for (p = (const unsigned char *) spec; *p; p++)
		if (*p <= ' ' || *p == 0x7f || strchr("'\"\\`$;|&", *p))
			break;
	if (!*spec || *spec == '-' || *p || strlen(spec) >= sizeof(h->name)) {
		snprintf(err, errlen, "invalid host \"%.200s\" (a name without blanks, quotes or "
			 "controls, not starting with -)", spec);
		return -1;
	}
	snprintf(h->name, sizeof(h->name), "%s", spec);
	snprintf(h->dest, sizeof(h->dest), "%s", spec);
	return 0;
}

static void add_host(struct fleet_host **hosts, size_t *n, size_t *cap, const char *spec,
		     bool literal, const char *where)
{
	char err[512];

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*hosts = realloc(*hosts, *cap * sizeof(**hosts));
		if (!*hosts)
			rbm_die("out of memory");
	}
	if ((literal ? fleet_parse_literal_host : fleet_parse_host)(spec, &(*hosts)[*n], err,
								    sizeof(err))) {
		char shown[600];

		rbm_die("%s: %s", where, term_escape(err, shown, sizeof(shown)));
	}
	(*n)++;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* One host a line, # comments. */
static void add_line(struct fleet_host **hosts, size_t *n, size_t *cap, char *line,
		     bool literal, const char *where)
{
	char *s = trim(line), *hash = strchr(s, '#');

	if (hash)
		*hash = '\0';
	s = trim(s);
	if (*s)
		add_host(hosts, n, cap, s, literal, where);
}

size_t fleet_hosts_from_text(char *text, bool literal, const char *where,
			     struct fleet_host **hosts)
{
	size_t n = 0, cap = 0;
	char *line, *save = NULL;

	*hosts = NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		add_line(hosts, &n, &cap, line, literal, where);
	if (!n)
		rbm_die("%s: no hosts in its output", where);
	return n;
}

size_t fleet_read_hosts(const char *arg, bool literal, struct fleet_host **hosts)
{
	size_t n = 0, cap = 0;
	char line[1024], *copy, *tok, *save = NULL;
	FILE *f = strchr(arg, ',') ? NULL : fopen(arg, "r");

	*hosts = NULL;
	if (f) {
		while (fgets(line, sizeof(line), f))
			add_line(hosts, &n, &cap, line, literal, arg);
		fclose(f);
		if (!n)
			rbm_die("%s: no hosts in it", arg);
		return n;
	}
	copy = strdup(arg);
	if (!copy)
		rbm_die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*trim(tok))
			add_host(hosts, &n, &cap, trim(tok), literal, "--hosts");
	free(copy);
	if (!n)
		rbm_die("--hosts: no hosts given");
	return n;
}

/* 'word', with each ' as '\'': safe in any POSIX shell, whatever the word holds. */
static void quote(FILE *out, const char *word)
{
	fputc('\'', out);
	for (; *word; word++)
		if (*word == '\'')
			fputs("'\\''", out);
		else
			fputc(*word, out);
	fputc('\'', out);
}

char *fleet_remote_command(const char *path, char *const *trace, int ntrace)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int i;

	if (!out)
		return NULL;
	/* ssh hands the remote shell one string: each word must stay one word. */
	quote(out, path);
	fputs(" --format json", out);
	for (i = 0; i < ntrace; i++) {
		fputc(' ', out);
		quote(out, trace[i]);
	}
	return fclose(out) ? NULL : buf;
}

char *fleet_version_command(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (!out)
		return NULL;
	quote(out, path);
	fputs(" --version", out);
	return fclose(out) ? NULL : buf;
}

/* The package file make deb builds for this machine, which the hosts should install too. */
#if defined(__x86_64__)
#define DEB_ARCH "amd64"
#elif defined(__aarch64__)
#define DEB_ARCH "arm64"
#else
#define DEB_ARCH "ARCH"
#endif
#define INSTALL_HINT "apt-get install ./rbmemtrace_" RBMEMTRACE_VERSION "_" DEB_ARCH ".deb"

/* " at PATH" when --remote-path named one, "" for the default (the remote PATH's). */
static const char *at_path(const char *remote_path, char *buf, size_t n)
{
	if (!strcmp(remote_path, "rbmemtrace"))
		return "";
	snprintf(buf, n, " at %s", remote_path);
	return buf;
}

/* "X.Y..." into its first two numbers; false if it does not start so. */
static bool major_minor(const char *version, unsigned long *major, unsigned long *minor)
{
	char *end;

	if (!isdigit((unsigned char) *version))
		return false;
	*major = strtoul(version, &end, 10);
	if (*end != '.' || !isdigit((unsigned char) end[1]))
		return false;
	*minor = strtoul(end + 1, &end, 10);
	return true;
}

/* The line of printed that starts with "rbmemtrace ", copied with its unprintables as '?'. */
static bool version_line(const char *printed, char *buf, size_t n)
{
	const char *p;
	size_t i, len;

	for (p = printed; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "rbmemtrace ", 11))
			break;
	if (!p || !*p)
		return false;
	len = strcspn(p, "\r\n");
	for (i = 0; i < len && i + 1 < n; i++)
		buf[i] = isprint((unsigned char) p[i]) ? p[i] : '?';
	buf[i] = '\0';
	return true;
}

int fleet_version_check(const char *host, const char *remote_path, const char *printed,
			const char *ours, char *reason, size_t n)
{
	unsigned long their_major, their_minor, our_major, our_minor;
	char line[128], path_buf[300];
	const char *theirs;

	if (!version_line(printed, line, sizeof(line))) {
		snprintf(reason, n,
			 "the rbmemtrace on %s%s printed no version (--version): "
			 "install the rbmemtrace package (" INSTALL_HINT ")",
			 host, at_path(remote_path, path_buf, sizeof(path_buf)));
		return -1;
	}
	theirs = line + 11;
	if (!major_minor(theirs, &their_major, &their_minor) ||
	    !major_minor(ours, &our_major, &our_minor)) {
		snprintf(reason, n,
			 "the rbmemtrace on %s%s says it is \"%s\", not a version this "
			 "rbmemtrace %s can compare: install the rbmemtrace package (" INSTALL_HINT
			 ")",
			 host, at_path(remote_path, path_buf, sizeof(path_buf)), line, ours);
		return -1;
	}
	if (their_major == our_major && their_minor == our_minor)
		return 0;
	/* A report's fields may change from one minor version to the next (0.x: any). */
	if (their_major < our_major || (their_major == our_major && their_minor < our_minor))
		snprintf(reason, n,
			 "rbmemtrace %s on %s is too old for this rbmemtrace %s (the "
			 "major.minor must match): install the rbmemtrace package (" INSTALL_HINT
			 ")",
			 theirs, host, ours);
	else
		snprintf(
		    reason, n,
		    "rbmemtrace %s on %s is newer than this rbmemtrace %s (the "
		    "major.minor must match): upgrade rbmemtrace here, or install this version "
		    "there (" INSTALL_HINT ")",
		    theirs, host, ours);
	return -1;
}

double fleet_default_timeout(char *const *trace, int ntrace, double margin, double dflt)
{
	const char *d = NULL;
	double v;
	int i;

	for (i = 0; i < ntrace; i++) {
		if ((!strcmp(trace[i], "-d") || !strcmp(trace[i], "--duration")) && i + 1 < ntrace)
			d = trace[++i];
		else if (!strncmp(trace[i], "--duration=", 11))
			d = trace[i] + 11;
		else if (!strncmp(trace[i], "-d", 2) && trace[i][2])
			d = trace[i] + 2;
		else if (!strcmp(trace[i], "--"))
			break; /* the command's own arguments */
	}
	return d && !cli_real(d, &v) && v > 0 ? v + margin : dflt;
}

const char *fleet_forbidden_option(char *const *trace, int ntrace)
{
	int i;

	for (i = 0; i < ntrace && strcmp(trace[i], "--"); i++)
		if (!strncmp(trace[i], "--format", 8) || !strncmp(trace[i], "--output", 8) ||
		    !strncmp(trace[i], "-o", 2))
			return trace[i];
	return NULL;
}

size_t fleet_report_start(const char *out, size_t len)
{
	size_t i;

	if (len >= 2 && out[0] == '{' && out[1] == '\n')
		return 0;
	/* The last "{" line: a report's inner objects are indented, its own brace is not. */
	for (i = len; i-- > 2;)
		if (out[i - 2] == '\n' && out[i - 1] == '{' && out[i] == '\n')
			return i - 1;
	return 0;
}

/* The line that says most: the last "rbmemtrace: ..." one, else the last of all. */
static void last_line(const char *tail, char *buf, size_t n)
{
	const char *p, *best = NULL, *last = NULL;
	size_t len;

	for (p = tail; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (*p == '\n' || *p == '\r')
			continue;
		last = p;
		if (!strncmp(p, "rbmemtrace: ", 12))
			best = p;
	}
	p = best ? best : last;
	if (!p) {
		snprintf(buf, n, "%s", "");
		return;
	}
	len = strcspn(p, "\r\n");
	snprintf(buf, n, "%.*s", (int)len, p);
}

void fleet_failure_reason(const struct fleet_outcome *o, char *buf, size_t n)
{
	int code = WIFEXITED(o->wait_status) ? WEXITSTATUS(o->wait_status) : -1;
	char line[400], path_buf[300];

	last_line(o->stderr_tail, line, sizeof(line));
	if (o->interrupted)
		snprintf(buf, n, "interrupted before it reported");
	else if (o->timed_out && o->version_check)
		snprintf(buf, n, "timed out after %.0f s asking %s --version", o->timeout,
			 o->remote_path);
	else if (o->timed_out)
		snprintf(buf, n, "timed out after %.0f s (--timeout)", o->timeout);
	else if (o->too_big)
		snprintf(buf, n, "its report was larger than %lu MiB", MAX_REPORT_MIB);
	else if (WIFSIGNALED(o->wait_status))
		snprintf(buf, n, "%s killed by signal %d", o->transport ? o->transport : "ssh",
			 WTERMSIG(o->wait_status));
	else if (code == 255 && !o->transport)
		snprintf(buf, n, "%s%s", strncmp(line, "ssh: ", 5) ? "ssh: " : "",
			 *line ? line : "connection failed");
	else if (code == 127) /* the remote shell's (or the container's) "not found" */
		snprintf(buf, n,
			 "rbmemtrace is not installed on %s%s: install the rbmemtrace "
			 "package (" INSTALL_HINT ")",
			 o->host, at_path(o->remote_path, path_buf, sizeof(path_buf)));
	else if (code == 126)
		snprintf(buf, n, "cannot run %s on the host%s%s%s", o->remote_path,
			 *line ? " (" : "", line, *line ? ")" : "");
	else if (code == FLEET_EXIT_NO_SSH)
		snprintf(buf, n, "%s", *line ? line : "cannot run ssh");
	else if (code != 0 && o->transport && strncmp(line, "rbmemtrace: ", 12))
		/* Not rbmemtrace's own line: the transport's (no such pod, no such container). */
		snprintf(buf, n, "%s exited with status %d%s%s", o->transport, code,
			 *line ? ": " : "", line);
	else if (code != 0)
		snprintf(buf, n, "rbmemtrace exited with status %d%s%s", code, *line ? ": " : "",
			 line);
	else if (o->read_error)
		snprintf(buf, n, "malformed report: %s", o->read_error);
	else
		snprintf(buf, n, "no report%s%s", *line ? ": " : "", line);
}

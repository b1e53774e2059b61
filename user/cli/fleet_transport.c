// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE /* pipe2 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "clock.h"
#include "diag.h"
#include "escape.h"
#include "fleet_transport.h"

void fleet_words_free(struct fleet_words *w)
{
	for (int i = 0; i < w->n; i++)
		free(w->v[i]);
	w->n = 0;
	w->v[0] = NULL;
}

/* One word from *p on (blanks before it skipped) into buf; 1, 0 at the end, -1 with err. */
static int next_word(const char **p, char *buf, char *err, size_t errlen)
{
	const char *s = *p;
	size_t len = 0;
	char quote = 0;

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (!*s)
		return 0;
	for (; *s && (quote || (*s != ' ' && *s != '\t' && *s != '\n')); s++) {
		if (quote == '\'' && *s == '\'') {
			quote = 0;
		} else if (quote == '"' && *s == '"') {
			quote = 0;
		} else if (!quote && (*s == '\'' || *s == '"')) {
			quote = *s;
		} else if (*s == '\\' && quote != '\'' && s[1] &&
			   (!quote || s[1] == '"' || s[1] == '\\')) {
			buf[len++] = *++s;
		} else {
			buf[len++] = *s;
		}
	}
	if (quote) {
		snprintf(err, errlen, "unclosed %c quote", quote);
		return -1;
	}
	buf[len] = '\0';
	*p = s;
	return 1;
}

int fleet_split_words(const char *s, struct fleet_words *w, char *err, size_t errlen)
{
	char *buf = malloc(strlen(s) + 1);
	int r;

	w->n = 0;
	w->v[0] = NULL;
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	while ((r = next_word(&s, buf, err, errlen)) > 0) {
		if (w->n == FLEET_MAX_WORDS) {
			snprintf(err, errlen, "more than %d words", FLEET_MAX_WORDS);
			r = -1;
			break;
		}
		w->v[w->n] = strdup(buf);
		if (!w->v[w->n]) {
			snprintf(err, errlen, "out of memory");
			r = -1;
			break;
		}
		w->v[++w->n] = NULL;
	}
	free(buf);
	if (!r && !w->n) {
		snprintf(err, errlen, "no command in it");
		r = -1;
	}
	if (r < 0)
		fleet_words_free(w);
	return r < 0 ? -1 : 0;
}

bool fleet_words_have_host(const struct fleet_words *w)
{
	for (int i = 0; i < w->n; i++)
		for (const char *p = w->v[i]; *p; p++)
			if (*p == '%' && p[1] == 'h')
				return true;
			else if (*p == '%' && p[1] == '%')
				p++;
	return false;
}

bool fleet_via_is_ssh(const struct fleet_words *w)
{
	const char *slash = w->n ? strrchr(w->v[0], '/') : NULL;

	return w->n && !strcmp(slash ? slash + 1 : w->v[0], "ssh");
}

char *fleet_subst_host(const char *word, const char *host)
{
	size_t n = 1;
	const char *p;
	char *buf, *q;

	for (p = word; *p; p++, n++)
		if (*p == '%' && p[1] == 'h')
			n += strlen(host);
	buf = malloc(n);
	if (!buf)
		return NULL;
	for (p = word, q = buf; *p; p++) {
		if (*p == '%' && p[1] == 'h') {
			q = stpcpy(q, host);
			p++;
		} else if (*p == '%' && p[1] == '%') {
			*q++ = '%';
			p++;
		} else {
			*q++ = *p;
		}
	}
	*q = '\0';
	return buf;
}

void fleet_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

char **fleet_host_argv(const struct fleet_words *via, int from, const char *host,
		       char *const *cmd, int ncmd)
{
	char **argv = calloc(via->n - from + ncmd + 1, sizeof(*argv));
	int i, n = 0;

	if (!argv)
		return NULL;
	for (i = from; i < via->n; i++)
		if (!(argv[n++] = fleet_subst_host(via->v[i], host)))
			goto oom;
	for (i = 0; i < ncmd; i++)
		if (!(argv[n++] = strdup(cmd[i])))
			goto oom;
	return argv;
oom:
	fleet_argv_free(argv);
	return NULL;
}

int fleet_via_parse(const char *tmpl, struct fleet_via *v, char *err, size_t errlen)
{
	char why[128];

	memset(v, 0, sizeof(*v));
	if (fleet_split_words(tmpl, &v->words, why, sizeof(why))) {
		snprintf(err, errlen, "--via '%.200s': %s", tmpl, why);
		return -1;
	}
	if (!fleet_words_have_host(&v->words)) {
		snprintf(err, errlen,
			 "--via '%.200s' has no %%h: where would the host go? (e.g. 'podman exec "
			 "%%h')", tmpl);
		fleet_words_free(&v->words);
		return -1;
	}
	v->ssh = fleet_via_is_ssh(&v->words);
	return 0;
}

void fleet_cmd_free(struct fleet_cmd *c)
{
	free(c->shell);
	free(c->words);
	memset(c, 0, sizeof(*c));
}

int fleet_make_commands(const char *path, char *const *trace, int ntrace,
			struct fleet_cmd *version, struct fleet_cmd *trace_cmd)
{
	static char fmt[] = "--format", json[] = "json", ver[] = "--version";
	struct fleet_cmd *t = trace_cmd, *v = version;

	memset(t, 0, sizeof(*t));
	memset(v, 0, sizeof(*v));
	t->shell = fleet_remote_command(path, trace, ntrace);
	v->shell = fleet_version_command(path);
	t->words = calloc(ntrace + 4, sizeof(char *));
	v->words = calloc(3, sizeof(char *));
	if (!t->shell || !v->shell || !t->words || !v->words) {
		fleet_cmd_free(t);
		fleet_cmd_free(v);
		return -ENOMEM;
	}
	t->words[t->nwords++] = (char *) path;
	t->words[t->nwords++] = fmt;
	t->words[t->nwords++] = json;
	memcpy(t->words + t->nwords, trace, ntrace * sizeof(char *));
	t->nwords += ntrace;
	v->words[v->nwords++] = (char *) path;
	v->words[v->nwords++] = ver;
	return 0;
}

/* Appends a copy of each word to argv (at *n); false when out of memory. */
static bool push(char **argv, int *n, const char *word)
{
	return (argv[(*n)++] = strdup(word)) != NULL;
}

/* ssh -o BatchMode=yes [-o OPT]... -o ConnectTimeout=N [-p PORT] [WORDS] DEST 'PATH' ... */
static char **ssh_argv(const struct fleet_via *v, const struct fleet_host *h, double timeout,
		       const struct fleet_cmd *c)
{
	char **argv = calloc(2 * v->nssh_options + v->words.n + 12, sizeof(char *));
	char connect_timeout[64];
	int i, n = 0;
	bool ok;

	if (!argv)
		return NULL;
	snprintf(connect_timeout, sizeof(connect_timeout), "ConnectTimeout=%d",
		 timeout < 30 ? (int) timeout + 1 : 30);
	/* BatchMode: never a password prompt, fail instead; the user's options then: for
	 * ssh the first value given wins. */
	ok = push(argv, &n, v->words.v[0]) && push(argv, &n, "-o") &&
	     push(argv, &n, "BatchMode=yes");
	for (i = 0; ok && i < v->nssh_options; i++)
		ok = push(argv, &n, "-o") && push(argv, &n, v->ssh_options[i]);
	ok = ok && push(argv, &n, "-o") && push(argv, &n, connect_timeout);
	if (ok && h->port[0])
		ok = push(argv, &n, "-p") && push(argv, &n, h->port);
	for (i = 1; ok && i < v->words.n; i++) /* the template's words, %h the destination */
		ok = (argv[n++] = fleet_subst_host(v->words.v[i], h->dest)) != NULL;
	ok = ok && push(argv, &n, c->shell);
	if (!ok) {
		fleet_argv_free(argv);
		return NULL;
	}
	return argv;
}

char **fleet_exec_argv(const struct fleet_via *v, const struct fleet_host *h, double timeout,
		       const struct fleet_cmd *c)
{
	if (v->ssh)
		return ssh_argv(v, h, timeout, c);
	return fleet_host_argv(&v->words, 0, h->name, c->words, c->nwords);
}

void fleet_exec(const struct fleet_via *v, const struct fleet_host *h, double timeout,
		const struct fleet_cmd *c)
{
	char **argv = fleet_exec_argv(v, h, timeout, c);
	int devnull = open("/dev/null", O_RDONLY);

	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	if (argv)
		execvp(argv[0], argv);
	fprintf(stderr, "cannot run %s: %s\n", v->words.v[0], strerror(argv ? errno : ENOMEM));
	_exit(FLEET_EXIT_NO_SSH); /* a forked child, after a failed exec */
}

void fleet_say_command(const struct fleet_via *v, const struct fleet_host *h,
		       const struct fleet_cmd *c)
{
	char **argv, line[2048], shown[4096];
	size_t len = 0;

	if (v->ssh) {
		rbm_info("%s: %s%s%s %s %s", h->name, v->words.v[0], h->port[0] ? " -p " : "",
			 h->port, h->dest, c->shell);
		return;
	}
	argv = fleet_exec_argv(v, h, 0, c);
	for (char **a = argv; a && *a && len < sizeof(line); a++)
		len += snprintf(line + len, sizeof(line) - len, "%s%s", a == argv ? "" : " ", *a);
	rbm_info("%s: %s", h->name, argv ? term_escape(line, shown, sizeof(shown)) : "");
	fleet_argv_free(argv);
}

/* The last non-empty line of s, escaped, into buf. */
static void last_line(const char *s, char *buf, size_t n)
{
	const char *p, *last = NULL;
	char line[512];
	size_t len;

	for (p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p != '\n' && *p != '\r')
			last = p;
	len = last ? strcspn(last, "\r\n") : 0;
	snprintf(line, sizeof(line), "%.*s", (int) len, last ? last : "");
	term_escape(line, buf, n);
}

/* The child of fleet_capture: its own group, stdin from /dev/null. */
static void capture_child(char *const *argv, int out, int err)
{
	int devnull = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	execvp(argv[0], argv);
	fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127); /* a forked child, after a failed exec */
}

/* Reads fd into buf (cap bytes at most, the rest dropped); false at its end. */
static bool drain(int fd, char *buf, size_t *len, size_t cap)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));
	size_t take;

	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0)
		return false;
	take = *len + n > cap ? cap - *len : (size_t) n;
	memcpy(buf + *len, tmp, take);
	*len += take;
	buf[*len] = '\0';
	return true;
}

/* Waits for pid's output and end, bounded; the exit status, or -1 if killed late. */
static int capture_wait(pid_t pid, int fds[2], char *out, size_t *olen, size_t max,
			char *errbuf, size_t *elen, size_t emax, double timeout)
{
	double deadline = now_seconds() + timeout;
	int status = 0;

	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd p[2] = {{.fd = fds[0], .events = POLLIN},
				      {.fd = fds[1], .events = POLLIN}};

		if (now_seconds() > deadline) {
			kill(-pid, SIGKILL);
			waitpid(pid, NULL, 0);
			for (int i = 0; i < 2; i++)
				if (fds[i] >= 0)
					close(fds[i]);
			return -1;
		}
		if (poll(p, 2, 200) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (p[i].revents &&
			    !(i ? drain(fds[1], errbuf, elen, emax) : drain(fds[0], out, olen, max))) {
				close(fds[i]);
				fds[i] = -1;
			}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

int fleet_capture(char *const *argv, double timeout, size_t max, char **out, char *err,
		  size_t errlen)
{
	int o[2] = {-1, -1}, e[2] = {-1, -1}, fds[2], status;
	char errtail[4096] = "", line[600];
	size_t olen = 0, elen = 0;
	pid_t pid;

	*out = malloc(max + 1);
	if (!*out || pipe2(o, O_CLOEXEC) || pipe2(e, O_CLOEXEC)) {
		snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(errno ?: ENOMEM));
		goto fail;
	}
	(*out)[0] = '\0';
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		capture_child(argv, o[1], e[1]);
	setpgid(pid, pid);
	close(o[1]);
	close(e[1]);
	fds[0] = o[0];
	fds[1] = e[0];
	status = capture_wait(pid, fds, *out, &olen, max, errtail, &elen, sizeof(errtail) - 1,
			      timeout);
	last_line(errtail, line, sizeof(line));
	if (status == -1)
		snprintf(err, errlen, "%s did not end in %.0f s", argv[0], timeout);
	else if (WIFSIGNALED(status))
		snprintf(err, errlen, "%s killed by signal %d", argv[0], WTERMSIG(status));
	else if (WEXITSTATUS(status))
		snprintf(err, errlen, "%s exited with status %d%s%s", argv[0],
			 WEXITSTATUS(status), *line ? ": " : "", line);
	else if (olen == max)
		snprintf(err, errlen, "%s printed more than %zu bytes", argv[0], max);
	else
		return 0;
	free(*out);
	*out = NULL;
	return -1;
fail:
	for (int i = 0; i < 2; i++) {
		if (o[i] >= 0)
			close(o[i]);
		if (e[i] >= 0)
			close(e[i]);
	}
	free(*out);
	*out = NULL;
	return -1;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The two pages of rbmemtrace serve that are not profiles: the index of
 * /debug/pprof/ (HTML, as Go's lists its profiles) and /healthz.  A
 * command name comes from the target: it is escaped for HTML.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_route.h"
#include "http_server.h"

struct text {
	char *buf;
	size_t len, cap;
	bool oom;
};

static void append(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt,
			      ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if (t->buf && t->len + (size_t) n < t->cap) {
			t->len += (size_t) n;
			return;
		}
		{
			size_t want = (t->cap ? t->cap * 2 : 4096) + (size_t) n;
			char *b = realloc(t->buf, want);

			if (!b) {
				t->oom = true;
				return;
			}
			t->buf = b;
			t->cap = want;
		}
	}
}

static char *done(struct text *t)
{
	if (t->oom) {
		free(t->buf);
		return NULL;
	}
	return t->buf;
}

char *http_index_page(const struct http_proc_info *procs, size_t n, double every)
{
	char cmd[256], ruby[96], state[300];
	struct text t = {};
	size_t i;

	append(&t,
	       "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rbmemtrace serve"
	       "</title></head>\n<body>\n<h1>rbmemtrace serve</h1>\n<p>Heap profiles of the "
	       "Ruby processes traced here, a new one every %g s (gzipped pprof: <code>go tool "
	       "pprof -top URL</code>).</p>\n<ul>\n<li><a href=\"heap\">heap</a>: every "
	       "process (<code>?seconds=N</code>: a fresh profile of the next N seconds)</li>\n",
	       every);
	for (i = 0; i < n; i++)
		append(&t,
		       "<li><a href=\"heap?pid=%d\">heap?pid=%d</a>: %s, Ruby %s, %s, "
		       "profile of period %llu</li>\n",
		       procs[i].pid, procs[i].pid, html_escape(procs[i].command, cmd, sizeof(cmd)),
		       html_escape(procs[i].ruby_version, ruby, sizeof(ruby)),
		       html_escape(procs[i].state, state, sizeof(state)),
		       (unsigned long long) procs[i].period);
	append(&t, "<li><a href=\"/healthz\">/healthz</a></li>\n</ul>\n</body></html>\n");
	return done(&t);
}

char *http_health_text(const struct http_proc_info *procs, size_t n)
{
	struct text t = {};
	char state[300];
	size_t i;

	append(&t, "ok\n");
	for (i = 0; i < n; i++)
		append(&t, "PID %d: %s\n", procs[i].pid,
		       html_escape(procs[i].state, state, sizeof(state)));
	return done(&t);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "diag.h"
#include "holders.h"
#include "targets.h"
#include "trace_one.h"

int trace_one_open(struct session *s, const struct trace_options *opt, char *err, size_t errlen)
{
	return session_open(s, opt, err, errlen);
}

int trace_one_run(struct session *s, volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	int ret = session_start(s, err, errlen);

	if (ret)
		return ret;
	/* A launched command is ours, held until it runs: only -p's target may be stopped. */
	if (!s->launched)
		target_say_stopped(s->target.pid, false);
	ret = session_run(s, stop);
	if (ret)
		snprintf(err, errlen, "%s", s->error);
	return ret;
}

int trace_one_report(struct session *s, bool retainers, struct report *r, char *err,
		     size_t errlen)
{
	session_finish(s);
	if (!s->launched && !s->target_exited)
		target_say_stopped(s->target.pid, true);
	if (session_report(s, r) || holders_add_end(s, r, retainers)) {
		snprintf(err, errlen, "out of memory building the report");
		return -ENOMEM;
	}
	return 0;
}

void trace_one_watch(struct session *s, struct report *r, volatile sig_atomic_t *stop)
{
	if (s->opt.watch_seconds > 0 && r->verdict && !s->launched)
		session_watch_verdict(s, r->verdict, s->opt.watch_seconds, stop);
	else
		session_watch_fill(s, r->verdict);
}

int trace_one_empty_probes(struct session *s, volatile sig_atomic_t *stop, char *err,
			   size_t errlen)
{
	return session_run_empty_probes(s, stop, err, errlen);
}

int trace_one_exit_status(const struct session *s)
{
	return session_exit_status(s);
}

void trace_one_close(struct session *s)
{
	session_close(s);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verdict_run.h"
#include "diag.h"
#include "targets.h"
#include "trace_one.h"
#include "why_select.h"

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

/*
 * Each leak suspect's top retainer path, and the leak verdict, read from
 * the target the trace leaves running, in one walk: who holds what it
 * keeps.  Said, never fatal: a Ruby whose refs layout cannot be proved has
 * its report without them.
 */
static int add_retainers(struct session *s, struct report *r, bool verdict)
{
	const char *classes[MAX_SUSPECTS];
	struct why_report why = {0};
	struct verdict_end e;
	char err[512], line[2048];
	size_t i, j;

	if (verdict && !(r->verdict = session_verdict_open(s, &e)))
		return -ENOMEM;
	if (r->verdict && r->verdict->none)
		verdict = false;
	if (!verdict && !r->nsuspects)
		return 0;
	for (i = 0; i < r->nsuspects; i++)
		classes[i] = r->suspects[i].class_name;
	if (why_suspect_paths(&s->target, classes, r->nsuspects, verdict ? verdict_on_graph : NULL,
			       &e, &why, err, sizeof(err))) {
		rbm_warn("no retainer paths for the leak suspects: %s", err);
		if (verdict)
			r->verdict->none = verdict_intern(r->verdict, err);
		why_free(&why);
		return 0;
	}
	if (verdict)
		verdict_take_paths(&e, &why);
	for (i = 0; i < why.ntargets; i++) {
		const struct why_target *t = &why.targets[i];

		if (!t->npaths)
			continue;
		why_path_line(&t->paths[0], line, sizeof(line));
		for (j = 0; j < r->nsuspects; j++)
			if (!strcmp(r->suspects[j].class_name, t->class_name))
				break;
		if (j < r->nsuspects &&
		    report_add_retainer(r, t->class_name, t->paths[0].root_kind, line,
					t->paths[0].count, t->count)) {
			why_free(&why);
			return -ENOMEM;
		}
	}
	why_free(&why);
	return 0;
}

int trace_one_report(struct session *s, bool retainers, struct report *r, char *err,
		     size_t errlen)
{
	session_finish(s);
	if (!s->launched && !s->target_exited)
		target_say_stopped(s->target.pid, true);
	if (session_report(s, r) ||
	    (!s->launched && !s->target_exited && retainers &&
	     add_retainers(s, r, !s->opt.no_verdict))) {
		snprintf(err, errlen, "out of memory building the report");
		return -ENOMEM;
	}
	return 0;
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

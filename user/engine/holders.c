// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* holders.h: one walk at a trace's end for the suspects' paths and the leak verdict. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"
#include "holders.h"
#include "verdict_run.h"
#include "why_select.h"

/*
 * Each leak suspect's top retainer path, and the leak verdict, read from
 * the target the trace leaves running, in one walk: who holds what it
 * keeps.  Said, never fatal: a Ruby whose refs layout cannot be proved has
 * its report without them.
 */
/* Over ~60 lines: the suspects' paths and the verdict share the walk and its error. */
static int add_with(struct session *s, struct report *r, bool verdict, struct verdict_end *e)
{
	const char *classes[MAX_SUSPECTS];
	struct why_report why = {0};
	char err[512], line[2048];
	size_t i, j;

	if (r->verdict && r->verdict->none)
		verdict = false;
	if (!verdict && !r->nsuspects)
		return 0;
	for (i = 0; i < r->nsuspects; i++)
		classes[i] = r->suspects[i].class_name;
	if (why_suspect_paths(&s->target, classes, r->nsuspects, verdict ? verdict_on_graph : NULL,
			       e, &why, err, sizeof(err))) {
		rbm_warn("no retainer paths for the leak suspects: %s", err);
		if (verdict)
			r->verdict->none = verdict_intern(r->verdict, err);
		why_free(&why);
		return 0;
	}
	if (verdict)
		verdict_take_paths(e, &why);
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

int holders_add_end(struct session *s, struct report *r, bool retainers)
{
	if (s->snap.exit_verdict) { /* read at its exit, while it was stopped */
		r->verdict = s->snap.exit_verdict;
		s->snap.exit_verdict = NULL;
		return 0;
	}
	if (s->launched || s->target_exited || s->at.held || !retainers)
		return 0;
	return holders_add(s, r, !s->opt.no_verdict);
}

int holders_add(struct session *s, struct report *r, bool verdict)
{
	struct verdict_end e;

	if (verdict && !(r->verdict = session_verdict_open(s, &e)))
		return -ENOMEM;
	return add_with(s, r, verdict, &e);
}

int holders_add_period(struct session *s, struct report *r, const struct verdict_base *base,
		       const struct census *start, const struct census *end,
		       struct verdict_base *next_base)
{
	struct verdict_end e;

	if (!(r->verdict = session_verdict_open_at(s, &e, base, start, end)))
		return -ENOMEM;
	e.next_base = next_base;
	return add_with(s, r, true, &e);
}

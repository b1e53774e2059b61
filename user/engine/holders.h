/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who holds what a trace's target keeps, read as the trace ends while the
 * target runs on: each leak suspect's top retainer path and the leak
 * verdict (probe/verdict_run.h), from one walk of the heap.  For the
 * reports of -p, several -p, --all and --match.
 */
#ifndef RBM_HOLDERS_H
#define RBM_HOLDERS_H
#include <stdbool.h>
#include "report.h"
#include "session.h"

/*
 * Adds them to r, s's finished report (verdict: the verdict too).  Said,
 * never fatal: a layout not proved leaves r without them (the verdict
 * saying why).  0, or -ENOMEM.
 */
int holders_add(struct session *s, struct report *r, bool verdict);
/*
 * A trace's end: the verdict a launched (or held) command's exit gave, or
 * holders_add for a target still running (retainers: the suspects' paths
 * are asked for).  0, or -ENOMEM.
 */
int holders_add_end(struct session *s, struct report *r, bool retainers);
/*
 * A period's (trace --every, serve): the verdict from the last period's
 * walk (base) and census (start) to this one's census (end), this walk
 * kept in next_base for the next period.  0, or -ENOMEM.
 */
int holders_add_period(struct session *s, struct report *r, const struct verdict_base *base,
		       const struct census *start, const struct census *end,
		       struct verdict_base *next_base);

#endif

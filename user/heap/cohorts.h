/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Birth cohorts of a continuous trace: per heap slot of a period's census,
 * the period its live object was born in, carried from one period's census
 * to the next by their slot comparison (census_mark_new): an object that
 * was there keeps its period, a new one gets the current one, and objects
 * already in the heap at the trace's start are period 0.  Two bytes a slot
 * (periods past COHORT_MAX count as COHORT_MAX).
 */
#ifndef RBM_COHORTS_H
#define RBM_COHORTS_H
#include <stddef.h>
#include <stdint.h>
#include "census.h"
#include "report.h"

#define COHORT_MAX 65535

struct cohorts {
	uint16_t *born; /* per slot of its census, pages in the census's order (by start) */
	size_t nslots;
};

/*
 * now's cohorts (out) from before's (prev: NULL when before is the trace's
 * start, whose objects are all period 0): now's live slots are marked new
 * against before (census_mark_new, old_age as there), the new ones born
 * in `period`, the others in the period before's slot said; an object the
 * comparison calls old (by its age) whose slot held nothing live of its
 * class at before counts as period 0 (already there, not known when).  0, -EINVAL (either census
 * without its slots, or prev not of before), -ENOMEM.
 */
int cohorts_carry(const struct census *before, const struct cohorts *prev, struct census *now,
		  unsigned int old_age, uint64_t period, struct cohorts *out);
void cohorts_free(struct cohorts *co);

/*
 * Each class row of r that now's classes count as (census_name_classes
 * named them): its live objects by birth period (class_row.born, periods
 * 0 to `period`).  Rows r has not (--class) are left out.  0 or -ENOMEM.
 */
int cohorts_to_report(const struct census *now, const struct cohorts *co, uint64_t period,
		      struct report *r);

#endif

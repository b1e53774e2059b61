/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Periods of a continuous trace (trace --every, serve): each period's
 * report is the trace as of its end, with a heap census taken then, and
 * what was allocated during the period alone, found by subtracting the
 * report of the period's start, matched by names (period.c).  Its profile
 * (period_rows.c) puts the census's exact in-use count and bytes of every
 * class on the call paths the traced objects give, scaled within them.
 */
#ifndef RBM_PERIOD_H
#define RBM_PERIOD_H
#include <stddef.h>
#include <stdint.h>
#include "model_ops.h"
#include "report.h"

/*
 * Fills now's period (number, time and duration from info) and its rows'
 * period counts: what each class, site and call path allocated since prev,
 * the finished report of the period's start (NULL: the trace's start, when
 * every count was 0).  Under sampling the period's traced weight is scaled
 * to Ruby's own count of the period's allocations, apportioned so that the
 * classes sum to it exactly.  Call on a finished report; 0 or -ENOMEM.
 */
int report_set_period(struct report *now, const struct report *prev,
		      const struct period_info *info);

/*
 * The samples of a period's profile: per class, the census's live objects
 * and bytes (exact) spread over its call paths by their traced objects
 * still alive (estimates under sampling), scaled down when they add up to
 * more than the census holds; the rest under the class alone.  Allocated:
 * during the period.  Free *rows.  0 or -ENOMEM.
 */
int period_profile_rows(const struct report *r, struct profile_row **rows, size_t *n);

/*
 * n whole numbers that sum to total exactly, in proportion to weights
 * (the largest remainders get the units rounding left); weights that are
 * all 0 share it evenly.
 */
void apportion(uint64_t total, const double *weights, size_t n, uint64_t *out);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the model computes for the writers of a model of several processes
 * (merge, fleet): their summary, and the rows of a pprof profile.
 */
#ifndef RBM_MODEL_OPS_H
#define RBM_MODEL_OPS_H
#include <stdint.h>
#include "report.h"

/*
 * Sums every process of m into sum (zeroed first) by report_merge and
 * finishes it: the "summary" of merge and fleet.  0 or -ENOMEM.
 */
int model_summary(const struct model *m, struct report *sum);

/*
 * One pprof sample: objects of a class allocated along a call path, split
 * by age.  Under sampling, the counts are the estimates (est_*).
 */
#define PROFILE_AGE_UNKNOWN (-1)
struct profile_row {
	const struct stack *stack; /* NULL: the class's objects no call path covers */
	const char *class_name;
	int64_t age; /* GCs survived, the bucket's lower bound; 0: young; -1: unknown */
	uint64_t alloc_objects, alloc_bytes;
	uint64_t inuse_objects, inuse_bytes;
};

/*
 * An object's size when the census did not measure its class: one slot of
 * Ruby 3.1's heap (RVALUE, 40 bytes on 64-bit), without what it owns.
 */
#define PROFILE_SLOT_BYTES 40

/*
 * The samples of one report: per call path and class, allocated objects and
 * young ones at age 0, then the retained in their age buckets; what no call
 * path covers (paths off, dropped, filtered) under the class alone.  Bytes are
 * the census's bytes per object of the class, else PROFILE_SLOT_BYTES.
 * A period's report (r->period.on) gives its period's samples instead
 * (period.h).  Free *rows.  0 or -ENOMEM.
 */
int report_profile_rows(const struct report *r, struct profile_row **rows, size_t *n);

/* Hosts a fleet run got no report from, and why: kept in the model's output. */
struct host_failure {
	char *host;
	char *reason;
};

struct host_failures {
	struct host_failure *v;
	size_t n, cap;
};

/* Copies host and reason; 0 or -ENOMEM. */
int host_failures_add(struct host_failures *f, const char *host, const char *reason);
void host_failures_free(struct host_failures *f);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one record of a count, from the BPF map to the report: what the
 * probes and the tracker saw of one class along one call path, as raw
 * facts in the units they were counted in.  The tracker fills it (summing
 * the per-CPU class_counts of the BPF side and its passes' verdicts); the
 * report adds it to a class, a site and a path (report_add_tally) and
 * derives every other figure from it: freed, the weighted counts,
 * estimates, suspects.
 */
#ifndef RBM_TALLY_H
#define RBM_TALLY_H
#include <stdint.h>

/*
 * How many GCs the retained objects survived, in buckets: 1, 2, 3-4, 5-8,
 * 9-16, 17-32, 33-64, 65 and more.  A leak is old.
 */
#define AGE_BUCKETS 8
struct ages {
	uint64_t n[AGE_BUCKETS];
};
/* The bucket of an object that survived `gcs` GCs (>= 1). */
unsigned age_bucket(uint64_t gcs);
/* The fewest GCs an object of bucket b survived. */
uint64_t age_bucket_low(unsigned b);

struct tally {
	uint64_t allocated;    /* recorded by the allocation probes */
	uint64_t untracked;    /* of those, not tracked: the live-object map was full */
	uint64_t retained;     /* alive, and survived at least one GC since allocated */
	uint64_t young;	       /* alive, allocated since the last GC started */
	uint64_t not_followed; /* gone from their slot across a GC.compact: moved or freed */
	struct ages ages;      /* GCs the retained survived */
	/*
	 * Under sampling, the same weighed by what each record stands for
	 * (1 / the share its window recorded), in RBM_WEIGHT_ONE units.
	 */
	uint64_t w_allocated, w_retained, w_young;
	uint64_t window_bits; /* the windows it was traced in: bit (window number % 64) */
};

#endif

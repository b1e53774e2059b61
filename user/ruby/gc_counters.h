/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ruby's own GC counters, read from the target's objspace: the one reader
 * of them (the census, sampling, the proof and top all use it).  GC.stat's
 * totals are objspace-wide in 3.1 and the sums of the size pools' counters
 * from 3.2 on.
 */
#ifndef RBM_GC_COUNTERS_H
#define RBM_GC_COUNTERS_H
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"

struct gc_counters {
	uint64_t gc_count;  /* GC.count */
	uint32_t flags;	    /* the objspace flags word (phase, compaction) */
	uint64_t allocated; /* GC.stat(:total_allocated_objects) */
	uint64_t freed;	    /* GC.stat(:total_freed_objects) */
};

/*
 * Reads them.  The count is read before the flags: a GC bumps it before it
 * marks, with during_gc set, so a count that includes a GC comes with flags
 * that show it under way, or its marking done.  0, or -errno.
 */
int gc_counters_read(pid_t pid, const struct ruby_layout *l, uint64_t objspace,
		     struct gc_counters *out);

/* Where total_allocated_objects is, for reading it from BPF: an address and pool stride. */
struct gc_allocated_counter {
	uint64_t addr;	 /* the (first pool's) counter; 0: none */
	uint32_t pools;	 /* 0: one objspace-wide counter; else pools to sum */
	uint32_t stride; /* bytes between the pools' counters */
};
void gc_counters_allocated_at(const struct ruby_layout *l, uint64_t objspace,
			      struct gc_allocated_counter *out);
/* total_freed_objects the same way (the same pools and stride). */
void gc_counters_freed_at(const struct ruby_layout *l, uint64_t objspace,
			  struct gc_allocated_counter *out);

#endif

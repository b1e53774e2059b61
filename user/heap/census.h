/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Heap census: every slot of a running Ruby's object heap, read from outside
 * (process_vm_readv, no ptrace, no probe: the target keeps running) and
 * tallied per class.  Pages are streamed in batches, so the tracer's memory
 * grows with the number of slots by one byte each (the per-slot state kept for
 * census_slot_state), not with the heap's size.
 *
 * The target runs while it is read, so a census of a busy process is a
 * smear over its duration, not a snapshot: objects allocated or freed during
 * the walk may be counted or missed.  gc_count_changed says a GC ran meanwhile.
 */
#ifndef RBM_CENSUS_H
#define RBM_CENSUS_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "heap_layout.h"
#include "slots.h"
#include "u64map.h"

/* Keyed as the tracker keys objects: class_key_id(klass, kind) (tracker.h). */
struct census_class {
	uint64_t klass; /* RBasic.klass; 0 for imemos and hidden objects */
	uint32_t kind;	/* RBM_KIND(type, imemo) */
	uint64_t live;
	uint64_t bytes;	  /* of the live ones: slot + owned heap memory (slots.h) */
	uint64_t old;	  /* live with age == old_age */
	uint64_t garbage; /* dead, not yet swept */
	uint64_t age[4];  /* live by GCs survived (3 = old in 3.1) */
};

/* One heap page of the snapshot, for census_slot_state. */
struct census_page {
	uint64_t start;	    /* first slot */
	uint32_t nslots;
	uint32_t slot_size;
	uint8_t *slot;	    /* per slot: enum slot_state | age << 4 */
};

struct census {
	uint64_t pages, slots, live, free, garbage, zombies, moved;
	uint64_t unjudged;     /* counted live while marks were not final */
	uint64_t bad_pages;    /* pages skipped: unreadable or failing the layout checks */
	uint64_t types[32];    /* live per builtin type (for ObjectSpace.count_objects) */
	bool marking, sweeping; /* GC phase seen at the start or the end of the walk */
	bool gc_count_changed;	/* a GC ran during the walk */
	double seconds;
	uint64_t gc_count;     /* GC.count at the start */
	uint64_t total_allocated, total_freed; /* GC.stat at the start */
	struct u64map classes; /* class_key_id(klass, kind) -> struct census_class * */

	struct census_page *page; /* sorted by start */
	size_t npage;
};

/*
 * Walks the heap of pid, whose rb_objspace_t is at objspace.  Returns 0 or
 * -errno (-ESRCH: the target is gone; -EINVAL: the layout does not fit this
 * process, reason in err).  census_free releases it either way.
 */
int census_take(struct census *c, pid_t pid, const struct heap_layout *hl, uint64_t objspace,
		char *err, size_t errlen);

/* The state of the slot at addr in this census (SLOT_UNKNOWN if no page holds it). */
enum slot_state census_slot_state(const struct census *c, uint64_t addr, unsigned int *age);

/* Adds one slot to its class's tally (what census_take does per slot). */
void census_class_add(struct census_class *cc, enum slot_state st, unsigned int age,
		      uint64_t bytes, unsigned int old_age);

void census_free(struct census *c);

#endif

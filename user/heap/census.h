/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Heap census: every slot of a running Ruby's object heap, read from outside
 * (process_vm_readv, no ptrace, no probe: the target keeps running) and
 * tallied per class.  Pages are streamed in batches (census_walk.h), by a
 * second thread too on a large heap and a machine of 3 cores or more, so the
 * tracer's memory does not grow with the heap's size, except by one byte a
 * slot when the per-slot states are kept for census_slot_state.
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
#include "ruby_layout.h"
#include "slots.h"
#include "u64map.h"

/*
 * A class and kind as one key, the census's and the tracker's: class
 * addresses are 8-byte aligned heap addresses below 2^48; kind < 2^12.
 */
static inline uint64_t class_key_id(uint64_t klass, uint32_t kind)
{
	return (klass << 12) | kind;
}

/* Keyed by class_key_id(klass, kind), as the tracker keys objects. */
struct census_class {
	uint64_t klass; /* RBasic.klass; 0 for imemos and hidden objects */
	uint32_t kind;	/* RBM_KIND(type, imemo) */
	uint64_t live;
	uint64_t bytes;	  /* of the live ones: slot + owned heap memory (slots.h) */
	uint64_t old;	  /* live with age == old_age */
	uint64_t garbage; /* dead, not yet swept */
	uint64_t age[4];  /* live by GCs survived (3 = old in 3.1) */
	/*
	 * census_compare, in the later of two censuses: of the live, those
	 * that were not there at the earlier one (new), and of those the ones
	 * that survived a GC (aged), are old, or whose age the write barrier
	 * does not keep (unaged: wb-unprotected objects never age).
	 */
	uint64_t new_alive, new_aged, new_old, new_unaged;
	/* census_name_classes: the class it counts as (past singletons), named while readable */
	uint64_t object_class;
	bool named;
	/* ... and that name (owned): a class GC.compact moves later is unreadable at its address */
	char *name;
};

/* One heap page of the snapshot, for census_slot_state and census_compare. */
struct census_page {
	uint64_t start; /* first slot */
	uint32_t nslots;
	uint32_t slot_size;
	uint8_t *slot;	    /* per slot: enum slot_state | age << 4 */
	uint32_t *class_of; /* per live slot: census_class_hash of its class key; 0 otherwise */
};

/* A class key as a slot remembers it: 32 bits are plenty to tell two classes in one slot apart. */
static inline uint32_t census_class_hash(uint64_t key)
{
	uint32_t h = (uint32_t) (key ^ (key >> 32) ^ (key >> 17));

	return h ? h : 1;
}

struct census {
	uint64_t pages, slots, live, free, garbage, zombies, moved;
	uint64_t unjudged;	/* counted live while marks were not final */
	uint64_t bad_pages;	/* pages skipped: unreadable or failing the layout checks */
	uint64_t types[32];	/* live per builtin type (for ObjectSpace.count_objects) */
	bool marking, sweeping; /* GC phase seen at the start or the end of the walk */
	bool gc_count_changed;	/* a GC ran during the walk */
	bool ages_may_lag;	/* at the start or the end: see ruby_layout_ages_may_lag */
	bool ages_known;	/* slot ages are read (from the object flags) */
	double seconds;
	double cpu_seconds;   /* the tracer's CPU time meanwhile, all walkers' */
	double read_seconds;  /* copying out of the target (process_vm_readv), all walkers' */
	unsigned int walkers; /* threads that walked the heap */
	uint64_t gc_count;    /* GC.count at the start */
	uint64_t total_allocated, total_freed; /* GC.stat at the start */
	struct u64map classes; /* class_key_id(klass, kind) -> struct census_class * */

	struct census_page *page; /* sorted by start; NULL unless slot_states */
	size_t npage;
	uint8_t *slot_mem;   /* the pages' slot arrays, in one block */
	uint32_t *class_mem; /* the pages' class_of arrays, in one block */
	bool compared;	     /* census_compare filled the classes' new_* counts */
	const struct census *news_of; /* census_mark_new marked the slots new against it */
};

/*
 * Walks the heap of pid, whose rb_objspace_t is at objspace; slot_states
 * keeps every slot's state for census_slot_state (one byte a slot).  Returns
 * 0 or -errno (-ESRCH: the target is gone; -EINVAL: the layout does not fit
 * this process, reason in err).  census_free releases it either way.
 */
int census_take(struct census *c, pid_t pid, const struct ruby_layout *hl, uint64_t objspace,
		bool slot_states, char *err, size_t errlen);

/*
 * Which live objects of the later census `now` were not in the heap at
 * `before` (both taken with slot_states, no compaction between): fills
 * the new_* counts of now's classes.  Exact for objects the write barrier
 * protects while fewer than old_age GCs ran between the two; beyond, an
 * old object whose slot held an old object of its class at `before` counts
 * as that one, and a wb-unprotected one (which never ages) whenever its slot
 * held its class.  0, -EINVAL when either census lacks its slots, -ENOMEM.
 */
int census_compare(const struct census *before, struct census *now, unsigned int old_age);

/* In the per-slot byte: census_mark_new found the live object there new. */
#define SLOT_NEW 0x80

/*
 * Marks each live slot of now SLOT_NEW or not against before, by the rule
 * census_slot_new says, so that before's slots can go (census_drop_slots)
 * while now is still asked what is new: census_slot_new_at(before, now)
 * reads the marks once now->news_of is before.  0, or -EINVAL as
 * census_compare.
 */
int census_mark_new(const struct census *before, struct census *now, unsigned int old_age);
/* Frees the per-slot arrays (the classes and counts stay). */
void census_drop_slots(struct census *c);

/* The state of the slot at addr in this census (SLOT_UNKNOWN if no page holds it). */
enum slot_state census_slot_state(const struct census *c, uint64_t addr, unsigned int *age);
/*
 * The same, and whether the write barrier leaves the object unprotected
 * (true when unknown): only a protected object's age counts its GCs.
 */
enum slot_state census_slot_info(const struct census *c, uint64_t addr, unsigned int *age,
				 bool *unprotected);
/* The per-slot byte: state | age << 4 | this bit. */
#define SLOT_WB_UNPROTECTED 0x40

/*
 * Adds one slot to its class's tally, what census_take does per slot: a live
 * object goes to its age bucket only; census_class_finish derives live and
 * old from the buckets once the walk is over.
 */
static inline void census_class_count(struct census_class *cc, enum slot_state st, unsigned int age,
				      uint64_t bytes)
{
	if (st == SLOT_GARBAGE) {
		cc->garbage++;
	} else if (st == SLOT_LIVE) {
		cc->age[age > 3 ? 3 : age]++;
		cc->bytes += bytes;
	}
}

void census_class_finish(struct census_class *cc, unsigned int old_age);

enum census_newness { CENSUS_UNKNOWN, CENSUS_NOT_LIVE, CENSUS_OLD, CENSUS_NEW };
/*
 * The object at addr in the later census now, against before (both with
 * slot states): CENSUS_NEW when it was not in the heap at before, by the
 * rule census_compare counts new_alive with; CENSUS_NOT_LIVE when now's
 * slot holds no live object; CENSUS_UNKNOWN when now has no such slot.
 * class_hash: the census_class_hash of its class in now, 0 if not live.
 */
enum census_newness census_slot_new(const struct census *before, const struct census *now,
				    uint64_t addr, unsigned int old_age, uint32_t *class_hash);
/*
 * The pages the last lookup found: the next slot of the same page needs no
 * search.  A caller that goes over a walk's slots in address order looks
 * each page up once (a million slots: 0.5 s of searches saved).  Zeroed
 * before the first use.
 */
struct census_hint {
	const struct census_page *now, *before;
};
enum census_newness census_slot_new_at(const struct census *before, const struct census *now,
				       uint64_t addr, unsigned int old_age, uint32_t *class_hash,
				       struct census_hint *h);
enum slot_state census_slot_info_at(const struct census *c, uint64_t addr, unsigned int *age,
				    bool *unprotected, struct census_hint *h);
/*
 * The census_class_hash of the live object at addr in c (with slot states),
 * 0 if none: what census_slot_new_at says of it, without the comparison.
 * h->now only is used.
 */
uint32_t census_slot_class_at(const struct census *c, uint64_t addr, struct census_hint *h);
void census_free(struct census *c);

#endif

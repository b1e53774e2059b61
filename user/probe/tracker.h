/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Free detection.  Ruby has no probe for a free, so the tracker checks the
 * tracked slots themselves: after GC sweeps it reads each tracked object's
 * header from the target and asks the BPF side to drop the dead ones.
 */
#ifndef RBM_TRACKER_H
#define RBM_TRACKER_H
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "rbmemtrace.h"
#include "census.h"
#include "ruby_layout.h"
#include "report.h"

struct census;
#include "slot_pages.h"
#include "u64map.h"

/* Outcome per class and call path, keyed by tally_key(klass, kind, stack_id). */
struct class_tally {
	uint64_t klass;
	uint64_t stack_id; /* 0: no call path */
	uint32_t kind;
	struct tally t;		   /* what it counts, as the report takes it */
	uint64_t not_followed_bpf; /* of t.not_followed, what the BPF side saw replaced */
	bool moved; /* its class moved (compaction): counted under its new address, not here */
};

/* Where the tracker reads and writes: the target, its heap, the BPF maps (set at attach). */
struct tracker_io {
	pid_t pid;
	int live_fd;
	int counts_fd;
	int fallback_fd; /* per-class counts when counts_fd is full; -1: none */
	int class_moves_fd; /* the classes compactions moved (struct class_move_key); -1: none */
	uint32_t slot;	    /* the process's slot, their key's first field */
	/* compact_count + 1 of the last compaction BPF is done following (its moves may go) */
	__u64 *classes_followed_at;
	/* Told of each class move once the tallies have followed it (names, filter); may be NULL */
	void (*class_moved)(void *ctx, uint64_t from, uint64_t to);
	void *class_moved_ctx;
	struct reap_queue *reap; /* the process's reap array in the BPF object, mmaped */
	uint64_t compact_count_addr; /* 0: this Ruby's compaction counter is unknown */
	uint64_t gc_count_addr;	     /* GC.count in the target; 0: unknown, nothing is young */
	/* The heap's layout, for slot reuse (sampling); NULL: not checked */
	const struct ruby_layout *hl;
	uint64_t objspace;
	uint64_t fl_singleton; /* to tell a singleton class of a tracked object */
	uint32_t rclass_super;
	__u32 *compaction_pending; /* set by BPF at the sweep end after a compaction */
	/*
	 * Set by BPF to compact_count + 1 of the last compaction whose moves it
	 * followed (at rb_gc_update_tbl_refs); NULL: no such probe.  When it
	 * followed them all, a tracked object gone from its slot is freed.
	 */
	__u64 *compact_followed_at;
	/* What a tracked object stands for, from its tag (live_object.seq); NULL: itself alone */
	uint32_t (*weight_of)(const void *ctx, uint64_t tag);
	const void *weight_ctx;
};

/* How the passes go: set by the session before a pass, read by it. */
struct tracker_mode {
	/*
	 * The heap census taken just before the final pass, or NULL: an object
	 * its mark bits call garbage (dead, awaiting the sweep) is not retained.
	 */
	const struct census *census;
	/*
	 * No BPF program writes the live map while passes run (sampling: the
	 * passes fall between windows): dead entries are deleted at once
	 * rather than handed to a GC probe.
	 */
	bool direct_delete;
	/*
	 * With direct_delete: the allocation links are still coming off (their
	 * grace periods, ~0.1 s), so a probe might yet write the map.  The pass
	 * still judges (a reused slot must be seen while its newcomer is young)
	 * but keeps the dead in `dead` for tracker_delete_dead().
	 */
	bool deletes_wait;
	/*
	 * Set by the caller before each pass: no BPF program can have written
	 * the live map since the last pass began, nor while it ran (sampling:
	 * no window, no link coming off, no compaction probe hit).  The pass
	 * then reuses the last dump unless the tracker wrote the map itself:
	 * a dump walks every bucket of the map (1M by default: ~1 ms, half the
	 * tracer's CPU on a leaking server with a GC every 100 ms).
	 */
	bool map_quiet;
	/* The final pass judges even if a compaction moved objects during it. */
	bool judge_through_compaction;
	/* Ruby's GC count at the trace's end (0: unknown): what the final pass ages by. */
	uint64_t end_gc_count;
};

/* Ruby's GC and compactions as the last pass saw them. */
struct tracker_gc {
	uint64_t gc_count;    /* as read at the last pass */
	uint64_t judge_count; /* the GC count the slots of this pass were read in */
	bool judge_lag;	      /* and a GC was marking then */
	/*
	 * At the last pass, the GC that GC.count counts may not have aged every
	 * object yet (ruby_layout_ages_may_lag): expect one GC less.
	 */
	bool ages_may_lag;
	uint64_t last_compact_count;
};

/* Scratch for one pass over the live map, and the last dump of it. */
struct tracker_scratch {
	uint64_t *keys;
	struct live_object *values;
	uint64_t (*headers)[2];
	bool *readable;
	struct slot_facts *facts; /* what each one's page says (sampling) */
	struct slot_pages pages;
	size_t cap;
	bool dump_current; /* keys/values hold the map as it is (dump_n entries) */
	size_t dump_n;
};

/* What the passes found, for the report and -v. */
struct tracker_stats {
	uint64_t passes;
	uint64_t dumps_reused;
	uint64_t garbage_seen; /* tracked objects found unmarked awaiting the sweep */
	uint64_t reused_seen;  /* tracked objects whose slot a younger object took */
	/* Passes that judged slots, and those a GC began during (their marks not final) */
	uint64_t judging_passes, unsettled_passes;
	double pass_started, pass_seconds; /* the time all passes took */
	bool last_settled;		   /* the last pass judged slots with final marks */
	size_t last_tracked;		   /* entries the last pass found in the live map */
	uint64_t live;			   /* tracked and alive at the last pass */
	uint64_t compactions;		   /* seen by the passes */
	uint64_t moved_followed;
};

struct tracker {
	struct tracker_io io;
	struct tracker_mode mode;
	struct tracker_gc gc;
	struct tracker_scratch buf;
	struct tracker_stats stats;
	struct u64map tallies; /* class key -> struct class_tally */
	/*
	 * Entries the last pass found dead but could not delete yet (their
	 * delete waits for the target's thread, or under sampling for the
	 * probes to be off): address -> seq + 1.  Should the target exit
	 * first, they stay dead in the final count.  Sampling keeps them over
	 * passes until deleted: a verdict of "reused" cannot be reached again
	 * once the newcomer is old.
	 */
	struct u64map dead;
};

/* A tally its class's move emptied: no row (its counts are at the class's new address). */
static inline bool class_tally_moved_away(const struct class_tally *c)
{
	return c->moved && !c->t.allocated && !c->t.retained && !c->t.young && !c->t.untracked &&
	       !c->t.not_followed;
}

static inline uint64_t tally_key(uint64_t klass, uint32_t kind, uint64_t stack_id)
{
	uint64_t key = class_key_id(klass, kind) ^ (stack_id * 0x9e3779b97f4a7c15ULL);

	return key ? key : 1;
}

int tracker_init(struct tracker *t, pid_t pid, int live_fd, int counts_fd, struct reap_queue *reap,
		 uint64_t compact_count_addr);

/*
 * One pass over the tracked objects.  While probes are attached (final ==
 * false) dead objects are handed to the BPF side for deletion; with the
 * probes detached (final == true) the pass only counts, and its per-class
 * retained counts are the report's.  Returns 0 or -errno (-ESRCH: target
 * gone; -EAGAIN: a compaction ran during the pass, which judged nothing).
 */
int tracker_pass(struct tracker *t, bool final);

/*
 * Sums the per-CPU allocation counters into the tallies, after following
 * the classes compactions moved since the last call (the BPF side re-keyed
 * their counts and objects to the class's new address already).
 */
int tracker_collect_counts(struct tracker *t);

/* Whether an object header read from the target still holds the object recorded as `kind`. */
bool object_header_alive(uint64_t flags, uint32_t kind);

/*
 * When the target is gone nothing can be checked: recounts every tracked
 * object as it stood at the last pass (those it found dead stay dead, those
 * allocated since count as alive).
 */
int tracker_count_unverified(struct tracker *t);
/*
 * Deletes the entries a pass found dead while deletes had to wait, those
 * still holding the allocation that was judged.  Only once no probe can
 * write the live map.
 */
void tracker_delete_dead(struct tracker *t);

void tracker_free(struct tracker *t);

/* Ruby's GC count and whether a GC is marking now (ages may lag): 0, or -errno. */
int tracker_gc_phase(struct tracker *t, uint64_t *count, bool *marking);

/* The tally of (klass, kind, call path), made at zero if new; NULL when out of memory. */
struct class_tally *tracker_tally_for(struct tracker *t, uint64_t klass, uint32_t kind,
				      uint64_t stack_id);

#endif

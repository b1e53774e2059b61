/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report model: everything one run learned about one process (its
 * classes, allocation sites, call paths, GC and sampling facts, and what
 * the heap census saw), owned by the report so that it outlives the
 * process, merges with reports of other processes and hosts (merge.c),
 * and is written by writers that only read it (user/output/).  Every count
 * a writer prints is computed here, by report_finish.
 */
#ifndef RBM_REPORT_H
#define RBM_REPORT_H
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "callpath.h"
#include "caps.h"
#include "rbmemtrace.h" /* MAX_STACK_DEPTH */
#include "strpool.h"
#include "verdict.h"
#include "tally.h"
#include "u64map.h"

/*
 * allocated = freed + retained + young + untracked + not_followed, for
 * every row.  retained: alive, and a GC mark ran since the object was
 * allocated (it survived); young: alive, allocated after the last mark,
 * not judged yet.  Garbage awaiting a sweep is dead: freed.
 */
struct counts {
	uint64_t allocated;
	uint64_t freed;
	uint64_t retained;
	uint64_t young;
	uint64_t untracked;
	uint64_t not_followed;
	/*
	 * Under sampling, the traced counts weighed by what each object stands
	 * for: 1 / the share its window recorded (windows record different
	 * shares).  The estimates scale these, not the plain counts.
	 */
	double w_allocated, w_retained, w_freed;
	/* Under sampling, the windows these were traced in: bit (window number % 64) */
	uint64_t window_bits;
};


/* Under sampling: traced counts scaled up to the whole process (report_finish). */
struct estimates {
	uint64_t allocated;
	uint64_t freed;
	uint64_t retained;
};
/* Adds e (may be NULL) to to. */
void estimates_add(struct estimates *to, const struct estimates *e);
/* Adds c to to. */
void counts_add(struct counts *to, const struct counts *c);
/* The sampled windows c's objects were traced in (at most 64: bits of the window number % 64). */
unsigned counts_windows(const struct counts *c);
struct report;
/*
 * Under sampling, whether c's estimates rest on objects traced in only one
 * or two of four or more windows: a class made in one burst that a window
 * happened to cover is scaled up as if every stretch of the run made it.
 */
bool estimate_from_few_windows(const struct report *r, const struct counts *c);

struct class_row;
/* estimate_from_few_windows, for a class whose estimate the heap did not set. */
bool class_estimate_rough(const struct report *r, const struct class_row *row);

/* What the heap held of a class, read by a census of the target's heap. */
struct census_counts {
	bool have;
	uint64_t live_start; /* at the start of the trace */
	uint64_t live_end;   /* at its end */
	uint64_t bytes_end;  /* slot plus owned heap memory, at the end */
	uint64_t old_end;    /* of live_end, promoted to the old generation */
	uint64_t garbage_end; /* dead at the end, on pages not yet swept */
	int64_t change;       /* live_end - live_start (report_finish) */
	/*
	 * The two censuses compared slot by slot (census_compare): of live_end,
	 * the objects that were not in the heap at the start, those of them
	 * that survived a GC (retained, as the trace counts it), those whose age
	 * the heap cannot tell (wb-unprotected: retained or young), and the old.
	 */
	bool have_new;
	uint64_t new_alive;
	uint64_t new_retained;
	uint64_t new_unaged;
	uint64_t new_old;
};

/* Where a class's retained estimate comes from, under sampling. */
enum est_source {
	EST_SAMPLED,  /* the traced count scaled up */
	EST_BOUNDED,  /* that, moved into what the heap says was made and kept */
	EST_HEAP,     /* the heap's own count: census_counts.new_retained */
};

/* "sampled", "bounded", "heap"; and back (anything else: EST_SAMPLED). */
const char *est_source_name(enum est_source s);
enum est_source est_source_of(const char *name);

/*
 * A continuous trace (trace --every, serve) writes a profile per period:
 * what was allocated during the period alone (period.c), beside the
 * counts since the trace began.  Under sampling est is the traced weight
 * of the period scaled to Ruby's own count of the period's allocations.
 */
struct period_counts {
	uint64_t allocated;
	uint64_t est_allocated;
};

/* Of a class's live objects at a period's end, those born in one period. */
struct born_count {
	uint64_t period;
	uint64_t live;
};

struct class_row {
	char *name;
	struct counts counts;
	struct period_counts period;
	struct estimates est;
	struct ages ages; /* of the retained */
	struct census_counts census;
	double est_cap; /* est.retained was scaled by this to fit the census (1: not) */
	enum est_source est_source;
	bool est_source_set; /* merge: est_source is of a part already summed */
	/*
	 * A period of a continuous trace (cohorts.h): of live_end, how many were
	 * born in each period (0: already there at the trace's start), by
	 * period ascending, the periods with none left out.  Owned.
	 */
	bool have_born;
	struct born_count *born;
	size_t nborn;
};

/* Where objects were allocated: the innermost Ruby frame. */
struct site_row {
	char *class_name;
	const char *path; /* interned in the report's pool */
	int line;
	struct counts counts;
	struct period_counts period;
	struct estimates est;
	struct ages ages;
};

/* A full call path; the stack and its strings are owned by the report. */
struct stack_row {
	char *class_name;
	const struct stack *stack;
	struct counts counts;
	struct period_counts period;
	struct estimates est;
	struct ages ages;
};

/* --max-overhead: where the counts came from and how to scale them. */
struct sampling_info {
	bool on;
	double budget_percent;
	uint64_t windows;
	double window_time_s;	/* time the allocation probes were attached */
	double est_overhead;	/* estimated share of the target's time in probes */
	uint64_t traced;	/* allocations traced in the windows */
	uint64_t weighed;	/* their weight, RBM_WEIGHT_ONE units (tally.h) */
	uint64_t probe_hits;	/* allocation probe hits in the windows, recorded or not */
	uint64_t covered;	/* allocations (stream positions) the windows covered */
	double sample;		/* mean share of the covered allocations recorded */
	uint64_t burst_windows; /* windows that covered one burst whole */
	/* report_finish, from gc_allocated, traced and weighed (a report read back gives scale) */
	double scale;		/* target allocations / traced; 0 when unknown */
	double weight_scale;	/* target allocations / traced weight; 0: estimates scale counts */
	char doubt[256];	/* why estimates are rough; "" when sure enough */
};

/*
 * One period of a continuous trace: the report is as of its end, with a
 * heap census taken then as its end figures (heap_end, live_end), and its
 * rows' period counts are what was allocated during it (report_set_period).
 */
struct period_info {
	bool on;
	uint64_t number;	/* 1, 2, ...; 0: the profile at the start (serve) */
	double time;		/* Unix seconds: when its census was taken */
	double duration_s;	/* since the previous period's end, or the trace's start */
	bool have_gc_counts;
	uint64_t gc_allocated;	/* Ruby's own count of the period's allocations (GC.stat) */
	uint64_t traced;	/* allocations traced during it */
	double scale;		/* sampling: gc_allocated / traced; 0 unknown */
	bool estimated;		/* est_allocated holds estimates (sampling) */
	bool untraced;		/* sampling: Ruby allocated, no window traced any of it */
	bool target_gone;	/* the process is gone: its last profile */
	/* Not on: a period's report read back from JSON, number, time and duration only. */
	bool read_back;
};

/* The heap as a census read it (rbmemtrace census, and trace's start and end). */
struct heap_info {
	bool have;
	uint64_t pages;
	uint64_t slots;
	uint64_t live;
	uint64_t free;
	uint64_t garbage;  /* dead, on pages the lazy sweeper has not reached */
	uint64_t bytes;
	uint64_t unjudged; /* counted live though marks were not final */
	uint64_t gc_count; /* GC.count when it was read */
	bool marking;	   /* taken during incremental marking: marks were not final */
	bool sweeping;	   /* lazy sweep was under way */
	bool gc_ran;	   /* a GC ran while the heap was read */
	double seconds;	   /* what reading the heap took */
	uint64_t types[32];	    /* live per builtin type, as ObjectSpace.count_objects */
	uint64_t garbage_types[32]; /* garbage per builtin type */
};

/*
 * A leak suspect: a class whose retained objects are old, ranked by how
 * many (report_find_suspects).  Pointers are into the report.
 */
#define MAX_SUSPECTS 10
struct suspect {
	const char *class_name;
	uint64_t old_retained; /* survived 3+ GCs (all retained when too few GCs ran) */
	uint64_t bytes;	       /* old_retained times the class's bytes per object */
	int64_t live_change;   /* the census's live_end - live_start */
	bool have_change;
	const struct site_row *site;   /* its top allocation site */
	const struct stack_row *stack; /* its top call path */
};

/*
 * Where the target's layout came from and which of its groups were proved
 * against the live process (ruby/layout_proof.h); a group not proved was
 * turned off, and the report says what is missing because of it.
 */
#define REPORT_LAYOUT_GROUPS 5
struct report_layout_group {
	char name[16];	/* "gc", "heap", "classes", "stacks", "probes" */
	int status;	/* 1 proved, 0 not proved (turned off), -1 not checked */
	char why[192];	/* not proved: the first check it failed */
	char gives[48]; /* what is missing without it */
};
struct report_layout {
	bool have;
	char libruby[PATH_MAX]; /* the file as the target maps it */
	char from[PATH_MAX + 64]; /* "the 3.1 table (...)", "DWARF in ..." */
	char code[320];	   /* fields the libruby's code moved from the table's values */
	double check_ms;
	struct report_layout_group groups[REPORT_LAYOUT_GROUPS];
};

/*
 * One process's report.  Over ~20 fields: it is the record every writer
 * reads (text, JSON, folded, pprof), one member per figure the JSON schema
 * names; its parts that have a life of their own are structs of their own
 * (layout, caps, sampling, period, the censuses' heap figures, totals,
 * estimates, rows, sites, call paths).
 */
struct report {
	/* Which process: several reports (processes, hosts) make a model. */
	pid_t pid;
	pid_t ns_pid;          /* its pid in its own namespace; 0: the same or unknown */
	char host[256];        /* "" for this host */
	char command[256];     /* its command name; "" if unknown */
	/* Where it runs (process/proc_labels.h), read from the target: "" when not known. */
	char container_id[65];
	char pod_uid[37];
	char pod_name[254];
	char pod_namespace[64];
	char ruby_version[32];
	struct report_layout layout;

	double duration_s;
	const char *end_reason; /* "duration", "signal", "target exited", "command finished" */
	bool target_exited;     /* counts are as of the last check before the exit */
	int exit_status;        /* launch mode: the command's; -1 otherwise */
	uint64_t gc_runs;
	uint64_t compactions;
	uint64_t moved_followed;
	uint64_t moved_over;	     /* died in a compaction, their slot taken by a moved object */
	uint64_t scan_failures;	     /* compactions whose scan for moved objects was cut short */
	bool end_read_while_compacting; /* the final read could find no pause between compactions */
	bool gc_counts_stale; /* Ruby's counters as last read before the target exited unseen */
	uint64_t header_read_errors;
	uint64_t class_overflow;
	struct caps_hit caps; /* bounds on reading the target that were reached (caps.h) */
	/* GC.stat's counters over the trace, read from the target: ground truth */
	bool have_gc_counts;
	uint64_t gc_allocated; /* without the moves, where Ruby counts them (gc_moves_left_out) */
	uint64_t gc_freed;
	/*
	 * Ruby 3.4 counts each object GC.compact moves as allocated and freed
	 * once more: gc_moved moves were taken out of both (left_out), or
	 * could not be, its counter unproved (unknown, gc_moves_why).
	 */
	uint64_t gc_moved;
	bool gc_moves_left_out, gc_moves_unknown;
	char gc_moves_why[128];
	struct sampling_info sampling;
	struct period_info period;
	struct heap_info heap_start, heap_end;
	struct counts totals;
	struct estimates est_totals;
	bool have_estimates; /* sampled and scaled: est fields are meaningful */
	unsigned merged;     /* reports summed into this one by report_merge */
	bool census_only;    /* a heap census: rows sort by live objects */
	uint64_t est_capped; /* classes whose retained estimate the census bounded */
	struct class_row *rows;
	size_t nrows;
	size_t cap;
	struct u64map by_name; /* name hash -> row index + 1 */

	bool with_stacks;
	uint64_t stacks_truncated;
	uint64_t stacks_dropped;
	uint64_t stack_errors;
	/*
	 * Allocations no site accounts for (report_finish): made with no Ruby
	 * frame (VM boot, C threads), or when the class table or the site map
	 * was full as well as the path map.
	 */
	uint64_t no_site;
	struct site_row *sites;
	size_t nsites, sites_cap;
	struct u64map sites_by_key;
	struct stack_row *stacks;
	size_t nstacks, stacks_cap;
	struct u64map stacks_by_key;
	struct strpool strings; /* frame labels and paths */

	struct suspect suspects[MAX_SUSPECTS];
	size_t nsuspects;
	/* `why` at the end of a trace: each suspect class's top retainer path (may be none) */
	struct report_retainer *retainers;
	size_t nretainers;
	struct verdict *verdict; /* the leak verdict (verdict.h); NULL: not asked for */
	bool suspects_by_all_retained; /* fewer than 3 GCs ran: age could not tell */
};

/*
 * A suspect's top retainer path, as `why` found it at the end of the trace:
 * its root's kind, the path in one line ("local store in <main> (app.rb:46)
 * App::SessionStore > @sessions Hash > {value} Session"), and how many of
 * the class's live objects it holds.
 */
struct report_retainer {
	char *class_name;
	char *root_kind;
	char *path;
	uint64_t count, live;
};
/* Keeps the retainer of class_name (copied).  0 or -ENOMEM. */
int report_add_retainer(struct report *r, const char *class_name, const char *root_kind,
			const char *path, uint64_t count, uint64_t live);
/* The retainer found for class_name, or NULL. */
const struct report_retainer *report_retainer_of(const struct report *r, const char *class_name);

/* The row called name, created with zero counts if new; NULL when out of memory. */
struct class_row *report_row(struct report *r, const char *name);
/* The row of name, NULL if r has none (none is added). */
struct class_row *report_find_row(struct report *r, const char *name);
/* Adds counts to the row called name (merging rows that share a name). */
int report_add(struct report *r, const char *name, const struct counts *c);
/* Adds the ages of retained objects to the row, and to a stack's site and path. */
int report_add_ages(struct report *r, const char *name, const struct ages *a);
/* Sets the census figures of the row called name (creating it if needed). */
int report_set_census(struct report *r, const char *name, const struct census_counts *cc);
/* Adds counts to the site and the call path of a stack, which the report copies. */
int report_add_stack(struct report *r, const char *class_name, const struct stack *st,
		     const struct counts *c);
/*
 * What the tracker saw of one class along one stack (st may be NULL): the
 * raw tally, from which the report derives the row's counts (freed is what
 * is neither alive nor unaccounted for; the weights likewise).
 */
int report_add_tally(struct report *r, const char *class_name, const struct stack *st,
		     const struct tally *t);
/* The counts a tally stands for. */
void counts_of_tally(const struct tally *t, struct counts *c);
/* Counts and ages already derived (a report read back, a test): both at once. */
int report_add_counts(struct report *r, const char *class_name, const struct stack *st,
		      const struct counts *c, const struct ages *a);
/* For the model's own operations (merge, readers): a stack with its estimates. */
int report_add_stack_est(struct report *r, const char *class_name, const struct stack *st,
			 const struct counts *c, const struct estimates *est,
			 const struct ages *ages);
/*
 * Sorts rows by retained, then allocated, then name, sums the totals and,
 * under sampling, computes every estimate.  Call once all is added.
 */
void report_finish(struct report *r);
void report_free(struct report *r);
/* Ranks the leak suspects (called by report_finish; suspects.c). */
void report_find_suspects(struct report *r);

/* "label (path:line)", or the label alone for a C method. */
void frame_display_name(const struct frame *f, char *buf, size_t n);

/* The names along a call path, root first, ending with the class: tree and folded shape. */
#define REPORT_PATH_SLOTS (MAX_STACK_DEPTH + 2)
#define REPORT_NAME_MAX 1024
size_t report_path_root_first(const struct stack_row *row, char (*names)[REPORT_NAME_MAX],
			      const char **path);
struct ct_node;
/* The retention call tree of every path; subtrees under 1% fold when prune > 0.  NULL: ENOMEM. */
/*
 * The retention tree: from the outermost frame in (root first), or with
 * callee_first from each class and its allocating frame out to the callers,
 * which stays useful when stacks are deeper than --depth (Rails).
 */
struct ct_node *report_calltree(const struct report *r, size_t prune, bool callee_first);

/*
 * Several processes, from this host or others: one report each, in the
 * order added.  The model owns them.
 */
struct model {
	struct report **procs;
	size_t nprocs, cap;
};

int model_add(struct model *m, struct report *r);
void model_free(struct model *m);

/*
 * Adds everything in `from` to `into` by names, never by addresses, so
 * reports of other processes, hosts and Ruby versions sum: classes, sites,
 * call paths, census figures and estimates.  Call report_finish on `into`
 * afterwards.  0 or -ENOMEM.
 */
int report_merge(struct report *into, const struct report *from);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Hardware watchpoints on the words that count containers' entries
 * (heap/watch_word.h): a perf breakpoint event (PERF_TYPE_BREAKPOINT, a
 * write of 8 bytes) per thread of the target and watched word, each running
 * the BPF program on_watched_write, which counts the count's increases by
 * the writer's Ruby call path.  A debug register is per thread (four on
 * x86-64): up to RBM_MAX_WATCHES containers at once.
 *
 * For a bounded time: new threads are watched as they appear, and the
 * container is read again every WATCH_TICK_MS: when its word moves (an
 * ar_table becomes an st_table at its ninth entry, an embedded Array moves
 * to the heap, a table is rebuilt) the watch moves with it; when the
 * container is gone (freed, or moved by GC.compact) the watch ends and says
 * so.  Every event is closed on every way out, and by the kernel if
 * rbmemtrace dies.
 */
#ifndef RBM_WATCH_H
#define RBM_WATCH_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"
#include "watch_word.h"

#define WATCH_TICK_MS 20
/*
 * What one trapped write costs the writing thread: the trap, the BPF
 * program and its walk of the Ruby frames.  Measured here (2026-11-29,
 * bench in docs/design.md): 200,000 Hash insertions took 11.7-12.0 us each
 * watched, 0.7 untraced.  The watch is charged this per write.
 */
#define WATCH_TRAP_COST_S 12e-6
/* The least time watched before the budget may end a watch. */
#define WATCH_MIN_SECONDS 0.2
/* Threads watched per container: each costs an event and a debug register in the thread. */
#define WATCH_MAX_THREADS 1024

/*
 * Within a trace: the walk that names the containers at half the duration,
 * WATCH_NAMING_MAX_S at most (the rest watched); without a duration,
 * WATCH_NAMING_MAX_S in.  A trace under WATCH_IN_RUN_MIN_S has no time to
 * do both, and no watch.
 */
#define WATCH_NAMING_MAX_S 10.0
#define WATCH_IN_RUN_MIN_S 1.0
static inline bool watch_fits_trace(double duration)
{
	return !duration || duration >= WATCH_IN_RUN_MIN_S;
}
static inline double watch_naming_after(double duration)
{
	return duration && duration / 2 < WATCH_NAMING_MAX_S ? duration / 2 : WATCH_NAMING_MAX_S;
}

struct rbmemtrace_bpf;
struct bpf_program;

struct watch_path {
	uint64_t stack_id, count;
};

struct watch_result {
	/* in: the container */
	uint64_t addr;
	uint32_t type; /* RB_T_ARRAY or RB_T_HASH */
	uint32_t slot_size;
	/* out */
	bool watched; /* its word was watched in one thread at least */
	enum watch_form form;
	char ended[160]; /* why the watch ended before its time; "" when it did not */
	double seconds;
	uint64_t size_before, size_after; /* the count at the start and the end */
	uint64_t count;			  /* the count's increases, summed (and those unseen) */
	uint64_t missed;		  /* of them, with no call path (or unseen: a move's) */
	uint64_t hits;			  /* writes trapped */
	uint64_t moves;			  /* the word moved, and the watch with it */
	uint32_t threads;		  /* threads watched at most */
	uint32_t threads_refused;	  /* threads whose breakpoint could not be set */
	bool by_call;			  /* watched by uprobes on the insertion functions */
	char note[200];			  /* what such a watch cannot see; "" otherwise */
	struct watch_path *paths;	  /* by count, most first */
	size_t npaths;
};

struct watch_target {
	pid_t pid;
	int slot; /* its slot of the run's BPF object */
	struct rbmemtrace_bpf *skel;
	struct bpf_program *prog; /* on_watched_write (watch_run_start loads it) */
	const struct ruby_layout *l;
	/* the share of the target's time (percent) the traps may take; 0: no cap (--full) */
	double budget_percent;
	/* for the fallback's uprobes (watch_uprobe.h): the libruby, and the link kind */
	const char *binary;
	bool use_multi;
};

/*
 * Watches r[0 .. n) (n <= RBM_MAX_WATCHES) for seconds, or until *stop,
 * the target's end, or the traps' cost (WATCH_TRAP_COST_S each) past the
 * budget: a container taking entries faster is watched a shorter time, and
 * its result says so.  0 (each result says what it saw), or -errno with err
 * when nothing could be watched at all.
 */
int watch_containers(const struct watch_target *t, struct watch_result *r, size_t n,
		     double seconds, volatile sig_atomic_t *stop, char *err, size_t errlen);

/*
 * The same in steps, for a caller with a loop of its own (a trace watching
 * as it goes).  watch_run_start arms r[0 .. n) for seconds (0: until
 * finished): 0 and *w, or -errno with err (r then says why, nothing left
 * open).  watch_run_step at now ticks when watch_run_next says, false once
 * every watch is over (time, budget, the target gone).  watch_run_new_hits:
 * the writes trapped since it was last asked (for a budget shared with
 * others).  watch_run_finish reads the last counts into r, closes every
 * event and frees w.
 */
struct watch_run;
int watch_run_start(struct watch_run **w, const struct watch_target *t, struct watch_result *r,
		    size_t n, double seconds, char *err, size_t errlen);
double watch_run_next(const struct watch_run *w);
bool watch_run_step(struct watch_run *w, double now);
uint64_t watch_run_new_hits(struct watch_run *w);
/* What the traps and the fallback's calls since it was last asked cost, in seconds. */
double watch_run_new_cost(struct watch_run *w);
void watch_run_finish(struct watch_run *w);
void watch_results_free(struct watch_result *r, size_t n);
/*
 * The GC age of the object at addr (flags: its first word) into *age; false
 * when its page says nothing.  A container is old and ages only grow: a
 * younger object of its type in its slot is another one (freed, the slot
 * taken).
 */
bool watch_slot_age(const struct watch_target *t, uint64_t addr, uint64_t flags, uint8_t *age);

#endif

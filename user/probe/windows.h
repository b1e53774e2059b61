/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --max-overhead in practice: reads Ruby's allocation counter for the
 * sampler, attaches and detaches the allocation probes window by window as
 * it says, tells the BPF side which stretch of the allocation stream the
 * window covers once every probe is on, and meters what it cost the target.
 */
#ifndef RBM_WINDOWS_H
#define RBM_WINDOWS_H
#include <stdbool.h>
#include <stdint.h>
#include "gc_counters.h"
#include <linux/types.h>
#include <sys/types.h>
#include "attach.h"
#include "rbmemtrace.h"
#include "sampler.h"

struct rbmemtrace_bpf;

/* GC.stat's total_allocated_objects in the target: one word, or summed over the size pools. */
struct windows {
	struct probes *probes;
	struct rbmemtrace_bpf *skel;
	struct proc_state *st; /* the process's state in it */
	int verbose;
	pid_t pid;
	struct gc_allocated_counter counter; /* Ruby's total_allocated_objects in the target */
	struct sampler sampler;
	uint64_t hits_at_open[MAX_ALLOC_PROBES]; /* probe_hits when the window opened */
	double hit_cost[MAX_ALLOC_PROBES];	  /* seconds each probe's trap costs the target */
	double stepped_cost;			  /* a trap on a stepped first instruction */
	double mean_trap;			  /* a trap, weighted by how often each probe is hit */
	/* The program's time, timed over a few hits: at the window's opening, and lately */
	uint64_t timed_at_open[4];		  /* program_ns, program_timed, skip_ns, skip_timed */
	double recent_record, recent_skip;	  /* 0: none timed yet */
	long ncpus;				  /* online CPUs: bounds a window's cost */
	double deferred_charge; /* charged while armed: paid once the window is planned */
	/*
	 * Every window opened: where the probes' hit counters stood (a
	 * recorded object's tag is its probe and hit number) and the weight of
	 * what it recorded, 1 / its share.  Shares differ from window to
	 * window; an object weighs its own window's.
	 */
	uint64_t *opened_at; /* nopened rows of probes->alloc_probes counters */
	uint32_t *opened_weight;
	size_t nopened, opened_cap;
};

/*
 * Starts sampling: times the trap on this machine, on our own functions,
 * before any allocation probe touches the target.  counter is Ruby's
 * allocation counter in the target (addr 0: unknown, windows are placed in
 * time).  The first window opens in windows_step once the budget allows
 * one and the counter reaches its place.  0 or -errno.
 */
int windows_start(struct windows *w, struct probes *probes, struct rbmemtrace_bpf *skel,
		  struct proc_state *st, pid_t pid, const struct gc_allocated_counter *counter,
		  double budget_percent, int verbose);
/*
 * What a recorded allocation stands for, in RBM_WEIGHT_ONE units: 1 / the
 * share its window recorded.  tag is the live object's seq (probe << 56 |
 * the probe's hit number).
 */
uint32_t windows_weight_of(const struct windows *w, uint64_t tag);
/* Frees the windows' history, once the report is made. */
void windows_free(struct windows *w);
/* Charges the target's time that other probes cost it (compaction probe hits...). */
void windows_charge(struct windows *w, double seconds);
/* What one hit of a probe whose first instruction is stepped costs the target. */
double windows_stepped_hit_cost(const struct windows *w);
/*
 * Reads the counter, arms, opens or closes a window when it is due;
 * -errno if the first window cannot attach.  windows_next says when to
 * call again.
 */
int windows_step(struct windows *w, double now);
/* When windows_step wants to run next (absolute seconds). */
double windows_next(const struct windows *w);
/* Whether a window's probes are on. */
bool windows_open(const struct windows *w);
/* Closes the open window now, whatever it covered (a census is due). */
void windows_cut(struct windows *w, double now);
/* Stops counting: call before the allocation probes come off for good. */
void windows_close(struct windows *w);
/* Accounts for the last window once the probes are off. */
void windows_stop(struct windows *w, double now);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --max-overhead in practice: attaches and detaches the allocation probes
 * window by window as the sampler says, meters what each window cost the
 * target, and tells the BPF side when every probe is on.
 */
#ifndef RBM_WINDOWS_H
#define RBM_WINDOWS_H
#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "attach.h"
#include "rbmemtrace.h"
#include "sampler.h"

struct rbmemtrace_bpf;

struct windows {
	struct probes *probes;
	struct rbmemtrace_bpf *skel;
	int verbose;
	struct sampler sampler;
	uint64_t hits_at_open[MAX_ALLOC_PROBES]; /* probe_hits when the window opened */
	double hit_cost[MAX_ALLOC_PROBES];	  /* seconds each probe's trap costs the target */
	double stepped_cost;			  /* a trap on a stepped first instruction */
	long ncpus;				  /* online CPUs: bounds a window's cost */
};

/*
 * Starts sampling: times the trap on this machine, on our own functions,
 * before any allocation probe touches the target.  The first window opens
 * in windows_step once the budget allows one.  0 or -errno.
 */
int windows_start(struct windows *w, struct probes *probes, struct rbmemtrace_bpf *skel,
		  double budget_percent, int verbose);
/* Charges the target's time that other probes cost it (compaction probe hits...). */
void windows_charge(struct windows *w, double seconds);
/* What one hit of a probe whose first instruction is stepped costs the target. */
double windows_stepped_hit_cost(const struct windows *w);
/* Opens or closes a window when it is due; -errno if the first window cannot attach. */
int windows_step(struct windows *w, double now);
/* Stops counting: call before the allocation probes come off for good. */
void windows_close(struct windows *w);
/* Accounts for the last window once the probes are off. */
void windows_stop(struct windows *w, double now);

#endif

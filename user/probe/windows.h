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
};

/*
 * Starts sampling with the allocation probes just attached: the first
 * window.  Times the trap on this machine first.
 */
void windows_start(struct windows *w, struct probes *probes, struct rbmemtrace_bpf *skel,
		   double budget_percent, int verbose, double now);
/* Opens or closes a window when it is due. */
void windows_step(struct windows *w, double now);
/* Stops counting: call before the allocation probes come off for good. */
void windows_close(struct windows *w);
/* Accounts for the last window once the probes are off. */
void windows_stop(struct windows *w, double now);

#endif

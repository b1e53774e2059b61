/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The overhead budget (--max-overhead): allocation probes attached only for
 * short windows at random times.  Dropping events inside the BPF program
 * would save nothing, the trap is the cost, so outside a window the probes
 * are not there at all.  After each window the gap before the next is set
 * from what the window cost the target, so that over time
 *
 *     probe cost / elapsed time <= budget.
 */
#ifndef RBM_SAMPLER_H
#define RBM_SAMPLER_H
#include <stdbool.h>
#include <stdint.h>

struct sampler {
	/* Settings */
	double budget;	     /* fraction of the target's time, e.g. 0.02 */
	double window;	     /* length of one window, seconds */
	double min_gap;	     /* shortest gap between windows, seconds */
	/* State */
	bool in_window;
	double phase_start; /* when the current window or gap began */
	double phase_end;   /* when it is due to end */
	uint64_t rng;
	/* Totals, for the report */
	uint64_t windows;
	double window_time; /* seconds with the probes attached */
	double cost;	    /* estimated seconds the probes cost the target */
	uint64_t hits;	    /* traced allocations */
};

void sampler_init(struct sampler *s, double budget_percent, uint64_t seed, double now);

/*
 * The gap to wait after a window of `length` seconds whose probes cost the
 * target `cost` seconds: long enough that the window's cost is within the
 * budget on average, randomised (x0.5..x1.5) so that windows do not fall
 * in step with periodic work in the target.
 */
double sampler_gap_after(struct sampler *s, double cost, double length);

/* Opens a window at now. */
void sampler_window_opened(struct sampler *s, double now);

/* Closes the window at now, after `hits` traced allocations in it that cost `cost` seconds. */
void sampler_window_closed(struct sampler *s, double now, uint64_t hits, double cost);

/* Estimated slowdown of the target so far: probe time / its own time. */
double sampler_overhead(const struct sampler *s, double elapsed);

#endif

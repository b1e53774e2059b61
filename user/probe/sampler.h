/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The overhead budget (--max-overhead): allocation probes attached only for
 * short windows at random times.  Dropping events inside the BPF program
 * would save nothing, the trap is the cost, so outside a window the probes
 * are not there at all.  After each window the next is put off until
 *
 *     total probe cost / elapsed time <= budget
 *
 * holds again.
 */
#ifndef RBM_SAMPLER_H
#define RBM_SAMPLER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sampler {
	/* Settings */
	double budget;	     /* fraction of the target's time, e.g. 0.02 */
	double window;	     /* length of one window, seconds */
	double min_gap;	     /* shortest gap between windows, seconds */
	/* State */
	bool in_window;
	double start;	    /* when sampling began */
	double phase_start; /* when the current window or gap began */
	double phase_end;   /* when it is due to end */
	uint64_t rng;
	/* Totals, for the report */
	uint64_t windows;
	double window_time; /* seconds with the probes attached */
	double cost;	    /* estimated seconds the probes cost the target */
	uint64_t hits;	    /* traced allocations */
	/* Allocation rates (hits a second) of the windows, for how sure estimates are */
	double min_rate, max_rate;
	uint64_t rated_windows; /* windows long enough to have a rate */
};

void sampler_init(struct sampler *s, double budget_percent, uint64_t seed, double now);

/*
 * The gap to wait after a window that closed at now and cost the target
 * `cost` seconds: until the total cost of all windows is within the budget
 * of the time since the start (so the budget holds at every window, not
 * only on average), at least min_gap, plus a random stretch of up to 30%
 * of this window's share so that windows do not fall in step with
 * periodic work in the target.
 */
double sampler_gap_after(struct sampler *s, double now, double cost);

/*
 * The longest window that may open at now: one that keeps the budget even
 * if the target loses all of it to the probes; 0 when none may open yet.
 */
double sampler_window_allowed(const struct sampler *s, double now);
/* When the next window may open at the earliest, if none may now. */
double sampler_next_allowed(const struct sampler *s);

/* Opens a window at now, as long as sampler_window_allowed says. */
void sampler_window_opened(struct sampler *s, double now);

/* Closes the window at now, after `hits` traced allocations in it that cost `cost` seconds. */
void sampler_window_closed(struct sampler *s, double now, uint64_t hits, double cost);

/*
 * How sure estimates scaled from the windows can be: NULL when sure enough,
 * else why not (few allocations traced, or a rate that swung between
 * windows: a burst that some windows caught and others missed).
 */
const char *sampler_doubt(const struct sampler *s, char *buf, size_t n);

/* Estimated slowdown of the target so far: probe time / its own time. */
double sampler_overhead(const struct sampler *s, double elapsed);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The overhead budget (--max-overhead): allocation probes attached only for
 * short windows.  Dropping events inside the BPF program would save
 * nothing, the trap is the cost, so outside a window the probes are not
 * there at all.
 *
 * Windows are placed in Ruby's allocation stream, not in wall time.  A
 * window placed in time mostly opens while the target idles (most time is
 * idle), and once it wakes every traced allocation costs it a trap: its
 * work is stretched tens of times inside the window, so a window of a few
 * milliseconds saw the first few hundred allocations after each wake-up,
 * the same place in the stream every time (a class allocated first after
 * a sleep came out 5x over-sampled).  So:
 *
 *  1. The budget gates, in time: no window is armed until the probes'
 *     total cost is within budget * elapsed with room for one more.
 *  2. Armed, the window waits for Ruby's own allocation counter (objspace
 *     total_allocated_objects, read from outside) to pass a random number
 *     of allocations, uniform over about twice the allocations the target
 *     makes between two windows: window starts are uniform in the stream.
 *  3. Open, the window covers a number of stream positions (by the
 *     counter, read by the BPF program at each hit), recording each with a
 *     probability chosen so that it can cover the target's bursts whole.
 *     A window whose first hit came after the target idled starts at a
 *     burst's first allocation: it covers exactly that burst, up to the
 *     next idle, so that no part of a burst is seen more than another.
 *  4. It closes by count, at the burst's end, or when it has cost the most
 *     one window may (a latency spike the target feels).
 */
#ifndef RBM_SAMPLER_H
#define RBM_SAMPLER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reserve for a window's extra is the largest of this many windows'. */
#define SAMPLER_RECENT_EXTRA 8

enum sampler_state {
	SAMPLER_GATED, /* waiting for the budget */
	SAMPLER_ARMED, /* waiting for the allocation counter to reach arm_at */
	SAMPLER_OPEN,  /* probes attached */
};

/* What a probe hit costs the target, as known when a window opens (seconds). */
struct hit_costs {
	double trap;   /* the trap, mean over the probes */
	double record; /* the program, for a hit it records */
	double skip;   /* the program, for a hit it lets pass */
};

/* A window as planned when it opens: what the BPF side is told. */
struct window_plan {
	uint64_t start;	 /* first stream position to record (the stream may be past it) */
	uint64_t len;	 /* stream positions to cover from the first recorded */
	double sample;	 /* share of covered positions recorded */
	double max_cost; /* close once the window cost the target this much */
	double idle;	 /* seconds without an allocation that make an idle */
};

/* A window as the BPF side counted it so far. */
struct window_view {
	bool hit;	    /* any hit since it opened */
	bool burst;	    /* the first came after an idle: the window covers that burst */
	bool done;	    /* the burst ended */
	uint64_t first;	    /* stream position of the first hit */
	uint64_t last;	    /* and of the latest */
	uint64_t recorded;  /* hits recorded */
	uint64_t hits;	    /* every probe hit, recorded or not */
	double cost;	    /* what they cost the target, seconds */
};

/* The sampler's settings: the budget and what a window may cost. */
struct sampler_settings {
	double budget;	 /* fraction of the target's time, e.g. 0.02 / 1.02 */
	double cost_cap; /* most one window may cost the target (a latency spike) */
	double nominal;	 /* what a window costs when the target's bursts ask for no more */
	/*
	 * Kept in reserve for what a window costs besides its hits (attaching
	 * and detaching, the charges that waited while it was armed): the most
	 * the last ones brought, or a first guess.  A window is armed only when
	 * the budget holds its hits and this, so that it is not cut for it.
	 */
	double window_extra;
	double recent_extra[SAMPLER_RECENT_EXTRA];
	double duty; /* windows' cost at most this share of the time around them */
};

/* The allocation stream as Ruby's counter was read. */
struct sampler_stream {
	bool have_pos;
	uint64_t pos_start, last_pos;
	double last_poll;
	double peak_rate;      /* allocations a second at the fastest, recently */
	double last_move;      /* when the counter last moved */
	uint64_t run_from;     /* where the current run of allocations (no idle) began */
	bool in_run;
	bool resync;	       /* a window was open: the next reading only re-bases */
	uint64_t burst;	       /* allocations between idles, the largest recently */
	uint64_t gated_allocs; /* allocations made while the budget held windows back */
	double mean_cost;      /* of the last windows: what the next will likely cost */
};

struct sampler {
	struct sampler_settings set;
	/* State */
	enum sampler_state state;
	double start;	  /* when sampling began */
	double next_time; /* when sampler_step wants to be called next */
	double gap_end;	  /* GATED: no window before (the duty cap) */
	uint64_t arm_at;  /* ARMED: the stream position that opens the window */
	uint64_t rng;
	struct window_plan plan; /* OPEN: the open window's */
	double opened;
	struct sampler_stream stream;
	/* Totals, for the report */
	uint64_t windows;
	double window_time;  /* seconds with the probes attached */
	double cost;	     /* estimated seconds the probes cost the target */
	uint64_t hits;	     /* traced (recorded) allocations */
	uint64_t probe_hits; /* every allocation probe hit */
	uint64_t covered;    /* stream positions the windows covered */
	double sample_sum;   /* of plan.sample over windows, for the mean */
	uint64_t burst_windows, truncated_windows;
};

void sampler_init(struct sampler *s, double budget_percent, uint64_t seed, double now);

/*
 * The most a window opening at now may cost: what keeps the budget even
 * if the target loses all of it to the probes; 0 when none may open yet.
 */
double sampler_window_allowed(const struct sampler *s, double now);
/* When the next window may open at the earliest, if none may now. */
double sampler_next_allowed(const struct sampler *s);

/*
 * One look at the allocation counter at now (have_pos false: it cannot be
 * read; windows are then placed in time), with what hits cost as known so
 * far.  Arms a window once the budget allows one; returns true when the
 * armed window's probes must go on now.  s->next_time says when to look
 * again.
 */
bool sampler_step(struct sampler *s, double now, bool have_pos, uint64_t pos,
		  const struct hit_costs *c);

/*
 * The probes are on at now, having brought extra seconds of cost besides
 * their hits (charged here): plans the window, for the BPF side.
 */
void sampler_window_opened(struct sampler *s, double now, const struct hit_costs *c, double extra,
			   struct window_plan *plan);

/* Whether the open window is done (by count, burst's end, cost); sets next_time. */
bool sampler_window_due(struct sampler *s, double now, const struct window_view *v);

/* The window closed at now with v counted, the probes off. */
void sampler_window_closed(struct sampler *s, double now, const struct window_view *v);

/*
 * How sure estimates scaled from the windows can be: NULL when sure enough,
 * else why not (few allocations traced, allocations that outran the
 * budget, bursts longer than a window can cover).
 */
const char *sampler_doubt(const struct sampler *s, char *buf, size_t n);

/* Estimated slowdown of the target so far: probe time / its own time. */
double sampler_overhead(const struct sampler *s, double elapsed);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How often a sampled trace looks at Ruby's GC count while it waits for
 * the next GC: every GC cycle gets a pass while anything is tracked
 * (session_poll.c), and looking every millisecond whatever the GC does
 * woke the tracer ~1,000 times a second, CPU a machine with no idle core
 * takes from the target.
 */
#ifndef RBM_GC_WATCH_H
#define RBM_GC_WATCH_H
#include <stdint.h>

struct gc_watch {
	uint64_t count; /* the GC count when it last changed, */
	double at;	/* when that was seen (0: never), */
	double gap;	/* the gap between the GCs seen then, */
	double looked;	/* and the last look */
};

/*
 * Seconds until the GC count is looked at again, count being what it
 * reads at t (seconds): a third of the gap between the last GCs seen, or
 * of the time since the last one when that is longer (an idle target),
 * from GC_WATCH_MIN to GC_WATCH_MAX.  Several GCs since the last look all
 * fell since that look: a burst of GCs a millisecond apart is watched
 * every millisecond from its first look, with at most two of its cycles
 * gone by unjudged before it.
 */
#define GC_WATCH_MIN 0.001
#define GC_WATCH_MAX 0.003
double gc_watch_wait(struct gc_watch *w, double t, uint64_t count);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/gc_watch.c: how often a sampled trace looks at the GC count. */
#include <criterion/criterion.h>
#include <stdint.h>
#include "gc_watch.h"

#define NEAR(a, b) ((a) > (b) -1e-9 && (a) < (b) + 1e-9)

/* Looks at the count every time the watch says, GCs every gc seconds, for seconds. */
static unsigned looks_over(double gc, double seconds, unsigned *cycles_unseen)
{
	struct gc_watch w = {0};
	double t = 100.0;
	uint64_t seen = 0;
	unsigned looks = 0;

	*cycles_unseen = 0;
	while (t < 100.0 + seconds) {
		uint64_t count = (uint64_t) ((t - 100.0) / gc);

		if (count > seen + 1)
			*cycles_unseen += (unsigned) (count - seen - 1);
		seen = count;
		t += gc_watch_wait(&w, t, count);
		looks++;
	}
	return looks;
}

Test(gc_watch, a_target_that_does_not_collect_is_looked_at_every_3_ms)
{
	struct gc_watch w = {0};
	double wait = gc_watch_wait(&w, 50.0, 7);

	cr_expect(NEAR(wait, GC_WATCH_MIN), "nothing known yet: %g s", wait);
	wait = gc_watch_wait(&w, 50.006, 7);
	cr_expect(NEAR(wait, 0.002), "%g s", wait);
	wait = gc_watch_wait(&w, 50.5, 7);
	cr_expect(NEAR(wait, GC_WATCH_MAX), "%g s", wait);
}

Test(gc_watch, gcs_a_millisecond_apart_are_watched_every_millisecond)
{
	unsigned unseen, looks = looks_over(0.001, 1.0, &unseen);

	cr_expect(looks >= 900 && looks <= 1100, "%u looks in 1 s", looks);
	cr_expect(unseen <= 4, "%u cycles unseen", unseen);
}

/* bench's web workload: a GC every 11 ms. */
Test(gc_watch, gcs_11_ms_apart_are_looked_at_a_third_as_often_and_none_missed)
{
	unsigned unseen, looks = looks_over(0.011, 1.0, &unseen);

	cr_expect(looks <= 400, "%u looks in 1 s", looks);
	cr_expect_eq(unseen, 0);
}

Test(gc_watch, a_burst_after_an_idle_is_watched_every_millisecond_from_its_first_look)
{
	struct gc_watch w = {0};
	double t = 10.0, wait;
	uint64_t count = 5;

	/* Idle: no GC for a second, looked at every 3 ms. */
	while (t < 11.0)
		t += gc_watch_wait(&w, t, count);
	/* Then a GC every millisecond: the first look, 3 ms on, sees three. */
	wait = gc_watch_wait(&w, t, count + 3);
	cr_expect(NEAR(wait, GC_WATCH_MIN), "%g s", wait);
	/* Quiet again: the wait grows back as the time since the last GC does. */
	wait = gc_watch_wait(&w, t + 0.0015, count + 3);
	cr_expect(NEAR(wait, GC_WATCH_MIN), "%g s", wait);
	wait = gc_watch_wait(&w, t + 0.02, count + 3);
	cr_expect(NEAR(wait, GC_WATCH_MAX), "%g s", wait);
}

Test(gc_watch, a_count_that_goes_back_is_a_new_start_not_a_gap)
{
	struct gc_watch w = {0};
	double wait;

	gc_watch_wait(&w, 1.0, 10);
	wait = gc_watch_wait(&w, 1.3, 2);
	cr_expect(NEAR(wait, GC_WATCH_MIN), "%g s", wait);
	cr_expect_eq(w.count, 2);
	cr_expect(NEAR(w.gap, 0), "no gap from a count that went back: %g", w.gap);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/tracer_cpu.c: the share of the tracer's CPU a sampled trace pays for. */
#include <criterion/criterion.h>
#include "tracer_cpu.h"

#define NEAR(a, b) ((a) > (b) -1e-9 && (a) < (b) + 1e-9)

/* One second of a 2-CPU machine: 2 CPU seconds, idle and busy. */
Test(tracer_cpu, with_a_core_idle_the_tracer_takes_nothing)
{
	/* The target on one CPU, the tracer 12 ms, the other CPU idle. */
	cr_expect(NEAR(tracer_cpu_taken(0.012, 0.98, 1.02, 1.0), 0));
}

Test(tracer_cpu, with_no_core_idle_the_target_pays_its_share)
{
	/* puma 1.2 s, wrk 0.788 s, the tracer 12 ms, nothing idle. */
	double taken = tracer_cpu_taken(0.012, 0, 2.0, 1.2);

	cr_expect(NEAR(taken, 0.012 * 1.2 / 1.988), "%g s", taken);
	/* Next to one busy loop: half of it. */
	taken = tracer_cpu_taken(0.010, 0, 2.0, 0.995);
	cr_expect(NEAR(taken, 0.005), "%g s", taken);
}

Test(tracer_cpu, only_what_ran_beyond_the_idle_is_taken)
{
	double taken = tracer_cpu_taken(0.020, 0.005, 1.995, 1.975);

	cr_expect(NEAR(taken, 0.015), "%g s", taken);
}

Test(tracer_cpu, an_idle_target_pays_nothing_and_no_share_is_above_all)
{
	cr_expect(NEAR(tracer_cpu_taken(0.012, 0, 2.0, 0), 0));
	cr_expect(NEAR(tracer_cpu_taken(0.012, 0, 0.012, 0.5), 0), "nothing else ran");
	cr_expect(NEAR(tracer_cpu_taken(0.012, 0, 1.0, 5.0), 0.012),
		  "ticks ahead of the machine's");
}

Test(tracer_cpu, a_niced_build_beside_us_is_spare_time)
{
	/* 2 CPUs, 1 s: the target 1.0 s, a nice 19 build 0.99 s, the tracer 10 ms, nothing idle. */
	double spare = tracer_cpu_niced_spare(0.99, 0.010, 1.0, false);

	cr_expect(NEAR(spare, 0.98), "%g s", spare);
	cr_expect(NEAR(tracer_cpu_taken(0.010, 0 + spare, 2.0 - spare, 1.0), 0),
		  "the tracer ran in the build's time");
	/* A niced target's own time is no spare, nor ours. */
	cr_expect(NEAR(tracer_cpu_niced_spare(1.0, 0.010, 1.0, true), 0));
	cr_expect(NEAR(tracer_cpu_niced_spare(0.005, 0.010, 0, false), 0), "never below none");
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The overhead budget's arithmetic, and which first instructions a uprobe emulates. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>
#include "attach.h"
#include "sampler.h"

/*
 * A window may cost the target its whole length: none opens before the
 * budget could pay for it, so even a program shorter than a window keeps
 * its budget (a 20 ms window at once cost a 23 ms program 82%).
 */
Test(sampler, first_window_waits_until_the_budget_can_pay_for_it)
{
	double b = 0.02 / 1.02;
	struct sampler s;

	sampler_init(&s, 2, 1, 100.0);
	cr_expect_not(s.in_window);
	cr_expect_eq(sampler_window_allowed(&s, 100.0), 0, "no headroom at the start");
	cr_expect_float_eq(sampler_next_allowed(&s), 100.0 + 0.001 * (1 - b) / b, 1e-9);
	cr_expect_float_eq(sampler_window_allowed(&s, 100.1), b * 0.1 / (1 - b), 1e-12);
	cr_expect_float_eq(sampler_window_allowed(&s, 110.0), 0.020, 1e-12, "capped at 20 ms");
	sampler_window_opened(&s, 100.1);
	cr_expect_float_eq(s.phase_end - 100.1, b * 0.1 / (1 - b), 1e-12);
	/* Even a window that cost its whole length leaves the budget intact at its end. */
	sampler_window_closed(&s, s.phase_end, 1000, s.phase_end - 100.1);
	cr_expect(s.cost <= b * (s.phase_start - 100.0) + 1e-12, "cost %g", s.cost);
}

Test(sampler, free_window_waits_the_minimum_gap)
{
	struct sampler s;

	sampler_init(&s, 2, 1, 0);
	cr_expect_float_eq(sampler_gap_after(&s, 0.020, 0), s.min_gap, 1e-12);
}

/* After a window, the next waits until the total cost is back within budget, plus jitter. */
Test(sampler, gap_restores_the_budget)
{
	double b = 0.02 / 1.02, cost = 0.010, lo = 1e9, hi = 0;
	struct sampler s;
	int i;

	for (i = 0; i < 2000; i++) {
		double g;

		sampler_init(&s, 2, i + 1, 0);
		sampler_window_opened(&s, 0);
		sampler_window_closed(&s, 0.020, 100, cost);
		g = s.phase_end - 0.020;
		lo = g < lo ? g : lo;
		hi = g > hi ? g : hi;
	}
	/* due: cost / b after the start, i.e. cost / b - 0.020 after the close */
	cr_expect(lo >= cost / b - 0.020 - 1e-9, "shortest gap %f", lo);
	cr_expect(hi <= cost / b - 0.020 + 0.3 * cost / b + 1e-9, "longest gap %f", hi);
	cr_expect(hi - lo > 0.2 * cost / b, "gaps %f..%f: no jitter", lo, hi);
}

/*
 * A target whose every traced allocation is costly: each 20 ms window costs
 * it 19 ms.  The budget must hold at every window, and be used.
 */
Test(sampler, simulated_target_stays_within_budget)
{
	struct sampler s;
	double now = 0, worst = 0;

	sampler_init(&s, 2, 7, now);
	while (now < 600) {
		now = s.phase_end;
		if (s.in_window) {
			sampler_window_closed(&s, now, 5000, 0.019 * (now - s.phase_start) / 0.020);
		} else {
			if (now > 10 && sampler_overhead(&s, now) > worst)
				worst = sampler_overhead(&s, now);
			sampler_window_opened(&s, now);
		}
	}
	cr_expect(s.windows > 100, "%lu windows", (unsigned long)s.windows);
	cr_expect(worst <= 0.02 + 1e-9, "overhead %f at a window", worst);
	cr_expect(sampler_overhead(&s, now) >= 0.02 * 0.8, "overhead %f: windows wasted",
		  sampler_overhead(&s, now));
	cr_expect_eq(s.hits, 5000 * (s.windows - (s.in_window ? 1 : 0)));
}

Test(sampler, seeds_give_different_windows)
{
	struct sampler a, b;

	sampler_init(&a, 2, 1, 0);
	sampler_init(&b, 2, 2, 0);
	cr_expect_neq(sampler_gap_after(&a, 0.02, 0.01), sampler_gap_after(&b, 0.02, 0.01));
}

Test(uprobe_insn, push_is_emulated_others_stepped)
{
	static const unsigned char push_rbp[] = {0x55}, push_r13[] = {0x41, 0x55},
				   push_rbx[] = {0x53, 0x48}, mov[] = {0x48, 0x89, 0xf8},
				   sub[] = {0x48, 0x83, 0xec}, endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa},
				   rex_b_mov[] = {0x41, 0x89};

	cr_expect(uprobe_insn_emulated(push_rbp, sizeof(push_rbp)));
	cr_expect(uprobe_insn_emulated(push_r13, sizeof(push_r13)));
	cr_expect(uprobe_insn_emulated(push_rbx, sizeof(push_rbx)));
	cr_expect_not(uprobe_insn_emulated(mov, sizeof(mov)));
	cr_expect_not(uprobe_insn_emulated(sub, sizeof(sub)));
	cr_expect_not(uprobe_insn_emulated(endbr64, sizeof(endbr64)));
	cr_expect_not(uprobe_insn_emulated(rex_b_mov, sizeof(rex_b_mov)));
	cr_expect_not(uprobe_insn_emulated(push_r13, 1)); /* a lone REX prefix */
}

/* Cheap windows still leave the probes off most of the time: 10x the budget at most, half at most. */
Test(sampler, duty_is_capped)
{
	struct sampler s;

	sampler_init(&s, 2, 1, 0);
	cr_expect_float_eq(s.window / (s.window + s.min_gap), 0.20, 1e-9);
	sampler_init(&s, 10, 1, 0);
	cr_expect_float_eq(s.window / (s.window + s.min_gap), 0.50, 1e-9);
	sampler_init(&s, 0.5, 1, 0);
	cr_expect_float_eq(s.window / (s.window + s.min_gap), 0.05, 1e-9);
}

/* Estimates say when they are rough: few traced allocations, or a burst. */
Test(sampler, doubt_few_allocations_and_bursts)
{
	struct sampler s;
	char buf[256];

	sampler_init(&s, 2, 1, 0);
	sampler_window_opened(&s, 0);
	sampler_window_closed(&s, 0.02, 500, 0.001);
	cr_expect_not_null(sampler_doubt(&s, buf, sizeof(buf)));
	cr_expect(strstr(buf, "only 500 allocations traced in 1 windows") != NULL, "%s", buf);

	sampler_init(&s, 2, 1, 0);
	sampler_window_opened(&s, 0);
	sampler_window_closed(&s, 0.02, 20000, 0.001); /* 1M a second */
	sampler_window_opened(&s, 1);
	sampler_window_closed(&s, 1.02, 20100, 0.001);
	cr_expect_null(sampler_doubt(&s, buf, sizeof(buf)), "a steady rate: %s", buf);
	sampler_window_opened(&s, 2);
	sampler_window_closed(&s, 2.02, 20, 0.001); /* 1000 a second: the burst is over */
	cr_expect_not_null(sampler_doubt(&s, buf, sizeof(buf)));
	cr_expect(strstr(buf, "varied from 1000 to 1005000 a second") != NULL, "%s", buf);
}

/*
 * A periodic target: every 56 ms it allocates 1,500 A (in 2 ms), then 3,000
 * B (in 4 ms), then sleeps 50 ms; each traced allocation costs it 3 us.
 * Windows are placed in time, so what they trace must have the target's
 * shares (A:B = 1:2): a sampler that opens windows eagerly while the target
 * idles and holds back after a costly window sees the first allocations of
 * each busy phase more than the rest.
 */
static double overlap(double a0, double a1, double b0, double b1)
{
	double s = a0 > b0 ? a0 : b0, e = a1 < b1 ? a1 : b1;

	return e > s ? e - s : 0;
}

static void periodic_overlap(double from, double to, double *a, double *b)
{
	const double period = 0.056, a_len = 0.002, b_len = 0.004, rate = 750000;
	long k;

	*a = *b = 0;
	for (k = (long)(from / period); k * period < to; k++) {
		double base = k * period;

		*a += overlap(from, to, base, base + a_len) * rate;
		*b += overlap(from, to, base + a_len, base + a_len + b_len) * rate;
	}
}

Test(sampler, periodic_target_shares_are_not_biased)
{
	double now = 0, traced_a = 0, traced_b = 0;
	struct sampler s;

	sampler_init(&s, 2, 11, now);
	while (now < 300) {
		now = s.phase_end;
		if (s.in_window) {
			double a, b;

			periodic_overlap(s.phase_start, now, &a, &b);
			traced_a += a;
			traced_b += b;
			sampler_window_closed(&s, now, (uint64_t)(a + b), (a + b) * 3e-6);
		} else if (sampler_window_allowed(&s, now) > 0) {
			sampler_window_opened(&s, now);
		} else {
			/* As windows_step: wait until one may open (time moves on, at least a little). */
			double next = sampler_next_allowed(&s);

			s.phase_end = next > now + 1e-4 ? next : now + 1e-4;
		}
	}
	cr_log_info("periodic: B/A %.3f, %lu windows", traced_b / traced_a, (unsigned long)s.windows);
	cr_expect(traced_a + traced_b > 10000, "traced %.0f", traced_a + traced_b);
	cr_expect(traced_b / traced_a > 2 * 0.85 && traced_b / traced_a < 2 / 0.85,
		  "traced B/A %.2f, the target's 2.00 (%.0f A, %.0f B in %lu windows)",
		  traced_b / traced_a, traced_a, traced_b, (unsigned long)s.windows);
	cr_expect(sampler_overhead(&s, now) <= 0.02 + 1e-9, "overhead %f", sampler_overhead(&s, now));
}

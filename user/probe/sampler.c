// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include "sampler.h"

#define DEFAULT_WINDOW 0.020
/* Shorter than this, attaching and detaching would cost more than the window samples. */
#define MIN_WINDOW 0.001
/*
 * A window may cost the target up to its whole length when allocations
 * pour in; until one has shown what it costs, windows are at most this
 * many times the budget of the time, and never more than half.
 */
#define DUTY_CAP_PER_BUDGET 10
#define DUTY_CAP_MAX 0.5
/* Each gap is stretched by up to this share of what its window cost, at random. */
#define JITTER 0.3

static double uniform01(struct sampler *s)
{
	/* xorshift64*: plenty for spreading windows, and repeatable in tests. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 0x2545F4914F6CDD1DULL) >> 11) / (double)(1ULL << 53);
}

void sampler_init(struct sampler *s, double budget_percent, uint64_t seed, double now)
{
	double b = budget_percent / 100;
	double duty = b * DUTY_CAP_PER_BUDGET < DUTY_CAP_MAX ? b * DUTY_CAP_PER_BUDGET : DUTY_CAP_MAX;

	*s = (struct sampler){
		/* cost / elapsed <= b / (1 + b) is a slowdown of at most b */
		.budget = b / (1 + b),
		.window = DEFAULT_WINDOW,
		.min_gap = DEFAULT_WINDOW * (1 / duty - 1),
		.rng = seed ? seed : 0x9e3779b97f4a7c15ULL,
	};
	/* The first window opens as soon as the budget allows one (sampler_window_allowed). */
	s->start = s->phase_start = s->phase_end = now;
}

double sampler_window_allowed(const struct sampler *s, double now)
{
	/*
	 * A window may cost the target up to its whole length (allocations
	 * pouring in, every one trapped): the budget must hold at its end even
	 * then, so a window is never longer than the budget's headroom.
	 */
	double headroom = (s->budget * (now - s->start) - s->cost) / (1 - s->budget);

	if (headroom < MIN_WINDOW)
		return 0;
	return headroom < s->window ? headroom : s->window;
}

double sampler_next_allowed(const struct sampler *s)
{
	return s->start + (s->cost + MIN_WINDOW * (1 - s->budget)) / s->budget;
}

double sampler_gap_after(struct sampler *s, double now, double cost)
{
	/* The earliest moment the probes' total cost is within budget again. */
	double due = s->start + s->cost / s->budget - now;
	/* Jitter, so that windows do not fall in step with periodic work. */
	double jitter = uniform01(s) * JITTER * cost / s->budget;

	return (due > s->min_gap ? due : s->min_gap) + jitter;
}

void sampler_window_opened(struct sampler *s, double now)
{
	double length = sampler_window_allowed(s, now);

	s->in_window = true;
	s->windows++;
	s->phase_start = now;
	s->phase_end = now + (length > MIN_WINDOW ? length : MIN_WINDOW);
}

void sampler_window_closed(struct sampler *s, double now, uint64_t hits, double cost)
{
	double length = now - s->phase_start;

	s->in_window = false;
	if (length > 0.001) {
		double rate = hits / length;

		if (!s->rated_windows || rate < s->min_rate)
			s->min_rate = rate;
		if (!s->rated_windows || rate > s->max_rate)
			s->max_rate = rate;
		s->rated_windows++;
	}
	s->window_time += length;
	s->hits += hits;
	s->cost += cost;
	s->phase_start = now;
	s->phase_end = now + sampler_gap_after(s, now, cost);
}

double sampler_overhead(const struct sampler *s, double elapsed)
{
	/* The target ran elapsed - cost seconds of its own work. */
	return elapsed > s->cost ? s->cost / (elapsed - s->cost) : 0;
}

/* Fewer traced allocations than this, or rates further apart, and estimates are rough. */
#define FEW_TRACED 1000
#define BURSTY_RATIO 10

const char *sampler_doubt(const struct sampler *s, char *buf, size_t n)
{
	if (s->hits < FEW_TRACED) {
		snprintf(buf, n, "only %llu allocations traced in %llu windows",
			 (unsigned long long)s->hits, (unsigned long long)s->windows);
		return buf;
	}
	/* A window with no allocation next to busy ones is a burst seen once. */
	if (s->rated_windows >= 2 && s->max_rate > BURSTY_RATIO * (s->min_rate + 1)) {
		snprintf(buf, n,
			 "the allocation rate varied from %.0f to %.0f a second between windows "
			 "(bursts: some windows caught them, others did not)",
			 s->min_rate, s->max_rate);
		return buf;
	}
	return NULL;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "calibrate.h"
#include "clock.h"
#include "windows.h"
#include "rbmemtrace.skel.h"

/* Hits from here on are the next window's, even those while it is being attached. */
static void snapshot_hits(struct windows *w)
{
	int i;

	for (i = 0; i < ALLOC_PROBES; i++)
		w->hits_at_open[i] =
			__atomic_load_n(&w->skel->bss->probe_hits[i], __ATOMIC_RELAXED);
}

/*
 * What a hit on each allocation probe costs the target, apart from the
 * program (timed by the BPF side as it runs): the trap, timed here for
 * both kinds of first instruction.
 */
static void measure_trap_costs(struct windows *w, double budget_percent)
{
	/* A trap costs what it costs on this machine: one timing serves every target of a run. */
	static double emulated, stepped;
	static bool measured;
	int i, err = 0;

	if (!measured) {
		err = calibrate_uretprobe_costs(w->skel, &emulated, &stepped);
		measured = !err;
	}
	if (err) {
		/* The slowest this was seen here, to stay within the budget. */
		emulated = stepped = 15e-6;
		fprintf(stderr, "rbmemtrace: warning: cannot time a uretprobe here (%s); assuming "
				"%.0f us per hit\n",
			strerror(-err), stepped * 1e6);
	}
	for (i = 0; i < ALLOC_PROBES; i++)
		w->hit_cost[i] = w->probes->alloc_emulated[i] ? emulated : stepped;
	w->stepped_cost = stepped;
	if (w->verbose)
		fprintf(stderr, "rbmemtrace: sampling: budget %.3g%%; a trap costs %.2f us (entry "
				"emulated) or %.2f us (stepped), plus the program as timed\n",
			budget_percent, emulated * 1e6, stepped * 1e6);
}

int windows_start(struct windows *w, struct probes *probes, struct rbmemtrace_bpf *skel,
		  double budget_percent, int verbose)
{
	double now;

	w->probes = probes;
	w->skel = skel;
	w->verbose = verbose;
	w->ncpus = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
	/* Nothing counts until a window is fully open, the first one too. */
	skel->bss->sampling = 1;
	__atomic_store_n(&skel->bss->window_open, 0, __ATOMIC_RELEASE);
	measure_trap_costs(w, budget_percent);
	now = now_seconds();
	sampler_init(&w->sampler, budget_percent, (uint64_t)(now * 1e9) ^ getpid(), now);
	/* The first window opens in windows_step, once the budget allows one. */
	return 0;
}

void windows_charge(struct windows *w, double seconds)
{
	w->sampler.cost += seconds;
}

double windows_stepped_hit_cost(const struct windows *w)
{
	return w->stepped_cost;
}

/* The program's mean time per hit, from the hits it timed itself; a guess before any. */
static double program_cost(struct windows *w)
{
	uint64_t timed = __atomic_load_n(&w->skel->bss->program_timed, __ATOMIC_RELAXED);
	uint64_t ns = __atomic_load_n(&w->skel->bss->program_ns, __ATOMIC_RELAXED);

	return timed ? ns / 1e9 / timed : 1.5e-6;
}

/* Traced allocations since the window opened, and what they cost the target. */
static uint64_t window_hits(struct windows *w, double *cost)
{
	double program = program_cost(w);
	uint64_t hits = 0;
	int i;

	*cost = 0;
	for (i = 0; i < ALLOC_PROBES; i++) {
		uint64_t n = __atomic_load_n(&w->skel->bss->probe_hits[i], __ATOMIC_RELAXED) -
			     w->hits_at_open[i];

		hits += n;
		*cost += n * (w->hit_cost[i] + program);
	}
	return hits;
}

void windows_close(struct windows *w)
{
	__atomic_store_n(&w->skel->bss->window_open, 0, __ATOMIC_RELEASE);
}

int windows_step(struct windows *w, double now)
{
	struct sampler *s = &w->sampler;
	int err;

	if (now < s->phase_end)
		return 0;
	if (!s->in_window && sampler_window_allowed(s, now) <= 0) {
		s->phase_end = sampler_next_allowed(s);
		return 0;
	}
	if (s->in_window) {
		uint64_t hits;
		double cost;

		windows_close(w);
		probes_detach_alloc(w->probes);
		hits = window_hits(w, &cost);
		/* The target cannot have lost more than every core for the window's length. */
		if (cost > (now_seconds() - s->phase_start) * w->ncpus)
			cost = (now_seconds() - s->phase_start) * w->ncpus;
		if (w->verbose > 1)
			fprintf(stderr, "rbmemtrace: window %" PRIu64 ": %.1f ms, %" PRIu64
					" hits, %.2f ms of the target's time (program %.2f us a hit)\n",
				s->windows, (now_seconds() - s->phase_start) * 1e3, hits, cost * 1e3,
				program_cost(w) * 1e6);
		sampler_window_closed(s, now_seconds(), hits, cost);
	} else if (snapshot_hits(w), (err = probes_attach_alloc(w->probes, true)) == 0) {
		__atomic_store_n(&w->skel->bss->window_open, 1, __ATOMIC_RELEASE);
		if (w->verbose > 1)
			fprintf(stderr, "rbmemtrace: window %" PRIu64 ": attached in %.1f ms\n",
				s->windows + 1, (now_seconds() - now) * 1e3);
		/* Attaching can wait for the last window's probes to come off. */
		sampler_window_opened(s, now_seconds());
	} else if (!s->windows) {
		return err; /* the first attach: a real error, not an exit under way */
	} else {
		/* The target may be exiting: try again after a gap. */
		s->phase_end = now + s->min_gap;
	}
	return 0;
}

void windows_stop(struct windows *w, double now)
{
	if (w->sampler.in_window) {
		double cost;
		uint64_t hits = window_hits(w, &cost);

		sampler_window_closed(&w->sampler, now, hits, cost);
	}
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "calibrate.h"
#include "clock.h"
#include "windows.h"
#include "rbmemtrace.skel.h"
#include "target_mem.h"

/* A window attaches its probes and detaches them: each charged as long as the attach took... */
#define ATTACH_AND_DETACH 2
/*
 * ...up to this.  Attaching to a Ruby takes 5-15 ms here (2 cores, kernel
 * 6.18), nearly all of it the kernel's own waits, which do not block the
 * target (docs/overhead.md); right after another tracer detached, the
 * same attach took 164 ms: charged in full, it would stop sampling for
 * 16 s at 2%.
 */
#define ATTACH_CHARGE_MAX 0.020
/* What the first attach is expected to take, before one was timed. */
#define FIRST_ATTACH_GUESS 0.008

/* Hits from here on are the next window's, even those while it is being attached. */
static void snapshot_hits(struct windows *w)
{
	int i;

	for (i = 0; i < w->probes->sites.alloc_probes; i++)
		w->hits_at_open[i] =
			__atomic_load_n(&w->st->probe_hits[i], __ATOMIC_RELAXED);
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
	for (i = 0; i < w->probes->sites.alloc_probes; i++)
		w->hit_cost[i] = w->probes->sites.alloc_emulated[i] ? emulated : stepped;
	w->stepped_cost = stepped;
	if (w->verbose)
		fprintf(stderr, "rbmemtrace: sampling: budget %.3g%%; a trap costs %.2f us (entry "
				"emulated) or %.2f us (stepped), plus the program as timed\n",
			budget_percent, emulated * 1e6, stepped * 1e6);
}

int windows_start(struct windows *w, struct probes *probes, struct rbmemtrace_bpf *skel,
		  struct proc_state *st, pid_t pid, const struct gc_allocated_counter *counter,
		  double budget_percent, int verbose)
{
	double now;
	int i;

	w->probes = probes;
	w->skel = skel;
	w->st = st;
	w->verbose = verbose;
	w->pid = pid;
	w->counter = *counter;
	w->ncpus = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
	/* Nothing counts until a window is fully open, the first one too. */
	st->sampling = 1;
	st->alloc_count_addr = counter->addr;
	st->alloc_count_pools = counter->pools;
	st->alloc_count_stride = counter->stride;
	__atomic_store_n(&st->window_open, 0, __ATOMIC_RELEASE);
	/* Which probes' first instruction is emulated decides what their traps cost. */
	i = probes_resolve_alloc(probes);
	if (i)
		return i;
	measure_trap_costs(w, budget_percent);
	/*
	 * Until windows show which probes are hit, the cheaper kind (the usual
	 * allocators start with a push): it only sizes the first window, which
	 * is charged what its hits cost and closes if they cost more.
	 */
	for (i = 0; i < w->probes->sites.alloc_probes; i++)
		if (!w->mean_trap || w->hit_cost[i] < w->mean_trap)
			w->mean_trap = w->hit_cost[i];
	now = now_seconds();
	sampler_init(&w->sampler, budget_percent, (uint64_t)(now * 1e9) ^ getpid(), now);
	w->sampler.set.window_extra = ATTACH_AND_DETACH * FIRST_ATTACH_GUESS;
	/* The first window opens in windows_step, once the budget allows one. */
	return 0;
}

/* The charges that waited for the armed window, taken to be paid. */
static double take_deferred(struct windows *w)
{
	double deferred = w->deferred_charge;

	w->deferred_charge = 0;
	return deferred;
}

/* Pays what waited for a window that did not open, and what its attempt cost. */
static void pay_deferred(struct windows *w, double own)
{
	w->sampler.cost += own + take_deferred(w);
}

/*
 * A window is armed with the budget for the whole of it in hand: what is
 * charged while it waits for its place in the stream (passes, the tracer's
 * CPU) waits too, else the window would open with less than it was armed
 * for, and a window cut short favours a burst's start.
 */
void windows_charge(struct windows *w, double seconds)
{
	if (w->sampler.state == SAMPLER_ARMED)
		w->deferred_charge += seconds;
	else
		w->sampler.cost += seconds;
}

double windows_stepped_hit_cost(const struct windows *w)
{
	return w->stepped_cost;
}

double windows_next(const struct windows *w)
{
	return w->sampler.next_time;
}

bool windows_open(const struct windows *w)
{
	return w->sampler.state == SAMPLER_OPEN;
}

/* Hits timed before the program's time per hit is trusted. */
#define TIMED_ENOUGH 4

static void read_timing(struct windows *w, uint64_t t[4])
{
	struct proc_state *b = w->st;

	t[0] = __atomic_load_n(&b->program_ns, __ATOMIC_RELAXED);
	t[1] = __atomic_load_n(&b->program_timed, __ATOMIC_RELAXED);
	t[2] = __atomic_load_n(&b->skip_ns, __ATOMIC_RELAXED);
	t[3] = __atomic_load_n(&b->skip_timed, __ATOMIC_RELAXED);
}

/*
 * What the program costs a hit, recorded or passed by: as timed in this
 * window if it timed enough, else as in the last windows, else a guess on
 * the dear side (a stack walk).  Not the mean since the start: the first
 * hits store every new call path and cost tens of times what later ones do.
 */
static void hit_costs_now(struct windows *w, bool in_window, struct hit_costs *c)
{
	uint64_t t[4];

	c->trap = w->mean_trap;
	c->record = w->recent_record ? w->recent_record : 20e-6;
	c->skip = w->recent_skip ? w->recent_skip : 0.3e-6;
	if (!in_window)
		return;
	read_timing(w, t);
	if (t[1] - w->timed_at_open[1] >= TIMED_ENOUGH)
		c->record = (t[0] - w->timed_at_open[0]) / 1e9 / (t[1] - w->timed_at_open[1]);
	if (t[3] - w->timed_at_open[3] >= TIMED_ENOUGH)
		c->skip = (t[2] - w->timed_at_open[2]) / 1e9 / (t[3] - w->timed_at_open[3]);
}

static void hit_costs(struct windows *w, struct hit_costs *c)
{
	hit_costs_now(w, false, c);
}

/* After a window: what its hits cost, for the next windows' plans. */
static void learn_program(struct windows *w)
{
	struct hit_costs c;
	uint64_t t[4];

	read_timing(w, t);
	hit_costs_now(w, true, &c);
	if (t[1] - w->timed_at_open[1] >= TIMED_ENOUGH)
		w->recent_record = w->recent_record ? (w->recent_record + c.record) / 2 : c.record;
	if (t[3] - w->timed_at_open[3] >= TIMED_ENOUGH)
		w->recent_skip = w->recent_skip ? (w->recent_skip + c.skip) / 2 : c.skip;
}

/* The open window as the BPF side counted it, and what it cost the target so far. */
static void window_view(struct windows *w, double now, struct window_view *v)
{
	struct proc_state *b = w->st;
	double traps = 0, longest;
	struct hit_costs c;
	int i;

	hit_costs_now(w, true, &c);
	v->first = __atomic_load_n(&b->win_first, __ATOMIC_ACQUIRE);
	v->hit = v->first != 0;
	v->burst = __atomic_load_n(&b->win_burst, __ATOMIC_RELAXED);
	v->done = __atomic_load_n(&b->win_done, __ATOMIC_RELAXED);
	v->last = __atomic_load_n(&b->win_last, __ATOMIC_RELAXED);
	v->recorded = __atomic_load_n(&b->win_recorded, __ATOMIC_RELAXED);
	v->hits = 0;
	for (i = 0; i < w->probes->sites.alloc_probes; i++) {
		uint64_t n = __atomic_load_n(&b->probe_hits[i], __ATOMIC_RELAXED) - w->hits_at_open[i];

		v->hits += n;
		traps += n * w->hit_cost[i];
	}
	v->cost = traps + v->recorded * c.record +
		  (v->hits > v->recorded ? v->hits - v->recorded : 0) * c.skip;
	/* The target cannot have lost more than every core for the window's length. */
	longest = (now - w->sampler.opened) * w->ncpus;
	if (v->cost > longest)
		v->cost = longest;
}

/* Keeps where a window's hits begin and what each of its records weighs. */
static void remember_window(struct windows *w, uint32_t weight)
{
	size_t probes = (size_t) w->probes->sites.alloc_probes;

	if (w->nopened == w->opened_cap) {
		size_t cap = w->opened_cap ? w->opened_cap * 2 : 64;
		uint64_t *at = realloc(w->opened_at, cap * probes * sizeof(*at));
		uint32_t *wt;

		if (!at)
			return;
		w->opened_at = at;
		wt = realloc(w->opened_weight, cap * sizeof(*wt));
		if (!wt)
			return;
		w->opened_weight = wt;
		w->opened_cap = cap;
	}
	memcpy(w->opened_at + w->nopened * probes, w->hits_at_open, probes * sizeof(uint64_t));
	w->opened_weight[w->nopened++] = weight;
}

uint32_t windows_weight_of(const struct windows *w, uint64_t tag)
{
	size_t probes = (size_t) w->probes->sites.alloc_probes, lo = 0, hi = w->nopened;
	unsigned int probe = (unsigned int)(tag >> 56);
	uint64_t hit = tag & RBM_SEQ_HIT_MASK;

	if (!w->nopened || probe >= probes)
		return RBM_WEIGHT_ONE;
	/* The last window opened at or before this hit: between windows nothing is recorded. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->opened_at[mid * probes + probe] <= hit)
			lo = mid;
		else
			hi = mid;
	}
	return w->opened_weight[lo];
}

void windows_free(struct windows *w)
{
	calibrate_release_wait();
	free(w->opened_at);
	free(w->opened_weight);
	w->opened_at = NULL;
	w->opened_weight = NULL;
	w->nopened = w->opened_cap = 0;
}

/* The window's plan into the BPF side's state, then the window open there. */
static void arm_window(struct windows *w, const struct window_plan *plan)
{
	struct proc_state *b = w->st;
	struct sampler *s = &w->sampler;
	struct timespec ts;

	b->win_start = plan->start;
	b->win_len = plan->len;
	b->win_sample = plan->sample >= 1 ? 0 : (__u32) (plan->sample * 4294967296.0);
	b->win_weight =
	    plan->sample >= 1 ? RBM_WEIGHT_ONE : (__u32) (RBM_WEIGHT_ONE / plan->sample + 0.5);
	remember_window(w, b->win_weight);
	b->win_bit = 1ULL << (s->windows % 64);
	b->win_idle_ns = (__u64) (plan->idle * 1e9);
	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns's clock */
	b->win_open_ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	__atomic_store_n(&b->window_open, 1, __ATOMIC_RELEASE);
}

/* -vv: a line per window. */
static void log_window(struct windows *w, double now, const struct window_plan *plan,
		       const struct hit_costs *c)
{
	struct sampler *s = &w->sampler;

	fprintf(stderr,
		"rbmemtrace: window %" PRIu64 ": attached in %.1f ms at %" PRIu64
		" (armed for %" PRIu64 "): %" PRIu64 " positions, 1 in %.1f recorded, "
		"at most %.1f ms (trap %.2f, program %.2f or %.2f us; bursts %" PRIu64 ")\n",
		s->windows, (now_seconds() - now) * 1e3, s->stream.last_pos, plan->start, plan->len,
		1 / plan->sample, plan->max_cost * 1e3, c->trap * 1e6, c->record * 1e6,
		c->skip * 1e6, s->stream.burst);
}

static int open_window(struct windows *w, double now)
{
	struct proc_state *b = w->st;
	struct sampler *s = &w->sampler;
	struct window_plan plan;
	struct hit_costs c;
	double attach_start, attached_in, attach_charge, extra;
	int err;

	/* Hits from here on are the window's, even those while it is being attached. */
	snapshot_hits(w);
	read_timing(w, w->timed_at_open);
	b->win_first = 0;
	b->win_burst = 0;
	b->win_done = 0;
	b->win_last = 0;
	b->win_recorded = 0;
	attach_start = now_seconds();
	err = probes_attach_alloc(w->probes, true);
	attached_in = now_seconds() - attach_start;
	attach_charge =
	    ATTACH_AND_DETACH * (attached_in < ATTACH_CHARGE_MAX ? attached_in : ATTACH_CHARGE_MAX);
	if (err) {
		pay_deferred(w, attach_charge);
		if (!s->windows)
			return err; /* the first attach: a real error, not an exit under way */
		/* The target may be exiting: try again after a gap. */
		s->state = SAMPLER_GATED;
		s->next_time = s->gap_end = now + 0.05;
		return 0;
	}
	hit_costs(w, &c);
	/*
	 * Attaching writes the breakpoints into the target's text under its
	 * memory-map lock, probe by probe, and flushes its TLBs; detaching does
	 * it again.  Charged twice (the detach is not timed: it returns at once
	 * and goes on in the background), up to ATTACH_CHARGE_MAX each.  Puma
	 * under wrk: 8.4 ms an attach, 5 windows in 5 s, and 1.04x measured
	 * against 1.2% estimated without it.
	 * The sampler keeps a reserve for it (sampler.h): the window is cut
	 * for it only when it took longer than any lately.
	 */
	extra = attach_charge + take_deferred(w);
	sampler_window_opened(s, now_seconds(), &c, extra, &plan);
	arm_window(w, &plan);
	if (w->verbose > 1)
		log_window(w, now, &plan, &c);
	return 0;
}

void windows_close(struct windows *w)
{
	__atomic_store_n(&w->st->window_open, 0, __ATOMIC_RELEASE);
}

/* After a window: which traps the target met, for the next windows' plans. */
static void learn_trap(struct windows *w, const struct window_view *v)
{
	double traps = 0;
	int i;

	if (!v->hits)
		return;
	for (i = 0; i < w->probes->sites.alloc_probes; i++)
		traps += (w->st->probe_hits[i] - w->hits_at_open[i]) * w->hit_cost[i];
	w->mean_trap = traps / v->hits;
}

static void close_window(struct windows *w)
{
	struct window_view v;
	double t;

	windows_close(w);
	probes_detach_alloc(w->probes);
	t = now_seconds();
	window_view(w, t, &v);
	learn_trap(w, &v);
	learn_program(w);
	if (w->verbose > 1)
		fprintf(stderr, "rbmemtrace: window %" PRIu64 ": %.1f ms, %" PRIu64 " hits, %" PRIu64
				" recorded, %s from %" PRIu64 " to %" PRIu64 "%s; %.2f ms of the "
				"target's time (a trap %.2f us)\n",
			w->sampler.windows, (t - w->sampler.opened) * 1e3, v.hits, v.recorded,
			v.burst ? "burst" : "stretch", v.first, v.last,
			v.burst && !v.done ? " (cut)" : "", v.cost * 1e3, w->mean_trap * 1e6);
	sampler_window_closed(&w->sampler, t, &v);
}

/* One read of the span of the pools' counters: it is looked at every half millisecond. */
static bool read_counter(struct windows *w, uint64_t *pos)
{
	const struct gc_allocated_counter *c = &w->counter;
	uint64_t span[8 * 256 / 8];
	uint32_t i, pools = c->pools > 1 ? c->pools : 1;
	size_t words = (size_t)(pools - 1) * (c->stride / 8) + 1;

	if (!c->addr || (pools > 1 && (c->stride % 8 || words > sizeof(span) / 8)) ||
	    target_read(w->pid, c->addr, span, words * 8))
		return false;
	*pos = 0;
	for (i = 0; i < pools; i++)
		*pos += span[(size_t)i * (c->stride / 8)];
	return true;
}

int windows_step(struct windows *w, double now)
{
	struct sampler *s = &w->sampler;
	struct hit_costs c;
	uint64_t pos = 0;
	bool have;

	/* An armed window that gave way (its target idle, or gone) leaves its charges due. */
	if (s->state != SAMPLER_ARMED && w->deferred_charge)
		pay_deferred(w, 0);
	if (now < s->next_time)
		return 0;
	if (s->state == SAMPLER_OPEN) {
		struct window_view v;

		window_view(w, now, &v);
		if (sampler_window_due(s, now, &v))
			close_window(w);
		return 0;
	}
	have = read_counter(w, &pos);
	hit_costs(w, &c);
	if (!sampler_step(s, now, have, pos, &c))
		return 0;
	/* A link still coming off would hold the attach: the window opens a little later. */
	if (__atomic_load_n(&w->probes->links.detaching, __ATOMIC_ACQUIRE) > 0) {
		s->next_time = now + 0.001;
		return 0;
	}
	return open_window(w, now);
}

void windows_cut(struct windows *w, double now)
{
	(void)now;
	if (windows_open(w))
		close_window(w);
}

void windows_stop(struct windows *w, double now)
{
	pay_deferred(w, 0);
	if (windows_open(w)) {
		struct window_view v;

		window_view(w, now, &v);
		sampler_window_closed(&w->sampler, now, &v);
	}
}

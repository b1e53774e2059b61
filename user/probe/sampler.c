// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include "sampler.h"

/* What a window costs the target when its bursts ask for no more (the old 20 ms windows cost up to 20). */
#define NOMINAL_COST 0.010
/* One window costs at most the budget of this many seconds (80 ms at 2%), within these bounds. */
#define CAP_SECONDS 4.0
#define CAP_MAX 0.100
/* No window smaller than this: attaching would cost more than it samples. */
#define MIN_COST 0.001
/* Windows cost at most this many times the budget of the time around them, and never more than half. */
#define DUTY_CAP_PER_BUDGET 10
#define DUTY_CAP_MAX 0.5
/*
 * No allocation for this long is an idle.  Longer than a minor GC, shorter
 * than a sleep between requests; the BPF side ends a burst window at one.
 */
#define IDLE 0.005
/* Armed, the counter is read at least this often (idles must be seen), and at most this often. */
#define POLL_MAX IDLE
#define POLL_MIN 0.0005
/* Recording fewer than one covered allocation in this many helps no more. */
#define SAMPLE_MIN (1.0 / 64)
/* A window sized for a burst covers this much more than the largest seen... */
#define BURST_MARGIN 1.05
/* ...and is planned to cost this share of what it may, for costs that vary. */
#define COST_MARGIN 0.85
/*
 * Before the first window the counter is followed this long, or until a
 * burst between two idles was seen: a window sized before the target's
 * bursts are known would cover the start of one only.
 */
#define FIRST_LOOK 0.25

static double uniform01(struct sampler *s)
{
	/* xorshift64*: plenty for spreading windows, and repeatable in tests. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 0x2545F4914F6CDD1DULL) >> 11) / (double)(1ULL << 53);
}

static double clamp(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

void sampler_init(struct sampler *s, double budget_percent, uint64_t seed, double now)
{
	double b = budget_percent / 100;

	*s = (struct sampler){
	    /* cost / elapsed <= b / (1 + b) is a slowdown of at most b */
	    .set.budget = b / (1 + b),
	    .set.cost_cap = clamp(b * CAP_SECONDS, NOMINAL_COST, CAP_MAX),
	    .set.duty =
		b * DUTY_CAP_PER_BUDGET < DUTY_CAP_MAX ? b * DUTY_CAP_PER_BUDGET : DUTY_CAP_MAX,
	    .rng = seed ? seed : 0x9e3779b97f4a7c15ULL,
	    .state = SAMPLER_GATED,
	};
	s->set.nominal = NOMINAL_COST < s->set.cost_cap ? NOMINAL_COST : s->set.cost_cap;
	/* The first window is armed as soon as the budget allows one (sampler_window_allowed). */
	s->start = s->next_time = s->gap_end = s->stream.last_poll = s->stream.last_move = now;
}

/*
 * A window may cost the target up to its whole length (allocations pouring
 * in, every one trapped): the budget must hold at its end even then, so a
 * window and what it brings never cost more than the budget's headroom.
 */
static double headroom(const struct sampler *s, double now)
{
	return (s->set.budget * (now - s->start) - s->cost) / (1 - s->set.budget);
}

/* What a window's hits may cost when what it brings besides them is extra. */
static double hits_allowed(const struct sampler *s, double now, double extra)
{
	double h = headroom(s, now) - extra;

	if (h < MIN_COST || now < s->gap_end)
		return 0;
	return h < s->set.cost_cap ? h : s->set.cost_cap;
}

double sampler_window_allowed(const struct sampler *s, double now)
{
	return hits_allowed(s, now, s->set.window_extra);
}

/* When the budget first affords a window whose hits cost this (and its extra). */
static double affordable_at(const struct sampler *s, double cost)
{
	double t = s->start +
		   (s->cost + (cost + s->set.window_extra) * (1 - s->set.budget)) / s->set.budget;

	return t > s->gap_end ? t : s->gap_end;
}

double sampler_next_allowed(const struct sampler *s)
{
	return affordable_at(s, MIN_COST);
}

/* Follows the counter: how fast it runs, where the target idles, how long its bursts are. */
static void follow_stream(struct sampler *s, double now, uint64_t pos)
{
	double dt = now - s->stream.last_poll;

	if (!s->stream.have_pos) {
		s->stream.have_pos = true;
		s->stream.pos_start = s->stream.last_pos = s->stream.run_from = pos;
		s->stream.last_poll = s->stream.last_move = now;
		return;
	}
	/* Unread while a window was open: what it covered is no run the polls saw. */
	if (s->stream.resync) {
		s->stream.resync = false;
		s->stream.in_run = false;
		s->stream.last_pos = pos;
		s->stream.last_poll = s->stream.last_move = now;
		return;
	}
	if (pos > s->stream.last_pos) {
		double rate = dt > 0 ? (pos - s->stream.last_pos) / dt : 0;

		/* The fastest rate of the last seconds: it decides how often to look. */
		s->stream.peak_rate =
		    rate > s->stream.peak_rate * 0.99 ? rate : s->stream.peak_rate * 0.99;
		if (s->state == SAMPLER_GATED)
			s->stream.gated_allocs += pos - s->stream.last_pos;
		if (!s->stream.in_run) {
			s->stream.in_run = true;
			s->stream.run_from = s->stream.last_pos;
		}
		s->stream.last_move = now;
	} else if (s->stream.in_run && now - s->stream.last_move >= IDLE) {
		/* A burst between two idles: windows are sized to cover one whole. */
		uint64_t run = s->stream.last_pos - s->stream.run_from;

		s->stream.burst =
		    run > s->stream.burst * 0.9 ? run : (uint64_t) (s->stream.burst * 0.9);
		s->stream.in_run = false;
	}
	s->stream.last_pos = pos;
	s->stream.last_poll = now;
}

/* Allocations in a burst, as large as any seen lately, the one under way included. */
static uint64_t burst_size(const struct sampler *s)
{
	uint64_t run = s->stream.in_run ? s->stream.last_pos - s->stream.run_from : 0;

	return run > s->stream.burst ? run : s->stream.burst;
}

/* Seconds a covered stream position costs the target when a share `sample` is recorded. */
static double position_cost(const struct hit_costs *c, double sample)
{
	return c->trap + c->skip + sample * (c->record - c->skip);
}

/*
 * The window to open when max_cost is what it may cost: the share of
 * covered allocations to record, and what it will cost.  A share that
 * costs about as much as the traps already paid: spread, and cheap.
 * Bursts that a window can cover whole get a window that does, at a
 * thinner share if need be: one window then sees a whole burst, whatever
 * it is made of, and no part of a burst weighs more than another.
 */
static double plan_window(const struct sampler *s, const struct hit_costs *c, double max_cost,
			  double *sample)
{
	double program = c->record > c->skip ? c->record - c->skip : 0;
	double need = (double)burst_size(s) * BURST_MARGIN;
	double cost = s->set.nominal < max_cost ? s->set.nominal : max_cost;

	max_cost *= COST_MARGIN;
	*sample = clamp(program > c->trap ? c->trap / program : 1, SAMPLE_MIN, 1);
	if (need > 0 && need * position_cost(c, SAMPLE_MIN) <= max_cost * 1.001) {
		double fit = program > 0 ? (max_cost / need - c->trap - c->skip) / program : 1;

		*sample = clamp(fit < *sample ? fit : *sample, SAMPLE_MIN, 1);
		if (need * position_cost(c, *sample) > cost)
			cost = need * position_cost(c, *sample);
		cost = cost < max_cost ? cost : max_cost;
	}
	return cost;
}

static void arm(struct sampler *s, double now)
{
	double expect = s->stream.mean_cost > 0 ? s->stream.mean_cost : s->set.nominal;
	/* Seconds between windows that spend the budget, at the target's mean allocation rate. */
	double gap = expect / s->set.budget;
	double rate = now > s->start && s->stream.have_pos
			  ? (s->stream.last_pos - s->stream.pos_start) / (now - s->start)
			  : 0;

	s->state = SAMPLER_ARMED;
	/* Uniform over two gaps' allocations: window starts fall anywhere in the target's cycles. */
	if (s->stream.have_pos) {
		s->arm_at = s->stream.last_pos + (uint64_t) (uniform01(s) * 2 * gap * rate);
		s->next_time = now;
	} else {
		s->arm_at = 0;
		s->next_time = now + uniform01(s) * 2 * gap;
	}
}

/*
 * What the next window must be able to cost when it opens: one that covers
 * a whole burst at the thinnest share if bursts can be covered whole at
 * all, else the nominal window.
 */
static double window_wanted(const struct sampler *s, const struct hit_costs *c)
{
	double sample, want = plan_window(s, c, s->set.cost_cap, &sample);

	if (want > s->set.nominal && burst_size(s) > 0)
		want = burst_size(s) * BURST_MARGIN * position_cost(c, SAMPLE_MIN);
	return want / COST_MARGIN;
}

bool sampler_step(struct sampler *s, double now, bool have_pos, uint64_t pos,
		  const struct hit_costs *c)
{
	if (have_pos)
		follow_stream(s, now, pos);
	if (s->state == SAMPLER_OPEN)
		return false;
	if (s->state == SAMPLER_GATED) {
		bool looked = !have_pos || s->stream.burst > 0 || now - s->start >= FIRST_LOOK;
		double want = window_wanted(s, c);

		/*
		 * A window is armed only once the budget pays for the window it
		 * will want: armed, it opens where the stream reaches its random
		 * place, not when the budget allows it.  A window that waited
		 * for the budget would open at a time, and most time is idle: it
		 * would start at the first allocation of a burst, again and
		 * again, and the start of bursts longer than a window would
		 * weigh more than the rest.
		 */
		if (!looked || sampler_window_allowed(s, now) < want) {
			double next = affordable_at(s, want);

			/* Armed or not, idles are seen by looking at least every POLL_MAX. */
			if (!looked || (have_pos && next > now + POLL_MAX))
				next = now + POLL_MAX;
			s->next_time = next > now ? next : now + POLL_MIN;
			return false;
		}
		arm(s, now);
	}
	if (have_pos && pos < s->arm_at) {
		/* Look again before the counter could reach arm_at at the fastest rate seen. */
		s->next_time = now + clamp(s->stream.peak_rate > 0
					       ? (s->arm_at - pos) / s->stream.peak_rate / 2
					       : POLL_MAX,
					   POLL_MIN, POLL_MAX);
		return false;
	}
	if (!have_pos && now < s->next_time)
		return false;
	/* The budget has only grown since the window was armed: it opens here, what it may. */
	if (sampler_window_allowed(s, now) >= MIN_COST)
		return true;
	s->next_time = now + POLL_MIN;
	return false;
}

void sampler_window_opened(struct sampler *s, double now, const struct hit_costs *c, double extra,
			   struct window_plan *plan)
{
	/*
	 * What the window brought is paid before its hits: they may cost what
	 * is left.  The reserve kept for it at arming makes that the window
	 * wanted, unless this one brought more than any lately.
	 */
	double allowed = hits_allowed(s, now, extra);
	double max_cost = allowed > MIN_COST ? allowed : MIN_COST;
	double sample, cost = plan_window(s, c, max_cost, &sample);

	s->cost += extra;
	/* The reserve is an upper bound: the largest of the last few windows'. */
	s->set.recent_extra[s->windows % SAMPLER_RECENT_EXTRA] = extra;
	s->set.window_extra = 0;
	for (int i = 0; i < SAMPLER_RECENT_EXTRA; i++)
		if (s->set.recent_extra[i] > s->set.window_extra)
			s->set.window_extra = s->set.recent_extra[i];

	*plan = (struct window_plan){
	    .start = s->stream.have_pos ? s->arm_at : 0,
	    .len = (uint64_t) (cost / position_cost(c, sample)) + 1,
	    .sample = sample,
	    .max_cost = max_cost,
	    .idle = IDLE,
	};
	s->plan = *plan;
	s->state = SAMPLER_OPEN;
	s->opened = now;
	s->windows++;
	s->sample_sum += sample;
	s->next_time = now + POLL_MAX;
}

/* The first stream position the window records, once it had a hit. */
static uint64_t window_begin(const struct sampler *s, const struct window_view *v)
{
	return v->first > s->plan.start ? v->first : s->plan.start;
}

bool sampler_window_due(struct sampler *s, double now, const struct window_view *v)
{
	uint64_t begin;

	if (v->cost >= s->plan.max_cost || v->done)
		return true;
	/* An idle target costs nothing: the window waits for its next allocation. */
	if (!v->hit) {
		s->next_time = now + POLL_MAX;
		return false;
	}
	begin = window_begin(s, v);
	if (v->last >= begin + s->plan.len)
		return true;
	/* The probes stay on until this notices: look often, they cost the target while on. */
	s->next_time = now + POLL_MIN * 2;
	return false;
}

void sampler_window_closed(struct sampler *s, double now, const struct window_view *v)
{
	uint64_t begin = window_begin(s, v), covered = 0;

	if (v->hit && v->last >= begin)
		covered = v->last - begin + 1 < s->plan.len ? v->last - begin + 1 : s->plan.len;
	s->window_time += now - s->opened;
	s->cost += v->cost;
	s->hits += v->recorded;
	s->probe_hits += v->hits;
	s->covered += covered;
	if (v->burst) {
		s->burst_windows++;
		if (v->done && covered > s->stream.burst * 0.9)
			s->stream.burst = covered;
		if (!v->done)
			s->truncated_windows++;
		/* Covered all it was planned for before the burst's end: bursts are longer. */
		if (!v->done && covered >= s->plan.len && covered * 2 > s->stream.burst)
			s->stream.burst = covered * 2;
	}
	if (v->hit)
		s->stream.mean_cost =
		    s->stream.mean_cost > 0 ? 0.7 * s->stream.mean_cost + 0.3 * v->cost : v->cost;
	/* The duty cap: a costly window is followed by a gap, whatever the budget's headroom. */
	s->gap_end = now + v->cost * (1 / s->set.duty - 1);
	s->state = SAMPLER_GATED;
	s->next_time = now;
	s->stream.resync = true;
}

double sampler_overhead(const struct sampler *s, double elapsed)
{
	/* The target ran elapsed - cost seconds of its own work. */
	return elapsed > s->cost ? s->cost / (elapsed - s->cost) : 0;
}

/* Fewer traced allocations than this and estimates are rough. */
#define FEW_TRACED 1000
/* More of the target's allocations than this share made while windows were held back. */
#define GATED_SHARE 0.5

const char *sampler_doubt(const struct sampler *s, char *buf, size_t n)
{
	uint64_t total = s->stream.have_pos ? s->stream.last_pos - s->stream.pos_start : 0;

	if (s->hits < FEW_TRACED) {
		snprintf(buf, n, "only %llu allocations traced in %llu windows",
			 (unsigned long long)s->hits, (unsigned long long)s->windows);
		return buf;
	}
	if (total > 0 && s->stream.gated_allocs > GATED_SHARE * total) {
		snprintf(
		    buf, n,
		    "allocations came faster than the budget could sample: %.0f%% of them were "
		    "made while windows were held back (bursts weigh less than they should)",
		    100.0 * s->stream.gated_allocs / total);
		return buf;
	}
	/*
	 * A window cut short covered the start of a burst only; windows that
	 * opened inside bursts cover them anywhere.  Cut ones must be few.
	 */
	if (s->truncated_windows >= 2 && s->truncated_windows * 3 >= s->windows) {
		snprintf(buf, n,
			 "bursts of about %llu allocations are longer than one window can cover "
			 "(%llu of %llu windows opened at a burst's start and were cut short: the "
			 "start of a burst weighs more than its end)",
			 (unsigned long long) s->stream.burst,
			 (unsigned long long) s->truncated_windows,
			 (unsigned long long) s->windows);
		return buf;
	}
	return NULL;
}

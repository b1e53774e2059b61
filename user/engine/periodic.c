// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The loop of a continuous trace: the sessions of many.c polled as
 * ever, and at every period's end (start + k * every, the same moment for
 * every process) a report of each with a census taken then, its period
 * counted from the report before (period.c).  The sampling windows go on
 * across periods: each session's budget runs over the whole trace.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "diag.h"
#include "holders.h"
#include "period.h"
#include "periodic.h"

static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A period's process forgets its last walk and census. */
static void forget_start(struct periodic_proc *pp)
{
	if (pp->base) {
		verdict_base_free(pp->base);
		free(pp->base);
		pp->base = NULL;
	}
	if (pp->have_census)
		census_free(&pp->census);
	pp->have_census = false;
}

/*
 * The period's leak verdict: from the last period's walk and census (the
 * trace's start's, for the first) to now's; now's walk and census kept
 * for the next.  Said in the report when it cannot be judged.
 */
static int period_verdict(struct session *s, struct periodic_proc *pp, struct report *r,
			  struct census *now)
{
	struct verdict_base *next = calloc(1, sizeof(*next));
	const struct verdict_base *base = pp->base ? pp->base : s->snap.verdict;
	const struct census *start = pp->have_census		? &pp->census
				     : s->snap.have_census_start ? &s->snap.census_start
								 : NULL;
	int err;

	if (!next)
		return -ENOMEM;
	err = holders_add_period(s, r, base, start, now, next);
	forget_start(pp);
	pp->base = next;
	pp->census = *now;
	pp->have_census = true;
	return err;
}

static void drop_cohorts(struct periodic_proc *pp, bool lost)
{
	cohorts_free(&pp->cohorts);
	pp->have_cohorts = false;
	pp->cohorts_lost |= lost;
}

/*
 * The period's birth cohorts: now's slots against the last period's census
 * (the trace's start's, for the first), the births carried, and per class
 * its live objects by birth period into r.  Before period_verdict, which
 * keeps now as the next period's start.  A failure ends the cohorts of
 * this process, said once: later births could not be told.
 */
static void period_cohorts(struct session *s, struct periodic_proc *pp, struct report *r,
			   struct census *now)
{
	const struct census *before = pp->have_census		? &pp->census
				      : s->snap.have_census_start ? &s->snap.census_start
								  : NULL;
	unsigned int old_age = s->at.heap_layout ? s->at.heap_layout->old_age : 3;
	struct cohorts next;
	int err;

	if (pp->cohorts_lost || !before || (pp->have_census && !pp->have_cohorts))
		return;
	err = cohorts_carry(before, pp->have_census ? &pp->cohorts : NULL, now, old_age,
			    pp->number, &next);
	drop_cohorts(pp, err != 0);
	if (!err) {
		pp->cohorts = next;
		pp->have_cohorts = true;
		err = cohorts_to_report(now, &pp->cohorts, pp->number, r);
	} else {
		cohorts_free(&next);
	}
	if (err) {
		drop_cohorts(pp, true);
		rbm_warn("PID %d: no birth cohorts from period %llu on: %s", s->target.pid,
			 (unsigned long long) pp->number,
			 err == -ENOMEM ? "out of memory" : "the censuses cannot be compared");
	}
}

/* One process's report of the period ending now, handed to the sink. */
static void take_period(struct periodic *p, size_t i, double now)
{
	struct session *s = p->m.sessions[i];
	struct periodic_proc *pp = &p->procs[i];
	struct report r = {};
	struct period_info info = {.number = pp->number};
	char why[256] = "";
	int err;

	bool verdict = !s->launched && !s->opt.no_verdict;
	struct census census = {0};

	err = session_report_census_keep(s, &r, verdict ? &census : NULL, why, sizeof(why));
	if (!err && verdict)
		period_cohorts(s, pp, &r, &census);
	if (!err && verdict && period_verdict(s, pp, &r, &census))
		err = -ENOMEM;
	if (!err && verdict) {
		/* the last period's containers, watched through this one; this one's, through the next */
		session_watch_fill(s, r.verdict);
		session_watch_points(s, r.verdict);
	}
	if (err) {
		report_free(&r);
		/* A process gone is noticed by the next poll; one whose heap cannot be read, said
		 * once. */
		if (err == -EOPNOTSUPP && !pp->census_refused)
			rbm_warn("PID %d: no profiles: %s", s->target.pid, why);
		else if (err != -ESRCH && err != -EOPNOTSUPP)
			rbm_warn("PID %d: no profile for period %llu: %s", s->target.pid,
				 (unsigned long long) pp->number, why);
		pp->census_refused |= err == -EOPNOTSUPP;
		return;
	}
	r.end_reason = "period"; /* the trace goes on */
	info.time = unix_now();
	info.duration_s = now - (pp->have_last ? pp->last_at : s->start);
	if (report_set_period(&r, pp->have_last ? &pp->last : NULL, &info)) {
		report_free(&r);
		many_fail(&p->m, -ENOMEM, "out of memory building the period's report");
		return;
	}
	p->sink->publish(p->sink->ctx, p, i, &r);
	if (pp->have_last)
		report_free(&pp->last);
	pp->last = r;
	pp->have_last = true;
	pp->last_at = now;
	pp->number++;
}

static void added(void *ctx, struct many *m, size_t i)
{
	struct periodic *p = ctx;

	(void) m;
	memset(&p->procs[i], 0, sizeof(p->procs[i]));
	p->procs[i].number = p->at_start ? 0 : 1;
	if (p->at_start)
		take_period(p, i, now_seconds());
}

static void ended(void *ctx, struct many *m, size_t i)
{
	struct periodic *p = ctx;
	struct periodic_proc *pp = &p->procs[i];

	(void) m;
	forget_start(pp);
	drop_cohorts(pp, false);
	if (pp->have_last)
		pp->last.period.target_gone = true;
	if (p->sink->gone)
		p->sink->gone(p->sink->ctx, p, i, pp->have_last ? &pp->last : NULL);
}

static double turn(void *ctx, struct many *m, double now)
{
	struct periodic *p = ctx;
	double wait = 1;
	size_t i;

	if (now >= p->next) {
		for (i = 0; i < m->n; i++)
			if (!m->ended[i])
				take_period(p, i, now);
		/* A period the loop was too late for is not made up: the next one is whole. */
		p->next = p->start + (floor((now_seconds() - p->start) / p->every) + 1) * p->every;
	}
	if (p->sink->turn) {
		double w = p->sink->turn(p->sink->ctx, p, now_seconds());

		if (w < wait)
			wait = w;
	}
	now = now_seconds();
	return p->next - now < wait ? (p->next > now ? p->next - now : 0) : wait;
}

int periodic_attach(struct periodic *p, const struct many_options *mo, double every, bool at_start,
		    bool outlive, const struct periodic_sink *sink, char *err, size_t errlen)
{
	int ret;

	p->mo = *mo;
	p->every = every;
	p->at_start = at_start;
	p->sink = sink;
	p->hooks = (struct many_hooks){
	    .ctx = p, .added = added, .turn = turn, .ended = ended, .outlive_targets = outlive};
	p->start = now_seconds();
	p->next = p->start + every;
	ret = many_attach(&p->m, &p->mo, &p->hooks, err, errlen);
	if (ret) {
		periodic_close(p);
		return ret;
	}
	/* Periods count from the end of the first attach: a process found later has a shorter first
	 * one. */
	p->start = now_seconds();
	p->next = p->start + every;
	return 0;
}

int periodic_loop(struct periodic *p, volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	return many_run(&p->m, stop, err, errlen);
}

void periodic_close(struct periodic *p)
{
	size_t i;

	many_close(&p->m);
	for (i = 0; i < MANY_MAX; i++) {
		if (p->procs[i].have_last) {
			report_free(&p->procs[i].last);
			p->procs[i].have_last = false;
		}
		forget_start(&p->procs[i]);
		drop_cohorts(&p->procs[i], false);
	}
}

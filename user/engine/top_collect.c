// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <regex.h>
#include "census.h"
#include "census_model.h"
#include "clock.h"
#include "diag.h"
#include "proc_info.h"
#include "procmaps.h"
#include "targets.h"
#include "top_collect.h"
#include "verdict_run.h"
#include "why_select.h"

int top_collect_add(struct top_collector *c, struct top_model *m, pid_t pid, bool skippable,
		    char *err, size_t errlen)
{
	struct top_target *tt;
	struct top_proc *p;
	size_t i;
	int ret;

	for (i = 0; i < c->ntargets; i++)
		if (c->targets[i].target.pid == pid)
			return 0;
	if (c->ntargets == TOP_MAX_PROCS)
		goto too_many;
	tt = &c->targets[c->ntargets];
	memset(tt, 0, sizeof(*tt));
	if ((ret = target_memory_open(&tt->target, pid, err, errlen)) ||
	    (ret = target_heap_open(&tt->target, &tt->namer, err, errlen))) {
		if (!skippable)
			return ret;
		/* One of several --match found that cannot be read: its line, and the others */
		rbm_warn("%s", err);
		return 0;
	}
	p = top_model_proc(m, pid);
	if (!p) {
		class_namer_free(&tt->namer);
		goto too_many;
	}
	proc_command(pid, p->command, sizeof(p->command));
	p->ns_pid = proc_ns_pid(pid);
	snprintf(p->ruby_version, sizeof(p->ruby_version), "%s", tt->target.version);
	c->ntargets++;
	return 0;
too_many:
	snprintf(err, errlen, "too many processes: top shows at most %d", TOP_MAX_PROCS);
	return -E2BIG;
}

int top_collect_match(struct top_collector *c, struct top_model *m, const char *match, char *err,
		      size_t errlen)
{
	pid_t pids[TOP_MAX_PROCS];
	regex_t re;
	size_t n, j;
	int ret;

	if ((ret = target_match_compile(&re, match, err, errlen)))
		return ret;
	n = ruby_find_processes(&re, getpid(), RUBY_NEED_MEMORY, pids, TOP_MAX_PROCS - c->ntargets);
	regfree(&re);
	if (!n && !c->ntargets) {
		snprintf(err, errlen, "no Ruby process matches %s", match);
		return -ESRCH;
	}
	for (j = 0; j < n; j++)
		if ((ret = top_collect_add(c, m, pids[j], true, err, errlen)))
			return ret;
	if (!c->ntargets) {
		snprintf(err, errlen, "no Ruby process that matches %s can be read", match);
		return -ESRCH;
	}
	return 0;
}

/* Allocations per second of the class called name, from the sampled windows; -1 unknown. */
static double sampled_rate(const struct top_target *tt, const char *name)
{
	const struct report *r = &tt->drill;
	size_t i;

	if (!tt->have_drill || !r->have_estimates || r->duration_s <= 0)
		return -1;
	for (i = 0; i < r->nrows; i++)
		if (strcmp(r->rows[i].name, name) == 0)
			return r->rows[i].est.allocated / r->duration_s;
	return 0;
}

static void mark_gone(struct top_proc *p, struct top_target *tt, const char *why)
{
	tt->gone = true;
	p->gone = true;
	snprintf(p->state, sizeof(p->state), "%s", why);
}

/* The session's report as of now, kept for the drill-down and the allocation rates. */
static void refresh_drill(struct top_target *tt, struct top_proc *p)
{
	if (!tt->session)
		return;
	if (tt->have_drill)
		report_free(&tt->drill);
	memset(&tt->drill, 0, sizeof(tt->drill));
	tt->have_drill = session_report_now(tt->session, &tt->drill) == 0;
	p->sampling = !tt->session_ended;
	p->budget_percent = tt->session->opt.max_overhead;
	p->overhead_percent = tt->have_drill ? tt->drill.sampling.est_overhead * 100 : 0;
}

/* The header's figures of a process: its census's, Ruby's counters' rates, /proc's. */
static void set_header(struct top_target *tt, struct top_proc *p, const struct census *cen,
		       double t)
{
	struct gc_counts gc;

	p->slots = cen->slots;
	p->live = cen->live;
	p->free = cen->free;
	p->garbage = cen->garbage;
	p->census_s = cen->seconds;
	p->marking = cen->marking;
	ruby_target_gc_counts(&tt->target, &gc);
	if (gc.valid) {
		if (p->last_t > 0 && t > p->last_t) {
			p->gcs_per_s = (gc.gc_count - p->last_gc_count) / (t - p->last_t);
			p->allocs_per_s = (gc.allocated - p->last_allocated) / (t - p->last_t);
		}
		p->gc_count = gc.gc_count;
		p->last_gc_count = gc.gc_count;
		p->last_allocated = gc.allocated;
		p->last_t = t;
	}
	p->uptime_s = proc_uptime(tt->target.pid);
	p->rss_bytes = proc_rss(tt->target.pid);
}

/* One target's census into the model's frame (kept as it was when it cannot be read). */
static int refresh_one(struct top_target *tt, struct top_model *m, double t)
{
	struct top_proc *p = top_model_proc(m, tt->target.pid);
	pid_t pid = tt->target.pid;
	struct census cen = {};
	struct report r = {};
	char err[512];
	size_t i;
	int ret;

	if (!p)
		return 0;
	if (tt->gone) {
		top_frame_keep(m, pid);
		return 0;
	}
	ret = census_take(&cen, pid, &tt->target.layout, tt->target.objspace, false, err, sizeof(err));
	if (ret == -ESRCH || target_gone(pid) || !ruby_target_same_program(&tt->target)) {
		census_free(&cen);
		mark_gone(p, tt, target_gone(pid) ? "exited" : "no longer runs the same program");
		top_frame_keep(m, pid);
		return 0;
	}
	if (ret) {
		census_free(&cen);
		snprintf(p->state, sizeof(p->state), "cannot read the heap: %.100s", err);
		top_frame_keep(m, pid);
		return 0;
	}
	p->state[0] = 0;
	refresh_drill(tt, p);
	r.census_only = true;
	if (census_to_report(&cen, &tt->namer, &r, CENSUS_AT_END, NULL, NULL))
		goto oom;
	for (i = 0; i < r.nrows; i++) {
		const struct class_row *row = &r.rows[i];

		if (!row->census.live_end)
			continue;
		if (top_frame_set(m, pid, row->name, row->census.live_end, row->census.bytes_end,
				  row->census.old_end, sampled_rate(tt, row->name)))
			goto oom;
	}
	set_header(tt, p, &cen, t);
	report_free(&r);
	census_free(&cen);
	return 0;
oom:
	report_free(&r);
	census_free(&cen);
	return -ENOMEM;
}

/*
 * A window's probes must come off on time: a census taken while one is
 * open would hold it open and spend the target's budget.
 */
static void cut_window(struct top_target *tt)
{
	/* A window waiting for an idle target could stay open for long: it is cut. */
	if (tt->session && !tt->session_ended && windows_open(&tt->session->windows))
		windows_cut(&tt->session->windows, now_seconds());
}

static void close_windows(struct top_collector *c)
{
	size_t i;

	for (i = 0; i < c->ntargets; i++)
		cut_window(&c->targets[i]);
}

int top_collect_refresh(struct top_collector *c, struct top_model *m, double t, char *err,
			size_t errlen)
{
	size_t i;
	int ret = 0;

	close_windows(c);
	top_frame_begin(m, t);
	for (i = 0; i < c->ntargets && !ret; i++)
		ret = refresh_one(&c->targets[i], m, t);
	top_frame_end(m);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

int top_collect_sample(struct top_collector *c, struct top_model *m, pid_t pid, char *err,
		       size_t errlen)
{
	size_t i;

	for (i = 0; i < c->ntargets; i++) {
		struct top_target *tt = &c->targets[i];
		struct trace_options opt = {
		    .pid = tt->target.pid,
		    .max_objects = c->max_objects,
		    .depth = c->depth,
		    .max_stacks = 65536,
		    .max_overhead = c->max_overhead,
		    /*
		     * No walk at the session's start: --sites opens every
		     * process's; the verdict's walk is the drill-down's, for the
		     * process drilled into alone (top_collect_verdict_start).
		     */
		    .no_verdict = true,
		};
		int ret;

		if ((pid && tt->target.pid != pid) || tt->session || tt->gone)
			continue;
		tt->session = calloc(1, sizeof(*tt->session));
		if (!tt->session) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		ret = session_open(tt->session, &opt, err, errlen);
		/* Open but not started: closed here, as a failed open closed itself. */
		if (!ret && (ret = session_start(tt->session, err, errlen)))
			session_close(tt->session);
		if (ret) {
			free(tt->session);
			tt->session = NULL;
			return ret;
		}
		refresh_drill(tt, top_model_proc(m, tt->target.pid));
	}
	return 0;
}

int top_collect_poll(struct top_collector *c, double now, double *wait_out, char *err,
		     size_t errlen)
{
	double next = *wait_out;
	size_t i;

	for (i = 0; i < c->ntargets; i++) {
		struct top_target *tt = &c->targets[i];
		double wait;

		if (!tt->session || tt->session_ended)
			continue;
		wait = session_poll(tt->session, now);
		/* Probes that cannot go on end top, as they always did. */
		if (wait < 0 && tt->session->failed) {
			snprintf(err, errlen, "%s", tt->session->error);
			return tt->session->failed;
		}
		if (wait < 0) {
			tt->session_ended = true;
			continue;
		}
		if (wait < next)
			next = wait;
	}
	*wait_out = next;
	return 0;
}

const struct report *top_collect_drill(struct top_collector *c, pid_t pid)
{
	const struct report *one = NULL;
	size_t i, n = 0;

	for (i = 0; i < c->ntargets; i++)
		if ((!pid || c->targets[i].target.pid == pid) && c->targets[i].have_drill) {
			one = &c->targets[i].drill;
			n++;
		}
	if (n < 2)
		return one;
	/* Summed rows: the sites of every process, merged by names. */
	if (c->have_merged)
		report_free(&c->merged);
	memset(&c->merged, 0, sizeof(c->merged));
	c->have_merged = true;
	for (i = 0; i < c->ntargets; i++) {
		const struct report *d = &c->targets[i].drill;
		struct sampling_info *si = &c->merged.sampling;

		if (!c->targets[i].have_drill)
			continue;
		if (report_merge(&c->merged, d))
			return one;
		/* The merge sums what reports share; the windows are top's own to add. */
		si->on = si->on || d->sampling.on;
		si->budget_percent = d->sampling.budget_percent;
		si->windows += d->sampling.windows;
		si->traced += d->sampling.traced;
		si->probe_hits += d->sampling.probe_hits;
		if (d->sampling.est_overhead > si->est_overhead)
			si->est_overhead = d->sampling.est_overhead;
	}
	report_finish(&c->merged);
	return &c->merged;
}

void top_collect_free(struct top_collector *c)
{
	size_t i;

	for (i = 0; i < c->ntargets; i++) {
		struct top_target *tt = &c->targets[i];

		if (tt->session && !tt->session_ended)
			session_finish(tt->session);
		if (tt->session)
			session_detach_start(tt->session);
	}
	for (i = 0; i < c->ntargets; i++) {
		struct top_target *tt = &c->targets[i];

		if (tt->session) {
			session_close(tt->session);
			free(tt->session);
		}
		if (tt->have_drill)
			report_free(&tt->drill);
		if (tt->vbase) {
			verdict_base_free(tt->vbase);
			free(tt->vbase);
		}
		if (tt->have_vcensus)
			census_free(&tt->vcensus);
		class_namer_free(&tt->namer);
	}
	if (c->have_merged)
		report_free(&c->merged);
	c->have_merged = false;
	c->ntargets = 0;
}

/* top_collect.h: key w's retainer paths, read from the drilled process now. */
int top_collect_why(struct top_collector *c, pid_t pid, const char *class_name,
		    struct why_report *why, pid_t *read_pid, char *err, size_t errlen)
{
	const char *classes[1] = {class_name};
	struct top_target *tt = NULL;
	size_t i;

	for (i = 0; i < c->ntargets && !tt; i++)
		if (!c->targets[i].gone && (!pid || c->targets[i].target.pid == pid))
			tt = &c->targets[i];
	if (!tt)
		return -ESRCH;
	*read_pid = tt->target.pid;
	return why_top_paths(&tt->target, classes, 1, why, err, errlen) ? -EIO : 0;
}

pid_t top_collect_drilled(const struct top_collector *c, pid_t pid)
{
	if (pid)
		return pid;
	return c->ntargets == 1 ? c->targets[0].target.pid : 0;
}

static struct top_target *target_of(struct top_collector *c, pid_t pid)
{
	size_t i;

	for (i = 0; pid && i < c->ntargets; i++)
		if (c->targets[i].target.pid == pid)
			return &c->targets[i];
	return NULL;
}

/* The start of tt's verdict into tt->vbase (allocated): taken, or why not in its why_not. */
static void take_start(struct top_target *tt)
{
	struct session *s = tt->session;
	char err[512];
	int ret;

	/* a window open through the walk would stay open, its time charged as the target's */
	cut_window(tt);
	if (session_heap_unreadable(s, tt->vbase->why_not, sizeof(tt->vbase->why_not)))
		return;
	/* with each slot's state: the end's census tells new objects from old by it */
	ret = census_take(&tt->vcensus, s->target.pid, s->at.heap_layout, s->target.objspace, true,
			  err, sizeof(err));
	if (ret) {
		census_free(&tt->vcensus);
		snprintf(tt->vbase->why_not, sizeof(tt->vbase->why_not),
			 "no heap census at the drill-down's start: %.400s", err);
		return;
	}
	tt->have_vcensus = true;
	verdict_base_take(tt->vbase, &s->target, s->tracker.io.compact_count_addr, &tt->vcensus);
}

int top_collect_verdict_start(struct top_collector *c, pid_t pid, double *seconds, char *why,
			      size_t whylen)
{
	struct top_target *tt = target_of(c, top_collect_drilled(c, pid));
	double t0 = now_seconds();

	*seconds = 0;
	why[0] = 0;
	if (!tt || tt->vbase || tt->gone || !tt->session || tt->session_ended)
		return 0;
	if (!(tt->vbase = calloc(1, sizeof(*tt->vbase))))
		return -ENOMEM;
	take_start(tt);
	if (tt->vbase->taken)
		*seconds = now_seconds() - t0;
	else
		snprintf(why, whylen, "%s", tt->vbase->why_not);
	return 0;
}

/* The verdict of s from tt's start to the census end, in one walk (as a trace's end's). */
int top_collect_verdict(struct top_collector *c, pid_t pid, struct verdict **out,
			struct top_verdict_start *start, char *err, size_t errlen)
{
	struct top_target *tt = target_of(c, top_collect_drilled(c, pid));
	struct census now = {0};
	struct session *s;
	int ret;

	*out = NULL;
	memset(start, 0, sizeof(*start));
	if (!top_collect_drilled(c, pid)) {
		snprintf(err, errlen,
			 "a verdict is one process's: s shows rows per process, drill into one");
		return -EOPNOTSUPP;
	}
	if (!tt || tt->gone || tt->session_ended || target_gone(tt->target.pid))
		return -ESRCH;
	if (!(s = tt->session)) {
		snprintf(err, errlen, "no drill-down session on it (sites need BPF)");
		return -EOPNOTSUPP;
	}
	if (tt->vbase && tt->vbase->taken) {
		start->seconds = tt->vbase->seconds;
		start->kept_bytes = tt->vbase->bytes + tt->vcensus.slots;
	}
	if ((ret = session_heap_unreadable(s, err, errlen)))
		return ret;
	cut_window(tt);
	ret = census_take(&now, s->target.pid, s->at.heap_layout, s->target.objspace, true, err,
			  errlen);
	if (!ret && !(*out = session_verdict_walk(s, tt->vbase,
						   tt->have_vcensus ? &tt->vcensus : NULL, &now)))
		ret = -ENOMEM;
	census_free(&now);
	return ret;
}

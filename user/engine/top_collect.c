// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "census.h"
#include "census_model.h"
#include "cli.h"
#include "clock.h"
#include "diag.h"
#include "proc_info.h"
#include "procmaps.h"
#include "top_collect.h"
#include "top_out.h"
#include "why_select.h"

void top_collect_add(struct top_collector *c, struct top_model *m, pid_t pid, bool skippable)
{
	char err[RBM_ERR_LEN];
	struct top_target *tt;
	struct top_proc *p;
	size_t i;

	for (i = 0; i < c->ntargets; i++)
		if (c->targets[i].target.pid == pid)
			return;
	if (c->ntargets == TOP_MAX_PROCS)
		rbm_die("too many processes: top shows at most %d", TOP_MAX_PROCS);
	tt = &c->targets[c->ntargets];
	memset(tt, 0, sizeof(*tt));
	if (ruby_target_open(&tt->target, pid, RUBY_NEED_MEMORY, err, sizeof(err)) ||
	    cli_heap_open(&tt->target, &tt->namer, err, sizeof(err))) {
		if (!skippable)
			rbm_die("%s", err);
		/* One of several --match found that cannot be read: its line, and the others */
		rbm_warn("%s", err);
		return;
	}
	p = top_model_proc(m, pid);
	if (!p)
		rbm_die("too many processes: top shows at most %d", TOP_MAX_PROCS);
	proc_command(pid, p->command, sizeof(p->command));
	p->ns_pid = proc_ns_pid(pid);
	snprintf(p->ruby_version, sizeof(p->ruby_version), "%s", tt->target.version);
	c->ntargets++;
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

static void refresh_one(struct top_target *tt, struct top_model *m, double t)
{
	struct top_proc *p = top_model_proc(m, tt->target.pid);
	pid_t pid = tt->target.pid;
	struct census cen = {};
	struct report r = {};
	struct gc_counts gc;
	char err[512];
	size_t i;
	int ret;

	if (!p)
		return;
	if (tt->gone) {
		top_frame_keep(m, pid);
		return;
	}
	ret = census_take(&cen, pid, &tt->target.layout, tt->target.objspace, false, err, sizeof(err));
	if (ret == -ESRCH || target_gone(pid) || !ruby_target_same_program(&tt->target)) {
		census_free(&cen);
		mark_gone(p, tt, target_gone(pid) ? "exited" : "no longer runs the same program");
		top_frame_keep(m, pid);
		return;
	}
	if (ret) {
		census_free(&cen);
		snprintf(p->state, sizeof(p->state), "cannot read the heap: %.100s", err);
		top_frame_keep(m, pid);
		return;
	}
	p->state[0] = 0;
	refresh_drill(tt, p);
	r.census_only = true;
	if (census_to_report(&cen, &tt->namer, &r, CENSUS_AT_END, NULL, NULL))
		rbm_die("out of memory");
	for (i = 0; i < r.nrows; i++) {
		const struct class_row *row = &r.rows[i];

		if (!row->census.live_end)
			continue;
		if (top_frame_set(m, pid, row->name, row->census.live_end, row->census.bytes_end,
				  row->census.old_end, sampled_rate(tt, row->name)))
			rbm_die("out of memory");
	}
	p->slots = cen.slots;
	p->live = cen.live;
	p->free = cen.free;
	p->garbage = cen.garbage;
	p->census_s = cen.seconds;
	p->marking = cen.marking;
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
	p->uptime_s = proc_uptime(pid);
	p->rss_bytes = proc_rss(pid);
	report_free(&r);
	census_free(&cen);
}

/*
 * A window's probes must come off on time: a census taken while one is
 * open would hold it open and spend the target's budget.
 */
static void close_windows(struct top_collector *c)
{
	size_t i;

	for (i = 0; i < c->ntargets; i++) {
		struct top_target *tt = &c->targets[i];

		/* A window waiting for an idle target could stay open for long: it is cut. */
		if (tt->session && !tt->session_ended && windows_open(&tt->session->windows))
			windows_cut(&tt->session->windows, now_seconds());
	}
}

void top_collect_refresh(struct top_collector *c, struct top_model *m, double t)
{
	size_t i;

	close_windows(c);
	top_frame_begin(m, t);
	for (i = 0; i < c->ntargets; i++)
		refresh_one(&c->targets[i], m, t);
	top_frame_end(m);
}

void top_collect_sample(struct top_collector *c, struct top_model *m, pid_t pid)
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
		};
		char err[RBM_ERR_LEN];
		int ret;

		if ((pid && tt->target.pid != pid) || tt->session || tt->gone)
			continue;
		tt->session = calloc(1, sizeof(*tt->session));
		if (!tt->session)
			rbm_die("out of memory");
		ret = session_open(tt->session, &opt, err, sizeof(err));
		/* Open but not started: closed here, as a failed open closed itself. */
		if (!ret && (ret = session_start(tt->session, err, sizeof(err))))
			session_close(tt->session);
		if (ret) {
			free(tt->session);
			tt->session = NULL;
			rbm_die("%s", err);
		}
		refresh_drill(tt, top_model_proc(m, tt->target.pid));
	}
}

double top_collect_poll(struct top_collector *c, double now, double max)
{
	double next = max;
	size_t i;

	for (i = 0; i < c->ntargets; i++) {
		struct top_target *tt = &c->targets[i];
		double wait;

		if (!tt->session || tt->session_ended)
			continue;
		wait = session_poll(tt->session, now);
		/* Probes that cannot go on end top, as they always did. */
		if (wait < 0 && tt->session->failed)
			rbm_die("%s", tt->session->error);
		if (wait < 0) {
			tt->session_ended = true;
			continue;
		}
		if (wait < next)
			next = wait;
	}
	return next;
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
		class_namer_free(&tt->namer);
	}
	if (c->have_merged)
		report_free(&c->merged);
	c->have_merged = false;
	c->ntargets = 0;
}

/* top_collect.h: key w's retainer paths, read from the drilled process now. */
void top_collect_why(struct top_collector *collector, pid_t pid, struct top_ui *ui)
{
	const char *classes[1] = {ui->drill_name};
	struct why_report why = {0};
	struct top_target *tt = NULL;
	char err[512];
	double t0 = now_seconds();
	size_t i;

	for (i = 0; i < collector->ntargets && !tt; i++)
		if (!collector->targets[i].gone &&
		    (!pid || collector->targets[i].target.pid == pid))
			tt = &collector->targets[i];
	snprintf(ui->why_class, sizeof(ui->why_class), "%s", ui->drill_name);
	ui->nwhy = 0;
	if (!tt) {
		snprintf(ui->why_status, sizeof(ui->why_status), "(its process is gone)");
		return;
	}
	if (why_top_paths(&tt->target, classes, 1, &why, err, sizeof(err))) {
		snprintf(ui->why_status, sizeof(ui->why_status), "(not read: %.200s)", err);
		why_free(&why);
		return;
	}
	for (i = 0; why.ntargets && i < why.targets[0].npaths && i < 3; i++) {
		const struct why_path *p = &why.targets[0].paths[i];
		char kind_line[600];

		why_path_line(p, kind_line, sizeof(kind_line));
		snprintf(ui->why_lines[i], sizeof(ui->why_lines[i]), "%s %.480s", p->root_kind, kind_line);
		ui->why_counts[i] = p->count;
		ui->nwhy++;
	}
	snprintf(ui->why_status, sizeof(ui->why_status),
		 "PID %d: %" PRIu64 " live, %" PRIu64 " on no walked path; read in %.1f s",
		 (int) tt->target.pid, why.ntargets ? why.targets[0].count : 0,
		 why.ntargets ? why.targets[0].unexplained : 0, now_seconds() - t0);
	why_free(&why);
}

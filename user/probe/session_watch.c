// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * session.h: the verdict's containers watched within the trace or after it,
 * the lines that add to them named.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "diag.h"
#include "new_stacks.h"
#include "refs.h"
#include "session.h"
#include "watch.h"

/* The line of a call path that added the entries: its site, as an allocation's. */
static void add_site(struct verdict *v, struct verdict_insertions *ins, const struct frame *f,
		     uint64_t count)
{
	size_t i;

	for (i = 0; i < ins->nsites; i++)
		if (ins->sites[i].line == f->line && !strcmp(ins->sites[i].path, f->path) &&
		    !strcmp(ins->sites[i].label, f->label))
			break;
	if (i == ins->nsites) {
		if (i == VERDICT_MAX_INSERT_SITES)
			return;
		ins->sites[ins->nsites++] = (struct verdict_insert_site){
		    verdict_intern(v, f->label), verdict_intern(v, f->path), f->line, 0};
	}
	ins->sites[i].count += count;
}

static void add_path(struct verdict *v, struct verdict_insertions *ins, const struct stack *st,
		     uint64_t count)
{
	struct verdict_insert_path *p = &ins->paths[ins->npaths++];
	size_t j;

	p->count = count;
	for (j = 0; j < st->depth && j < VERDICT_MAX_INSERT_FRAMES; j++)
		p->frames[j] = (struct frame){verdict_intern(v, st->frames[j].label),
					      verdict_intern(v, st->frames[j].path),
					      st->frames[j].line};
	p->nframes = j;
	p->cut = st->depth > j || st->truncated;
}

static int by_site_count(const void *a, const void *b)
{
	const struct verdict_insert_site *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* A watch's result into its point: figures, then its paths named (the names lock held). */
static void fill(struct session *s, struct verdict *v, struct verdict_insertions *ins,
		 const struct watch_result *r)
{
	size_t k;

	ins->source = verdict_intern(v, r->by_call ? "uprobe" : "watchpoint");
	ins->note = r->note[0] ? verdict_intern(v, r->note) : NULL;
	ins->form = verdict_intern(v, watch_form_name(r->form));
	ins->ended = r->ended[0] ? verdict_intern(v, r->ended) : NULL;
	ins->seconds = r->seconds;
	ins->count = r->count;
	ins->missed = r->missed;
	ins->moves = r->moves;
	ins->size_before = (int64_t) r->size_before;
	ins->size_after = (int64_t) r->size_after;
	for (k = 0; k < r->npaths; k++) {
		const struct stack *st = symbolizer_stack(&s->names.symbolizer, r->paths[k].stack_id);
		const struct frame *f = st ? stack_site(st) : NULL;

		if (!st || !f) {
			ins->missed += r->paths[k].count;
			continue;
		}
		add_site(v, ins, f, r->paths[k].count);
		if (ins->npaths < VERDICT_MAX_INSERT_PATHS)
			add_path(v, ins, st, r->paths[k].count);
	}
	qsort(ins->sites, ins->nsites, sizeof(ins->sites[0]), by_site_count);
}

/* The verdict's first growing Hashes and Arrays into r (RBM_MAX_WATCHES at most), at[] their points. */
static size_t pick_containers(struct verdict *v, struct watch_result *r, struct verdict_point **at)
{
	size_t i, n = 0;

	for (i = 0; i < v->n && n < RBM_MAX_WATCHES; i++) {
		struct verdict_point *p = &v->points[i];

		if (!p->addr || (p->type != RB_T_ARRAY && p->type != RB_T_HASH))
			continue;
		r[n] = (struct watch_result){.addr = p->addr, .type = p->type,
					     .slot_size = p->slot_size};
		if (at)
			at[n] = p;
		n++;
	}
	return n;
}

static struct watch_target target_of(struct session *s)
{
	return (struct watch_target){.pid = s->target.pid,
				     .slot = s->at.slot.index,
				     .skel = s->at.skel,
				     .l = s->at.heap_layout,
				     .budget_percent = s->opt.full ? 0 : s->opt.max_overhead,
				     .binary = s->at.probes.binary,
				     .use_multi = s->at.use_multi};
}

/* Each result into its point (at[i]); names taken under the names lock. */
static void fill_points(struct session *s, struct verdict *v, struct watch_result *r,
			struct verdict_point **at, size_t n)
{
	size_t i;

	new_stacks_flush();
	pthread_mutex_lock(&s->names.lock);
	for (i = 0; i < n; i++)
		if (!at[i])
			continue;
		else if (r[i].watched)
			fill(s, v, &at[i]->ins, &r[i]);
		else
			at[i]->ins.ended = verdict_intern(v, r[i].ended);
	pthread_mutex_unlock(&s->names.lock);
}

void session_watch_verdict(struct session *s, struct verdict *v, double seconds,
			   volatile sig_atomic_t *stop)
{
	struct watch_result r[RBM_MAX_WATCHES] = {0};
	struct verdict_point *at[RBM_MAX_WATCHES];
	struct watch_target t = target_of(s);
	char err[256];
	size_t n;

	if (!v || v->none || seconds <= 0 || s->target_exited || !t.l || t.slot < 0)
		return;
	if (!(n = pick_containers(v, r, at)))
		return;
	if (watch_containers(&t, r, n, seconds, stop, err, sizeof(err)))
		rbm_warn("the verdict's containers were not watched: %s", err);
	fill_points(s, v, r, at, n);
	watch_results_free(r, n);
}

void session_watch_plan(struct session *s)
{
	double d = s->opt.duration;

	memset(&s->watching, 0, sizeof(s->watching));
	if (s->opt.watch_periods)
		shared_bpf_watch_prepare();
	if (!s->opt.watch_in_run || s->launched || s->opt.no_verdict || !s->at.heap_layout ||
	    !watch_fits_trace(d))
		return;
	s->watching.at = s->start + watch_naming_after(d);
}

/* The verdict so far (a census now, a walk), its growing containers armed. */
static void start_in_run(struct session *s, double t)
{
	struct session_watching *w = &s->watching;
	struct watch_target wt = target_of(s);
	struct census now = {0};
	struct verdict *v;
	char err[256];

	if (s->target_exited || !s->snap.verdict || !s->snap.verdict->taken ||
	    !s->snap.have_census_start || wt.slot < 0 || session_heap_unreadable(s, err, sizeof(err)))
		return;
	/* a window open through the walk would stay open, its time charged as the target's */
	if (s->sampling)
		windows_cut(&s->windows, t);
	if (census_take(&now, s->target.pid, s->at.heap_layout, s->target.objspace, true, err,
			sizeof(err))) {
		census_free(&now);
		rbm_info("watch: no census to name the containers by: %s", err);
		return;
	}
	v = session_verdict_walk(s, s->snap.verdict, &s->snap.census_start, &now);
	census_free(&now);
	w->walk_seconds = now_seconds() - t;
	if (v && v->none)
		rbm_info("watch: no verdict to name the containers by: %s", v->none);
	else if (v && !(w->n = pick_containers(v, w->r, NULL)))
		rbm_info("watch: no growing Hash or Array among the verdict's %zu points", v->n);
	verdict_free(v);
	rbm_info("watch: containers named by a walk in %.2f s", w->walk_seconds);
	if (w->n && watch_run_start(&w->run, &wt, w->r, w->n, 0, err, sizeof(err)))
		rbm_info("watch: %s", err);
}

/* The traps since the last look, charged to the budget the windows spend. */
static void charge(struct session *s)
{
	double cost = watch_run_new_cost(s->watching.run);

	if (s->sampling && cost > 0)
		windows_charge(&s->windows, cost);
}

void session_watch_end(struct session *s)
{
	shared_bpf_watch_join();
	if (!s->watching.run)
		return;
	charge(s);
	watch_run_finish(s->watching.run);
	s->watching.run = NULL;
}

double session_watch_poll(struct session *s, double t)
{
	struct session_watching *w = &s->watching;

	if (w->at && !w->started) {
		/* its program loaded ahead, on a thread, from a second before */
		if (t >= w->at - 1)
			shared_bpf_watch_prepare();
		if (t < w->at)
			return w->at - t > 1 && t < w->at - 1 ? w->at - 1 - t : w->at - t;
		w->started = true;
		start_in_run(s, t);
		return 0;
	}
	if (!w->run)
		return 1;
	if (!watch_run_step(w->run, t)) {
		session_watch_end(s);
		return 1;
	}
	charge(s);
	return watch_run_next(w->run) > t ? watch_run_next(w->run) - t : 0;
}

void session_watch_points(struct session *s, struct verdict *v)
{
	struct session_watching *w = &s->watching;
	struct watch_target wt = target_of(s);
	char err[256];

	if (!s->opt.watch_periods || w->run || !v || v->none || s->target_exited || wt.slot < 0 ||
	    !wt.l)
		return;
	watch_results_free(w->r, w->n);
	if ((w->n = pick_containers(v, w->r, NULL)) &&
	    watch_run_start(&w->run, &wt, w->r, w->n, 0, err, sizeof(err)))
		rbm_info("watch: PID %d: %s", s->target.pid, err);
}

void session_watch_fill(struct session *s, struct verdict *v)
{
	struct session_watching *w = &s->watching;
	struct verdict_point *at[RBM_MAX_WATCHES] = {0};
	size_t i, k;

	session_watch_end(s);
	if (!w->n)
		return;
	for (i = 0; v && !v->none && i < w->n; i++) {
		for (k = 0; k < v->n && !at[i]; k++)
			if (v->points[k].addr == w->r[i].addr && v->points[k].type == w->r[i].type)
				at[i] = &v->points[k];
		if (!at[i])
			rbm_info("watch: the container at 0x%" PRIx64 " is not among the verdict's points",
				 w->r[i].addr);
	}
	if (v && !v->none)
		fill_points(s, v, w->r, at, w->n);
	watch_results_free(w->r, w->n);
	w->n = 0;
}

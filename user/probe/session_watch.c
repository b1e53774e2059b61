// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* session.h: the verdict's containers watched after it, the lines that add to them named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

	ins->source = verdict_intern(v, "watchpoint");
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

void session_watch_verdict(struct session *s, struct verdict *v, double seconds,
			   volatile sig_atomic_t *stop)
{
	struct watch_result r[RBM_MAX_WATCHES] = {0};
	struct verdict_point *at[RBM_MAX_WATCHES];
	struct watch_target t = {s->target.pid, s->at.slot.index, s->at.skel, s->at.heap_layout,
				 s->opt.full ? 0 : s->opt.max_overhead};
	char err[256];
	size_t i, n = 0;

	if (!v || v->none || seconds <= 0 || s->target_exited || !t.l || t.slot < 0)
		return;
	for (i = 0; i < v->n && n < RBM_MAX_WATCHES; i++) {
		struct verdict_point *p = &v->points[i];

		if (!p->addr || (p->type != RB_T_ARRAY && p->type != RB_T_HASH))
			continue;
		r[n] = (struct watch_result){.addr = p->addr, .type = p->type,
					     .slot_size = p->slot_size};
		at[n++] = p;
	}
	if (!n)
		return;
	if (watch_containers(&t, r, n, seconds, stop, err, sizeof(err)))
		rbm_warn("the verdict's containers were not watched: %s", err);
	new_stacks_flush();
	pthread_mutex_lock(&s->names.lock);
	for (i = 0; i < n; i++)
		if (r[i].watched)
			fill(s, v, &at[i]->ins, &r[i]);
		else
			at[i]->ins.ended = verdict_intern(v, r[i].ended);
	pthread_mutex_unlock(&s->names.lock);
	watch_results_free(r, n);
}

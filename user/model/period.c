// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a period allocated: the report at its end minus the report at its
 * start, row by row, matched by names (a class; a class, file and line; a
 * class and its frames), never by addresses.  Both reports count from the
 * trace's start, so a row only grows; under sampling the weights of the
 * period's traced objects are scaled to what Ruby itself counted in the
 * period, so the classes sum to Ruby's count exactly.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "period.h"
#include "strpool.h"

static uint64_t mix(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char) *s++) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL; /* "ab","c" differs from "a","bc" */
}

static uint64_t mix_int(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

static uint64_t nonzero(uint64_t h)
{
	return h ? h : 1;
}

static uint64_t site_key(const struct site_row *s)
{
	return nonzero(mix_int(mix(mix(0xcbf29ce484222325ULL, s->class_name), s->path), s->line));
}

static uint64_t stack_key(const struct stack_row *s)
{
	uint64_t h = mix(0xcbf29ce484222325ULL, s->class_name);
	size_t i;

	for (i = 0; i < s->stack->depth; i++)
		h = mix_int(mix(mix(h, s->stack->frames[i].label), s->stack->frames[i].path),
			    s->stack->frames[i].line);
	return nonzero(mix_int(h, s->stack->truncated));
}

static bool same_site(const struct site_row *a, const struct site_row *b)
{
	return a->line == b->line && !strcmp(a->path, b->path) &&
	       !strcmp(a->class_name, b->class_name);
}

static bool same_stack(const struct stack_row *a, const struct stack_row *b)
{
	size_t i;

	if (strcmp(a->class_name, b->class_name) || a->stack->depth != b->stack->depth ||
	    a->stack->truncated != b->stack->truncated)
		return false;
	for (i = 0; i < a->stack->depth; i++)
		if (a->stack->frames[i].line != b->stack->frames[i].line ||
		    strcmp(a->stack->frames[i].label, b->stack->frames[i].label) ||
		    strcmp(a->stack->frames[i].path, b->stack->frames[i].path))
			return false;
	return true;
}

/*
 * An index of prev's rows: key -> index + 1.  Rows whose keys collide keep
 * the first; a lookup that finds another row scans (it only costs time).
 */
static int index_rows(struct u64map *m, size_t n, uint64_t (*key)(const void *row, size_t i),
		      const void *rows)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t k = key(rows, i);

		if (!u64map_get(m, k) && u64map_put(m, k, (void *) (uintptr_t) (i + 1)))
			return -ENOMEM;
	}
	return 0;
}

static uint64_t class_key_at(const void *rows, size_t i)
{
	return str_hash(((const struct class_row *) rows)[i].name);
}

static uint64_t site_key_at(const void *rows, size_t i)
{
	return site_key(&((const struct site_row *) rows)[i]);
}

static uint64_t stack_key_at(const void *rows, size_t i)
{
	return stack_key(&((const struct stack_row *) rows)[i]);
}

static const struct class_row *prev_class(const struct report *prev, const struct u64map *m,
					  const char *name)
{
	uintptr_t at = (uintptr_t) u64map_get(m, str_hash(name));
	size_t i;

	if (at && !strcmp(prev->rows[at - 1].name, name))
		return &prev->rows[at - 1];
	for (i = 0; at && i < prev->nrows; i++)
		if (!strcmp(prev->rows[i].name, name))
			return &prev->rows[i];
	return NULL;
}

static const struct site_row *prev_site(const struct report *prev, const struct u64map *m,
					const struct site_row *s)
{
	uintptr_t at = (uintptr_t) u64map_get(m, site_key(s));
	size_t i;

	if (at && same_site(&prev->sites[at - 1], s))
		return &prev->sites[at - 1];
	for (i = 0; at && i < prev->nsites; i++)
		if (same_site(&prev->sites[i], s))
			return &prev->sites[i];
	return NULL;
}

static const struct stack_row *prev_stack(const struct report *prev, const struct u64map *m,
					  const struct stack_row *s)
{
	uintptr_t at = (uintptr_t) u64map_get(m, stack_key(s));
	size_t i;

	if (at && same_stack(&prev->stacks[at - 1], s))
		return &prev->stacks[at - 1];
	for (i = 0; at && i < prev->nstacks; i++)
		if (same_stack(&prev->stacks[i], s))
			return &prev->stacks[i];
	return NULL;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static double dsub0(double a, double b)
{
	return a > b ? a - b : 0;
}

void apportion(uint64_t total, const double *w, size_t n, uint64_t *out)
{
	double sum = 0, *rem;
	uint64_t given = 0;
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		sum += w[i] > 0 ? w[i] : 0;
	rem = calloc(n, sizeof(*rem));
	for (i = 0; i < n; i++) {
		double exact =
		    sum > 0 ? (w[i] > 0 ? w[i] : 0) * (double) total / sum : (double) total / n;

		out[i] = (uint64_t) floor(exact);
		if (out[i] > total - given)
			out[i] = total - given;
		given += out[i];
		if (rem)
			rem[i] = exact - floor(exact);
	}
	/* What rounding left (fewer units than rows) goes one each to the largest remainders. */
	while (given < total) {
		size_t best = 0;

		for (i = 1; rem && i < n; i++)
			if (rem[i] > rem[best])
				best = i;
		out[best]++;
		given++;
		if (rem)
			rem[best] = -1; /* once each; should float error leave more, best stays 0 */
	}
	free(rem);
}

/* What report_set_period works with: the previous report's rows indexed, each class's weight. */
struct period_work {
	struct report *now;
	const struct report *prev; /* NULL: the first period */
	struct u64map classes, sites, stacks;
	double *weights, wsum; /* what each class traced in the period, and their sum */
	uint64_t *est, traced;
	bool use_weight; /* by the weighted counts (sampled), else by the traced counts */
};

/* The previous report's rows indexed by their names, the weights' room: 0 or -ENOMEM. */
static int period_work_init(struct period_work *w)
{
	const struct report *prev = w->prev;
	int err = 0;

	if (prev && (index_rows(&w->classes, prev->nrows, class_key_at, prev->rows) ||
		     index_rows(&w->sites, prev->nsites, site_key_at, prev->sites) ||
		     index_rows(&w->stacks, prev->nstacks, stack_key_at, prev->stacks)))
		err = -ENOMEM;
	w->weights = calloc(w->now->nrows + 1, sizeof(*w->weights));
	w->est = calloc(w->now->nrows + 1, sizeof(*w->est));
	if (!w->weights || !w->est)
		err = -ENOMEM;
	return err;
}

static void period_work_free(struct period_work *w)
{
	u64map_free(&w->classes, NULL);
	u64map_free(&w->sites, NULL);
	u64map_free(&w->stacks, NULL);
	free(w->weights);
	free(w->est);
}

/* What each class, site and call path allocated in the period, as traced; the classes' weights. */
static void period_traced(struct period_work *w)
{
	struct report *now = w->now;
	const struct report *prev = w->prev;
	size_t i;

	for (i = 0; i < now->nrows; i++)
		w->use_weight |= now->rows[i].counts.w_allocated > 0;
	for (i = 0; i < now->nrows; i++) {
		struct class_row *row = &now->rows[i];
		const struct class_row *p = prev ? prev_class(prev, &w->classes, row->name) : NULL;

		row->period.allocated = sub0(row->counts.allocated, p ? p->counts.allocated : 0);
		row->period.est_allocated = row->period.allocated;
		w->traced += row->period.allocated;
		w->weights[i] = w->use_weight
				    ? dsub0(row->counts.w_allocated, p ? p->counts.w_allocated : 0)
				    : (double) row->period.allocated;
		w->wsum += w->weights[i];
	}
	for (i = 0; i < now->nsites; i++) {
		struct site_row *s = &now->sites[i];
		const struct site_row *p = prev ? prev_site(prev, &w->sites, s) : NULL;

		s->period.allocated = sub0(s->counts.allocated, p ? p->counts.allocated : 0);
		s->period.est_allocated = s->period.allocated;
	}
	for (i = 0; i < now->nstacks; i++) {
		struct stack_row *s = &now->stacks[i];
		const struct stack_row *p = prev ? prev_stack(prev, &w->stacks, s) : NULL;

		s->period.allocated = sub0(s->counts.allocated, p ? p->counts.allocated : 0);
		s->period.est_allocated = s->period.allocated;
	}
}

/* Estimates: what Ruby allocated in the period, spread by the period's traced weight. */
static void period_estimates(struct period_work *w)
{
	struct report *now = w->now;
	const struct report *prev = w->prev;
	double scale;
	size_t i;

	now->period.untraced = now->period.gc_allocated && w->wsum <= 0;
	now->period.scale = w->traced ? (double) now->period.gc_allocated / w->traced : 0;
	scale = w->wsum > 0 ? (double) now->period.gc_allocated / w->wsum : 0;
	if (w->wsum > 0)
		apportion(now->period.gc_allocated, w->weights, now->nrows, w->est);
	for (i = 0; i < now->nrows; i++)
		now->rows[i].period.est_allocated = w->wsum > 0 ? w->est[i] : 0;
	for (i = 0; i < now->nsites; i++) {
		struct site_row *s = &now->sites[i];
		const struct site_row *p = prev ? prev_site(prev, &w->sites, s) : NULL;
		double weight = w->use_weight
				    ? dsub0(s->counts.w_allocated, p ? p->counts.w_allocated : 0)
				    : (double) s->period.allocated;

		s->period.est_allocated = (uint64_t) (weight * scale + 0.5);
	}
	for (i = 0; i < now->nstacks; i++) {
		struct stack_row *s = &now->stacks[i];
		const struct stack_row *p = prev ? prev_stack(prev, &w->stacks, s) : NULL;
		double weight = w->use_weight
				    ? dsub0(s->counts.w_allocated, p ? p->counts.w_allocated : 0)
				    : (double) s->period.allocated;

		s->period.est_allocated = (uint64_t) (weight * scale + 0.5);
	}
}

int report_set_period(struct report *now, const struct report *prev, const struct period_info *info)
{
	struct period_work w = {.now = now, .prev = prev};
	int err;

	now->period = *info;
	now->period.on = true;
	err = period_work_init(&w);
	if (!err)
		period_traced(&w);
	now->period.traced = w.traced;
	now->period.have_gc_counts = now->have_gc_counts && (!prev || prev->have_gc_counts);
	if (now->period.have_gc_counts)
		now->period.gc_allocated = sub0(now->gc_allocated, prev ? prev->gc_allocated : 0);
	now->period.estimated = now->have_estimates && now->period.have_gc_counts;
	now->period.scale = 0;
	if (!err && now->period.estimated)
		period_estimates(&w);
	period_work_free(&w);
	return err;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finishing a report: the sampling scales, every estimate (within what the
 * census says each class holds), the order of rows, sites and paths, the
 * totals and the suspects; and the call tree the writers print.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "calltree.h"
#include "report.h"

/*
 * Rows, sites and paths are ordered by what the reader sees first: the
 * retained estimate under sampling (a rare class's one traced object can
 * stand for many, or for few), the traced counts otherwise.
 */
static int counts_cmp(const struct counts *x, const struct counts *y, const struct estimates *ex,
		      const struct estimates *ey, const bool *by_estimate)
{
	if (*by_estimate && ex->retained != ey->retained)
		return ex->retained > ey->retained ? -1 : 1;
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	if (x->allocated != y->allocated)
		return x->allocated > y->allocated ? -1 : 1;
	return 0;
}

static int site_cmp(const void *a, const void *b, void *by_estimate)
{
	const struct site_row *x = a, *y = b;
	int c = counts_cmp(&x->counts, &y->counts, &x->est, &y->est, by_estimate);

	if (c)
		return c;
	c = strcmp(x->path, y->path);
	return c ? c : x->line - y->line;
}

static int stack_cmp(const void *a, const void *b, void *by_estimate)
{
	const struct stack_row *x = a, *y = b;
	int c = counts_cmp(&x->counts, &y->counts, &x->est, &y->est, by_estimate);

	return c ? c : strcmp(x->class_name, y->class_name);
}

static int row_cmp(const void *a, const void *b, void *by_estimate)
{
	const struct class_row *x = a, *y = b;
	int c = counts_cmp(&x->counts, &y->counts, &x->est, &y->est, by_estimate);

	return c ? c : strcmp(x->name, y->name);
}

/* A traced count (or weight) scaled up to the whole target, under sampling. */
static uint64_t scale_count(double scale, double traced)
{
	return (uint64_t) (traced * scale + 0.5);
}

/* Weighed counts where windows recorded different shares; traced counts times scale otherwise. */
static void estimate(struct estimates *e, const struct counts *c, const struct sampling_info *si)
{
	double w = si->weight_scale;

	if (w > 0) {
		e->allocated = scale_count(w, c->w_allocated);
		e->retained = scale_count(w, c->w_retained);
		e->freed = scale_count(w, c->w_freed);
		return;
	}
	e->allocated = scale_count(si->scale, (double) c->allocated);
	e->retained = scale_count(si->scale, (double) c->retained);
	e->freed = scale_count(si->scale, (double) c->freed);
}

static int live_cmp(const void *a, const void *b, void *unused)
{
	const struct class_row *x = a, *y = b;

	(void) unused;
	if (x->census.live_end != y->census.live_end)
		return x->census.live_end > y->census.live_end ? -1 : 1;
	if (x->census.bytes_end != y->census.bytes_end)
		return x->census.bytes_end > y->census.bytes_end ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* A traced retained count scaled by what its class's estimate was moved by. */
static uint64_t rescaled(uint64_t est, double factor)
{
	return factor != 1 ? (uint64_t) (est * factor + 0.5) : est;
}

/*
 * A class's retained estimate, where the heap has a say: within what the
 * two censuses found made during the trace and still alive (the retained
 * among them exactly, those whose age Ruby does not keep as a range), or
 * at least within what the end census holds.  Samples then only say where.
 */
static void bound_by_heap(struct report *r, struct class_row *row)
{
	const struct census_counts *cc = &row->census;
	uint64_t raw = row->est.retained, lo, hi;

	row->est_cap = 1;
	row->est_source = EST_SAMPLED;
	if (!r->heap_end.have || !cc->have)
		return;
	lo = cc->have_new ? cc->new_retained : 0;
	hi = cc->have_new ? cc->new_retained + cc->new_unaged : cc->live_end;
	if (raw >= lo && raw <= hi)
		return;
	row->est.retained = raw < lo ? lo : hi;
	row->est_source = cc->have_new && lo == hi ? EST_HEAP : EST_BOUNDED;
	row->est_cap = raw ? (double) row->est.retained / raw : 0;
	r->est_capped++;
}

static void estimate_all(struct report *r)
{
	const struct sampling_info *si = &r->sampling;
	size_t i;

	for (i = 0; i < r->nrows; i++) {
		estimate(&r->rows[i].est, &r->rows[i].counts, si);
		bound_by_heap(r, &r->rows[i]);
	}
	/* Row indexes are still valid here: sites and paths follow their class. */
	for (i = 0; i < r->nsites; i++) {
		struct class_row *row = report_row(r, r->sites[i].class_name);

		estimate(&r->sites[i].est, &r->sites[i].counts, si);
		if (row)
			r->sites[i].est.retained = rescaled(r->sites[i].est.retained, row->est_cap);
	}
	for (i = 0; i < r->nstacks; i++) {
		struct class_row *row = report_row(r, r->stacks[i].class_name);

		estimate(&r->stacks[i].est, &r->stacks[i].counts, si);
		if (row)
			r->stacks[i].est.retained =
			    rescaled(r->stacks[i].est.retained, row->est_cap);
	}
}

/* Under sampling, what one traced object (or unit of weight) stands for in Ruby's own count. */
static void sampling_scales(struct report *r)
{
	struct sampling_info *si = &r->sampling;

	if (!si->on || si->scale > 0)
		return;
	si->scale = r->have_gc_counts && si->traced ? (double) r->gc_allocated / si->traced : 0;
	si->weight_scale = r->have_gc_counts && si->weighed
			       ? (double) r->gc_allocated * RBM_WEIGHT_ONE / si->weighed
			       : 0;
}

void report_finish(struct report *r)
{
	size_t i;

	/* A merged report keeps the estimates its parts summed: each had its own scale. */
	if (!r->merged) {
		sampling_scales(r);
		r->have_estimates = r->sampling.on && r->sampling.scale > 0;
		r->est_capped = 0;
		if (r->have_estimates)
			estimate_all(r);
	}
	sort_array_r(r->rows, r->nrows, sizeof(*r->rows), r->census_only ? live_cmp : row_cmp,
		&r->have_estimates);
	sort_array_r(r->sites, r->nsites, sizeof(*r->sites), site_cmp, &r->have_estimates);
	sort_array_r(r->stacks, r->nstacks, sizeof(*r->stacks), stack_cmp, &r->have_estimates);
	/* Row indexes changed: the indexes are no longer valid. */
	u64map_free(&r->by_name, NULL);
	u64map_free(&r->sites_by_key, NULL);
	u64map_free(&r->stacks_by_key, NULL);
	memset(&r->totals, 0, sizeof(r->totals));
	memset(&r->est_totals, 0, sizeof(r->est_totals));
	for (i = 0; i < r->nrows; i++) {
		struct census_counts *cc = &r->rows[i].census;

		counts_add(&r->totals, &r->rows[i].counts);
		estimates_add(&r->est_totals, &r->rows[i].est);
		cc->change = (int64_t) cc->live_end - (int64_t) cc->live_start;
	}
	/* Totals scale as a whole, as a reader would compute them; the census bounds retained. */
	if (r->have_estimates && !r->merged) {
		uint64_t retained = r->est_totals.retained;

		estimate(&r->est_totals, &r->totals, &r->sampling);
		if (r->est_capped)
			r->est_totals.retained = retained;
	}
	if (r->with_stacks) {
		uint64_t sited = 0;

		for (i = 0; i < r->nsites; i++)
			sited += r->sites[i].counts.allocated;
		r->no_site = r->totals.allocated > sited ? r->totals.allocated - sited : 0;
	}
	if (!r->census_only)
		report_find_suspects(r);
}

size_t report_path_root_first(const struct stack_row *row, char (*names)[REPORT_NAME_MAX],
			      const char **path)
{
	size_t i, n = 0, depth = row->stack->depth;

	if (row->stack->truncated) {
		snprintf(names[n], sizeof(names[n]), "(frames beyond --depth)");
		path[n] = names[n];
		n++;
	}
	for (i = depth; i-- > 0;) {
		frame_display_name(&row->stack->frames[i], names[n], sizeof(names[n]));
		path[n] = names[n];
		n++;
	}
	snprintf(names[n], sizeof(names[n]), "%s", row->class_name);
	path[n] = names[n];
	return n + 1;
}

struct ct_node *report_calltree(const struct report *r, size_t prune, bool callee_first)
{
	static char names[REPORT_PATH_SLOTS][REPORT_NAME_MAX];
	const char *path[REPORT_PATH_SLOTS], *swap;
	struct ct_node *root = calltree_new(callee_first ? "(all, callee first)" : "(all)");
	size_t i, j, n;

	for (i = 0; root && i < r->nstacks; i++) {
		n = report_path_root_first(&r->stacks[i], names, path);
		for (j = 0; callee_first && j < n / 2; j++) {
			swap = path[j];
			path[j] = path[n - 1 - j];
			path[n - 1 - j] = swap;
		}
		if (calltree_add(root, path, n, r->stacks[i].counts.retained,
				 r->stacks[i].counts.allocated)) {
			calltree_free(root);
			return NULL;
		}
	}
	/* A retention tree: subtrees that keep under 1% of it are folded. */
	if (root)
		calltree_sort_prune(root, prune, prune ? (root->retained + 99) / 100 : 0);
	return root;
}

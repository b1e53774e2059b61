// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Leak suspects: the classes with the most retained objects that are old
 * (survived several GCs: a leak is old), each with its bytes and where it
 * comes from.
 * A leak also grows, so a class whose live count shrank over the trace is
 * not a suspect however much it holds.
 */
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "report.h"

/* Survived this many GCs: Ruby's own age for promotion to the old generation. */
#define OLD_GCS 3

static uint64_t old_of(const struct ages *a, bool use_all, uint64_t retained)
{
	uint64_t n = 0;
	unsigned b;

	if (use_all)
		return retained;
	for (b = age_bucket(OLD_GCS); b < AGE_BUCKETS; b++)
		n += a->n[b];
	return n;
}

/* Traced counts scale up under sampling, within what the heap held. */
static uint64_t scaled(const struct report *r, const struct class_row *row, uint64_t traced)
{
	double f;

	if (!r->have_estimates || !row->counts.retained)
		return traced;
	f = (double) row->est.retained / row->counts.retained;
	return (uint64_t) (traced * f + 0.5);
}

/*
 * Under sampling, the old retained of a class: the heap's count of old
 * objects made during the trace where the censuses were compared, or the
 * traced ones scaled (wb-unprotected objects never show as old there).
 */
static uint64_t old_estimate(const struct report *r, const struct class_row *row, bool use_all)
{
	uint64_t traced = scaled(r, row, old_of(&row->ages, use_all, row->counts.retained));

	if (!r->have_estimates || !row->census.have_new)
		return traced;
	if (use_all)
		return row->est.retained;
	if (!row->census.new_unaged)
		return row->census.new_old;
	return row->census.new_old > traced ? row->census.new_old : traced;
}

/*
 * One or two traced objects scale up to anything: such a class is a
 * suspect only when the heap itself shows it made old objects and grew.
 */
static bool too_few_samples(const struct report *r, const struct class_row *row, bool use_all)
{
	const struct census_counts *cc = &row->census;

	if (!r->have_estimates || row->counts.retained > 2)
		return false;
	return !cc->have_new || cc->change <= 0 ||
	       !(use_all ? cc->new_retained + cc->new_unaged : cc->new_old);
}

static uint64_t bytes_per_object(const struct class_row *row)
{
	/* The census knows what this class's objects own; else one 40-byte slot. */
	if (row->census.have && row->census.live_end)
		return row->census.bytes_end / row->census.live_end;
	return 40;
}

static int suspect_cmp(const void *a, const void *b)
{
	const struct suspect *x = a, *y = b;

	/*
	 * A leak is many objects: the count ranks, bytes break ties.  Bytes per
	 * object are a class average over the whole heap, so a few huge hashes
	 * would otherwise outrank a leak of thousands of small objects.
	 */
	if (x->old_retained != y->old_retained)
		return x->old_retained > y->old_retained ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->class_name, y->class_name);
}

void report_find_suspects(struct report *r)
{
	bool use_all = r->gc_runs < OLD_GCS;
	struct suspect *all = calloc(r->nrows ? r->nrows : 1, sizeof(*all));
	size_t i, j, n = 0;

	r->nsuspects = 0;
	r->suspects_by_all_retained = use_all;
	if (!all)
		return;
	for (i = 0; i < r->nrows; i++) {
		const struct class_row *row = &r->rows[i];
		uint64_t old = old_estimate(r, row, use_all);
		bool have_change = row->census.have && r->heap_start.have;

		/* A leak grows: a class the heap holds fewer of than at the start is not one. */
		if (!old || (have_change && row->census.change <= 0) ||
		    too_few_samples(r, row, use_all))
			continue;
		all[n].class_name = row->name;
		all[n].old_retained = old;
		all[n].bytes = old * bytes_per_object(row);
		all[n].live_change = row->census.change;
		all[n].have_change = have_change;
		n++;
	}
	sort_array(all, n, sizeof(*all), suspect_cmp);
	r->nsuspects = n < MAX_SUSPECTS ? n : MAX_SUSPECTS;
	memcpy(r->suspects, all, r->nsuspects * sizeof(*all));
	free(all);
	/* Sites and paths are sorted by retained: the first of a class is its top one. */
	for (i = 0; i < r->nsuspects; i++) {
		struct suspect *s = &r->suspects[i];

		for (j = 0; j < r->nsites && !s->site; j++)
			if (strcmp(r->sites[j].class_name, s->class_name) == 0)
				s->site = &r->sites[j];
		for (j = 0; j < r->nstacks && !s->stack; j++)
			if (strcmp(r->stacks[j].class_name, s->class_name) == 0)
				s->stack = &r->stacks[j];
	}
}

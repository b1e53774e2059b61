// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merging reports: the fleet summary of several processes, and `merge` of
 * reports from several hosts.  Everything is matched by name (class, file,
 * line, frame label), never by address: addresses mean nothing outside
 * the process, and reports of different Ruby versions still line up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_ops.h"
#include "report.h"

static void add_census(struct census_counts *to, const struct census_counts *from)
{
	bool first = !to->have;

	to->have = true;
	to->live_start += from->live_start;
	to->live_end += from->live_end;
	to->bytes_end += from->bytes_end;
	to->old_end += from->old_end;
	to->garbage_end += from->garbage_end;
	/* Summed counts of new objects mean something only if every part had them. */
	to->have_new = (to->have_new || first) && from->have_new;
	to->new_alive += from->new_alive;
	to->new_retained += from->new_retained;
	to->new_unaged += from->new_unaged;
	to->new_old += from->new_old;
}

/*
 * Sites are not merged on their own: each call path names its site, so
 * merging the paths rebuilds the sites.
 */
static void add_heap(struct heap_info *to, const struct heap_info *from)
{
	int i;

	if (!from->have)
		return;
	to->have = true;
	to->slots += from->slots;
	to->live += from->live;
	to->free += from->free;
	to->garbage += from->garbage;
	to->bytes += from->bytes;
	for (i = 0; i < 32; i++) {
		to->types[i] += from->types[i];
		to->garbage_types[i] += from->garbage_types[i];
	}
	to->pages += from->pages;
	to->unjudged += from->unjudged;
	to->gc_count += from->gc_count;
	to->marking = to->marking || from->marking;
	to->sweeping = to->sweeping || from->sweeping;
	to->gc_ran = to->gc_ran || from->gc_ran;
	to->seconds += from->seconds;
}

int report_merge(struct report *into, const struct report *from)
{
	size_t i;
	int err;

	for (i = 0; i < from->nrows; i++) {
		const struct class_row *row = &from->rows[i];
		struct class_row *to = report_row(into, row->name);

		if (!to)
			return -ENOMEM;
		err = report_add(into, row->name, &row->counts);
		if (err)
			return err;
		estimates_add(&to->est, &row->est);
		/* Heap counts summed stay the heap's; mixed with scaled ones, bounded. */
		if (to->est_source_set && to->est_source != row->est_source)
			to->est_source = EST_BOUNDED;
		else
			to->est_source = row->est_source;
		to->est_source_set = true;
		report_add_ages(into, row->name, &row->ages);
		if (row->census.have)
			add_census(&to->census, &row->census);
	}
	for (i = 0; i < from->nstacks; i++) {
		const struct stack_row *row = &from->stacks[i];

		err = report_add_stack_est(into, row->class_name, row->stack, &row->counts,
					   &row->est, &row->ages);
		if (err)
			return err;
	}
	into->merged++;
	into->census_only = into->merged == 1 ? from->census_only
					      : into->census_only && from->census_only;
	into->have_estimates = into->have_estimates || from->have_estimates;
	if (from->duration_s > into->duration_s)
		into->duration_s = from->duration_s;
	into->gc_runs += from->gc_runs;
	into->compactions += from->compactions;
	into->moved_followed += from->moved_followed;
	into->moved_over += from->moved_over;
	into->scan_failures += from->scan_failures;
	into->end_read_while_compacting |= from->end_read_while_compacting;
	into->header_read_errors += from->header_read_errors;
	into->class_overflow += from->class_overflow;
	caps_add(&into->caps, &from->caps);
	into->have_gc_counts = (into->merged == 1 || into->have_gc_counts) && from->have_gc_counts;
	into->gc_allocated += from->gc_allocated;
	into->gc_moved += from->gc_moved;
	into->gc_moves_left_out |= from->gc_moves_left_out;
	into->gc_freed += from->gc_freed;
	add_heap(&into->heap_start, &from->heap_start);
	add_heap(&into->heap_end, &from->heap_end);
	into->with_stacks = into->with_stacks || from->with_stacks;
	into->stacks_truncated += from->stacks_truncated;
	into->stacks_dropped += from->stacks_dropped;
	into->stack_errors += from->stack_errors;
	return 0;
}

int model_summary(const struct model *m, struct report *sum)
{
	size_t i;
	int err;

	memset(sum, 0, sizeof(*sum));
	sum->exit_status = -1;
	sum->end_reason = "merged";
	for (i = 0; i < m->nprocs; i++) {
		const struct report *r = m->procs[i];

		err = report_merge(sum, r);
		if (err)
			return err;
		/* One version if they all share it: a reader of the summary may rely on it. */
		if (i == 0)
			snprintf(sum->ruby_version, sizeof(sum->ruby_version), "%s",
				 r->ruby_version);
		else if (strcmp(sum->ruby_version, r->ruby_version))
			snprintf(sum->ruby_version, sizeof(sum->ruby_version), "mixed");
		sum->target_exited = sum->target_exited || r->target_exited;
	}
	report_finish(sum);
	return 0;
}

int host_failures_add(struct host_failures *f, const char *host, const char *reason)
{
	struct host_failure *v = f->v;

	if (f->n == f->cap) {
		v = realloc(f->v, (f->cap ? f->cap * 2 : 8) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = f->cap ? f->cap * 2 : 8;
	}
	v[f->n].host = strdup(host);
	v[f->n].reason = strdup(reason);
	if (!v[f->n].host || !v[f->n].reason) {
		free(v[f->n].host);
		free(v[f->n].reason);
		return -ENOMEM;
	}
	f->n++;
	return 0;
}

void host_failures_free(struct host_failures *f)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		free(f->v[i].host);
		free(f->v[i].reason);
	}
	free(f->v);
	memset(f, 0, sizeof(*f));
}

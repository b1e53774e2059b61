// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The JSON report, through the one writer (json_writer.h); docs/json.md is its schema. */
#include <inttypes.h>
#include "json_writer.h"
#include "writers.h"

static void write_counts(struct jw *w, const struct counts *c)
{
	jw_u64(w, JK(allocated), c->allocated);
	jw_u64(w, JK(freed), c->freed);
	jw_u64(w, JK(retained), c->retained);
	jw_u64(w, JK(young), c->young);
	jw_u64(w, JK(untracked), c->untracked);
	jw_u64(w, JK(not_followed), c->not_followed);
}

/* GCs survived by the retained, per bucket of age_buckets (their lower bounds). */
static void write_ages(struct jw *w, const struct ages *a)
{
	unsigned i;

	jw_array(w, JK(retained_ages), JW_INLINE);
	for (i = 0; i < AGE_BUCKETS; i++)
		jw_u64(w, NULL, a->n[i]);
	jw_end(w);
}

static void write_census(struct jw *w, const struct census_counts *cc)
{
	if (!cc->have)
		return;
	jw_u64(w, JK(live_start), cc->live_start);
	jw_u64(w, JK(live_end), cc->live_end);
	jw_i64(w, JK(change), cc->change);
	jw_u64(w, JK(bytes), cc->bytes_end);
	jw_u64(w, JK(old), cc->old_end);
	jw_u64(w, JK(garbage), cc->garbage_end);
	if (!cc->have_new)
		return;
	jw_u64(w, JK(new_alive), cc->new_alive);
	jw_u64(w, JK(new_retained), cc->new_retained);
	jw_u64(w, JK(new_unaged), cc->new_unaged);
	jw_u64(w, JK(new_old), cc->new_old);
}

/* A period's live objects of the class by the period they were born in: [period, live] pairs. */
static void write_born(struct jw *w, const struct class_row *row)
{
	size_t k;

	if (!row->have_born)
		return;
	jw_array(w, JK(born), JW_INLINE);
	for (k = 0; k < row->nborn; k++) {
		jw_array(w, NULL, JW_INLINE);
		jw_u64(w, NULL, row->born[k].period);
		jw_u64(w, NULL, row->born[k].live);
		jw_end(w);
	}
	jw_end(w);
}

static void write_heap(struct jw *w, const char *key, const struct heap_info *h)
{
	if (!h->have)
		return;
	jw_object(w, key, JW_INLINE);
	jw_u64(w, JK(slots), h->slots);
	jw_u64(w, JK(live), h->live);
	jw_u64(w, JK(free), h->free);
	jw_u64(w, JK(garbage), h->garbage);
	jw_u64(w, JK(bytes), h->bytes);
	jw_bool(w, JK(marking), h->marking);
	jw_double(w, JK(seconds), "%.4f", h->seconds);
	jw_end(w);
}

/* Under sampling: est_* are the traced counts scaled to the whole process. */
static void write_estimates(struct jw *w, const struct report *r, const struct estimates *e,
			    bool with_freed)
{
	if (!r->have_estimates)
		return;
	jw_u64(w, JK(est_allocated), e->allocated);
	jw_u64(w, JK(est_retained), e->retained);
	if (with_freed)
		jw_u64(w, JK(est_freed), e->freed);
}

/* A period of a continuous trace: what each row allocated during it alone. */
static void write_period_counts(struct jw *w, const struct report *r, const struct period_counts *p)
{
	if (!r->period.on)
		return;
	jw_u64(w, JK(period_allocated), p->allocated);
	if (r->period.estimated)
		jw_u64(w, JK(est_period_allocated), p->est_allocated);
}

static void write_period(struct jw *w, const struct report *r)
{
	const struct period_info *p = &r->period;

	if (!p->on)
		return;
	jw_object(w, JK(period), JW_INLINE);
	jw_u64(w, JK(number), p->number);
	jw_double(w, JK(time), "%.3f", p->time);
	jw_double(w, JK(duration_s), "%.3f", p->duration_s);
	if (p->have_gc_counts)
		jw_u64(w, JK(allocated), p->gc_allocated);
	else
		jw_null(w, JK(allocated));
	jw_u64(w, JK(traced), p->traced);
	if (p->estimated) {
		jw_double(w, JK(scale), "%.3f", p->scale);
		jw_bool(w, JK(untraced), p->untraced);
	}
	jw_end(w);
}

static void write_sampling(struct jw *w, const struct report *r)
{
	const struct sampling_info *si = &r->sampling;

	if (!si->on) {
		jw_null(w, JK(sampling));
		return;
	}
	jw_object(w, JK(sampling), JW_INLINE);
	jw_double(w, JK(max_overhead_percent), "%.3g", si->budget_percent);
	jw_u64(w, JK(windows), si->windows);
	jw_double(w, JK(window_s), "%.3f", si->window_time_s);
	jw_double(w, JK(estimated_overhead_percent), "%.3f", si->est_overhead * 100);
	jw_u64(w, JK(probe_hits), si->probe_hits);
	jw_u64(w, JK(traced), si->traced);
	jw_double(w, JK(fraction), "%.6f", si->scale > 0 ? 1 / si->scale : 0);
	jw_double(w, JK(scale), "%.3f", si->scale);
	jw_u64(w, JK(covered), si->covered);
	jw_double(w, JK(sample), "%.4f", si->sample);
	jw_u64(w, JK(burst_windows), si->burst_windows);
	if (r->heap_end.have)
		jw_u64(w, JK(capped_by_census), r->est_capped);
	jw_string(w, JK(confidence), si->doubt[0] ? "low" : "ok");
	if (si->doubt[0])
		jw_string(w, JK(doubt), si->doubt);
	jw_end(w);
}

static void write_frames(struct jw *w, const struct stack *st)
{
	size_t j;

	jw_array(w, JK(frames), JW_INLINE);
	for (j = 0; j < st->depth; j++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(label), st->frames[j].label);
		jw_string(w, JK(path), st->frames[j].path);
		jw_int(w, JK(line), st->frames[j].line);
		jw_end(w);
	}
	jw_end(w);
}

static void write_sites(struct jw *w, const struct report *r)
{
	size_t i;

	jw_array(w, JK(sites), JW_LINES);
	for (i = 0; i < r->nsites; i++) {
		const struct site_row *site = &r->sites[i];

		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(class), site->class_name);
		jw_string(w, JK(path), site->path);
		jw_int(w, JK(line), site->line);
		jw_u64(w, JK(allocated), site->counts.allocated);
		jw_u64(w, JK(retained), site->counts.retained);
		jw_u64(w, JK(young), site->counts.young);
		write_estimates(w, r, &site->est, false);
		write_period_counts(w, r, &site->period);
		write_ages(w, &site->ages);
		jw_end(w);
	}
	jw_end(w);
}

static void write_stacks(struct jw *w, const struct report *r)
{
	size_t i;

	jw_object(w, JK(stack_drops), JW_INLINE);
	jw_u64(w, JK(truncated), r->stacks_truncated);
	jw_u64(w, JK(dropped), r->stacks_dropped);
	jw_u64(w, JK(errors), r->stack_errors);
	jw_u64(w, JK(no_site), r->no_site);
	jw_end(w);
	write_sites(w, r);
	jw_array(w, JK(stacks), JW_LINES);
	for (i = 0; i < r->nstacks; i++) {
		const struct stack_row *row = &r->stacks[i];

		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(class), row->class_name);
		jw_u64(w, JK(allocated), row->counts.allocated);
		jw_u64(w, JK(retained), row->counts.retained);
		jw_u64(w, JK(young), row->counts.young);
		write_estimates(w, r, &row->est, false);
		write_period_counts(w, r, &row->period);
		write_ages(w, &row->ages);
		jw_bool(w, JK(truncated), row->stack->truncated);
		write_frames(w, row->stack);
		jw_end(w);
	}
	jw_end(w);
}

static void write_suspects(struct jw *w, const struct report *r)
{
	const struct report_retainer *rt;
	size_t i;

	jw_array(w, JK(suspects), JW_LINES);
	for (i = 0; i < r->nsuspects; i++) {
		const struct suspect *s = &r->suspects[i];

		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(class), s->class_name);
		jw_u64(w, JK(old_retained), s->old_retained);
		jw_u64(w, JK(bytes), s->bytes);
		if (s->have_change)
			jw_i64(w, JK(live_change), s->live_change);
		jw_bool(w, JK(by_all_retained), r->suspects_by_all_retained);
		if (s->site) {
			jw_object(w, JK(site), JW_INLINE);
			jw_string(w, JK(path), s->site->path);
			jw_int(w, JK(line), s->site->line);
			jw_end(w);
		}
		if (s->stack)
			write_frames(w, s->stack->stack);
		if ((rt = report_retainer_of(r, s->class_name))) {
			jw_object(w, JK(retainer), JW_INLINE);
			jw_string(w, JK(kind), rt->root_kind);
			jw_string(w, JK(path), rt->path);
			jw_u64(w, JK(count), rt->count);
			jw_u64(w, JK(live), rt->live);
			jw_end(w);
		}
		jw_end(w);
	}
	jw_end(w);
}

static void write_classes(struct jw *w, const struct report *r)
{
	size_t i;

	jw_array(w, JK(classes), JW_LINES);
	for (i = 0; i < r->nrows; i++) {
		const struct class_row *row = &r->rows[i];

		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(name), row->name);
		write_counts(w, &row->counts);
		write_estimates(w, r, &row->est, true);
		write_period_counts(w, r, &row->period);
		if (r->have_estimates && row->counts.window_bits) {
			jw_u64(w, JK(windows), counts_windows(&row->counts));
			jw_bool(w, JK(estimate_rough), class_estimate_rough(r, row));
		}
		if (r->have_estimates)
			jw_string(w, JK(est_source), est_source_name(row->est_source));
		write_census(w, &row->census);
		write_born(w, row);
		write_ages(w, &row->ages);
		jw_end(w);
	}
	jw_end(w);
}

/* Ruby's own counters over the trace (GC.stat), and the moves taken out of them. */
static void write_gc_stat(struct jw *w, const struct report *r)
{
	if (!r->have_gc_counts)
		return;
	jw_object(w, JK(gc_stat), JW_INLINE);
	jw_u64(w, JK(total_allocated_objects), r->gc_allocated);
	jw_u64(w, JK(total_freed_objects), r->gc_freed);
	if (r->gc_counts_stale)
		jw_bool(w, JK(stale), true);
	if (r->gc_moves_left_out) {
		jw_u64(w, JK(moved_objects), r->gc_moved);
		jw_bool(w, JK(moves_left_out), true);
	}
	if (r->gc_moves_unknown)
		jw_string(w, JK(moves_unknown), r->gc_moves_why);
	jw_end(w);
}

/* Which process, and where it runs when known: what a fleet groups by. */
static void write_who(struct jw *w, const struct report *r, bool identity)
{
	jw_int(w, JK(pid), r->pid);
	if (identity) { /* which process: a model's reports (merge, fleet), where several meet */
		jw_int(w, JK(ns_pid), r->ns_pid);
		jw_string(w, JK(host), r->host);
		jw_string(w, JK(command), r->command);
	} else if (r->command[0]) { /* one process: who it is, with where it runs */
		jw_string(w, JK(command), r->command);
	}
	if (r->container_id[0])
		jw_string(w, JK(container_id), r->container_id);
	if (r->pod_uid[0])
		jw_string(w, JK(pod_uid), r->pod_uid);
	if (r->pod_name[0])
		jw_string(w, JK(pod_name), r->pod_name);
	if (r->pod_namespace[0])
		jw_string(w, JK(pod_namespace), r->pod_namespace);
}

void report_write_json_members(struct jw *w, const struct report *r, bool identity)
{
	size_t i;

	write_who(w, r, identity);
	jw_string(w, JK(ruby_version), r->ruby_version);
	report_write_layout_json(w, &r->layout);
	jw_double(w, JK(duration_s), "%.3f", r->duration_s);
	jw_string(w, JK(end_reason), r->end_reason);
	jw_bool(w, JK(target_exited), r->target_exited);
	if (r->exit_status >= 0)
		jw_int(w, JK(exit_status), r->exit_status);
	jw_u64(w, JK(gc_runs), r->gc_runs);
	jw_object(w, JK(compaction), JW_INLINE);
	jw_u64(w, JK(count), r->compactions);
	jw_u64(w, JK(followed), r->moved_followed);
	jw_u64(w, JK(moved_over), r->moved_over);
	jw_u64(w, JK(scan_failures), r->scan_failures);
	jw_u64(w, JK(not_followed), r->totals.not_followed);
	if (r->end_read_while_compacting)
		jw_bool(w, JK(end_read_while_compacting), true);
	jw_end(w);
	jw_object(w, JK(dropped), JW_INLINE);
	jw_u64(w, JK(header_read_errors), r->header_read_errors);
	jw_u64(w, JK(class_overflow), r->class_overflow);
	jw_end(w);
	report_write_caps_json(w, &r->caps);
	write_gc_stat(w, r);
	write_sampling(w, r);
	write_period(w, r);
	write_heap(w, JK(heap_start), &r->heap_start);
	write_heap(w, JK(heap_end), &r->heap_end);
	jw_array(w, JK(age_buckets), JW_INLINE);
	for (i = 0; i < AGE_BUCKETS; i++)
		jw_u64(w, NULL, age_bucket_low(i));
	jw_end(w);
	jw_object(w, JK(totals), JW_INLINE);
	write_counts(w, &r->totals);
	write_estimates(w, r, &r->est_totals, true);
	jw_end(w);
	write_classes(w, r);
	write_suspects(w, r);
	verdict_write_json(w, r->verdict);
	if (r->with_stacks)
		write_stacks(w, r);
}

void report_write_json(FILE *out, const struct report *r)
{
	struct jw w;

	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_LINES);
	report_write_json_members(&w, r, false);
	jw_end(&w);
	fputc('\n', out);
}

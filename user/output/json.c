// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The JSON report: README's "JSON" section is its schema. */
#include <inttypes.h>
#include "escape.h"
#include "writers.h"

static void write_counts_json(FILE *out, const struct counts *c)
{
	fprintf(out,
		"\"allocated\": %" PRIu64 ", \"freed\": %" PRIu64 ", \"retained\": %" PRIu64
		", \"young\": %" PRIu64 ", \"untracked\": %" PRIu64 ", \"not_followed\": %" PRIu64,
		c->allocated, c->freed, c->retained, c->young, c->untracked, c->not_followed);
}

/* GCs survived by the retained, per bucket of age_buckets (their lower bounds). */
static void write_ages_json(FILE *out, const struct ages *a)
{
	unsigned i;

	fprintf(out, ", \"retained_ages\": [");
	for (i = 0; i < AGE_BUCKETS; i++)
		fprintf(out, "%s%" PRIu64, i ? ", " : "", a->n[i]);
	fputc(']', out);
}

static void write_census_json(FILE *out, const struct census_counts *cc)
{
	if (!cc->have)
		return;
	fprintf(out,
		", \"live_start\": %" PRIu64 ", \"live_end\": %" PRIu64 ", \"change\": %" PRId64
		", \"bytes\": %" PRIu64 ", \"old\": %" PRIu64 ", \"garbage\": %" PRIu64,
		cc->live_start, cc->live_end, cc->change, cc->bytes_end, cc->old_end,
		cc->garbage_end);
}

static void write_heap_json(FILE *out, const char *pad, const char *name,
			    const struct heap_info *h)
{
	if (!h->have)
		return;
	fprintf(out,
		"%s  \"%s\": {\"slots\": %" PRIu64 ", \"live\": %" PRIu64 ", \"free\": %" PRIu64
		", \"garbage\": %" PRIu64 ", \"bytes\": %" PRIu64
		", \"marking\": %s, \"seconds\": %.4f},\n",
		pad, name, h->slots, h->live, h->free, h->garbage, h->bytes,
		h->marking ? "true" : "false", h->seconds);
}

/* Under sampling: est_* are the traced counts scaled to the whole process. */
static void write_estimates_json(FILE *out, const struct report *r, const struct estimates *e,
				 bool with_freed)
{
	if (!r->have_estimates)
		return;
	fprintf(out, ", \"est_allocated\": %" PRIu64 ", \"est_retained\": %" PRIu64, e->allocated,
		e->retained);
	if (with_freed)
		fprintf(out, ", \"est_freed\": %" PRIu64, e->freed);
}

static void write_sampling_json(FILE *out, const char *pad, const struct report *r)
{
	const struct sampling_info *si = &r->sampling;

	if (!si->on) {
		fprintf(out, "%s  \"sampling\": null,\n", pad);
		return;
	}
	fprintf(out,
		"%s  \"sampling\": {\"max_overhead_percent\": %.3g, \"windows\": %" PRIu64
		", \"window_s\": %.3f, \"estimated_overhead_percent\": %.3f, \"probe_hits\": %" PRIu64
		", \"traced\": %" PRIu64 ", \"fraction\": %.6f, \"scale\": %.3f, \"covered\": %" PRIu64
		", \"sample\": %.4f, \"burst_windows\": %" PRIu64,
		pad, si->budget_percent, si->windows, si->window_time_s, si->est_overhead * 100,
		si->probe_hits, si->traced, si->scale > 0 ? 1 / si->scale : 0, si->scale, si->covered,
		si->sample, si->burst_windows);
	if (r->heap_end.have)
		fprintf(out, ", \"capped_by_census\": %" PRIu64, r->est_capped);
	fprintf(out, ", \"confidence\": \"%s\"", si->doubt[0] ? "low" : "ok");
	if (si->doubt[0]) {
		fprintf(out, ", \"doubt\": ");
		json_write_string(out, si->doubt);
	}
	fprintf(out, "},\n");
}

static void write_frames_json(FILE *out, const struct stack *st)
{
	size_t j;

	for (j = 0; j < st->depth; j++) {
		const struct frame *f = &st->frames[j];

		fprintf(out, "%s{\"label\": ", j ? ", " : "");
		json_write_string(out, f->label);
		fprintf(out, ", \"path\": ");
		json_write_string(out, f->path);
		fprintf(out, ", \"line\": %d}", f->line);
	}
}

static void write_stacks_json(FILE *out, const char *pad, const struct report *r)
{
	size_t i;

	fprintf(out, ",\n%s  \"stack_drops\": {\"truncated\": %" PRIu64 ", \"dropped\": %" PRIu64
		     ", \"errors\": %" PRIu64 "},\n%s  \"sites\": [",
		pad, r->stacks_truncated, r->stacks_dropped, r->stack_errors, pad);
	for (i = 0; i < r->nsites; i++) {
		const struct site_row *site = &r->sites[i];

		fprintf(out, "%s\n%s    {\"class\": ", i ? "," : "", pad);
		json_write_string(out, site->class_name);
		fprintf(out, ", \"path\": ");
		json_write_string(out, site->path);
		fprintf(out, ", \"line\": %d, \"allocated\": %" PRIu64 ", \"retained\": %" PRIu64
			     ", \"young\": %" PRIu64,
			site->line, site->counts.allocated, site->counts.retained,
			site->counts.young);
		write_estimates_json(out, r, &site->est, false);
		write_ages_json(out, &site->ages);
		fputc('}', out);
	}
	fprintf(out, "%s%s],\n%s  \"stacks\": [", r->nsites ? "\n  " : "", r->nsites ? pad : "",
		pad);
	for (i = 0; i < r->nstacks; i++) {
		const struct stack_row *row = &r->stacks[i];

		fprintf(out, "%s\n%s    {\"class\": ", i ? "," : "", pad);
		json_write_string(out, row->class_name);
		fprintf(out, ", \"allocated\": %" PRIu64 ", \"retained\": %" PRIu64
			     ", \"young\": %" PRIu64,
			row->counts.allocated, row->counts.retained, row->counts.young);
		write_estimates_json(out, r, &row->est, false);
		write_ages_json(out, &row->ages);
		fprintf(out, ", \"truncated\": %s, \"frames\": [",
			row->stack->truncated ? "true" : "false");
		write_frames_json(out, row->stack);
		fprintf(out, "]}");
	}
	fprintf(out, "%s%s]", r->nstacks ? "\n  " : "", r->nstacks ? pad : "");
}

static void write_suspects_json(FILE *out, const char *pad, const struct report *r)
{
	size_t i;

	fprintf(out, ",\n%s  \"suspects\": [", pad);
	for (i = 0; i < r->nsuspects; i++) {
		const struct suspect *s = &r->suspects[i];

		fprintf(out, "%s\n%s    {\"class\": ", i ? "," : "", pad);
		json_write_string(out, s->class_name);
		fprintf(out, ", \"old_retained\": %" PRIu64 ", \"bytes\": %" PRIu64, s->old_retained,
			s->bytes);
		if (s->have_change)
			fprintf(out, ", \"live_change\": %" PRId64, s->live_change);
		fprintf(out, ", \"by_all_retained\": %s",
			r->suspects_by_all_retained ? "true" : "false");
		if (s->site) {
			fprintf(out, ", \"site\": {\"path\": ");
			json_write_string(out, s->site->path);
			fprintf(out, ", \"line\": %d}", s->site->line);
		}
		if (s->stack) {
			fprintf(out, ", \"frames\": [");
			write_frames_json(out, s->stack->stack);
			fputc(']', out);
		}
		fputc('}', out);
	}
	fprintf(out, "%s%s]", r->nsuspects ? "\n  " : "", r->nsuspects ? pad : "");
}

/* Which process: written in a model's reports (merge, fleet), where several meet. */
static void write_identity_json(FILE *out, const char *pad, const struct report *r)
{
	fprintf(out, "%s  \"ns_pid\": %d,\n%s  \"host\": ", pad, r->ns_pid, pad);
	json_write_string(out, r->host);
	fprintf(out, ",\n%s  \"command\": ", pad);
	json_write_string(out, r->command);
	fprintf(out, ",\n");
}

void report_write_json_object(FILE *out, const struct report *r, unsigned indent, bool identity)
{
	char pad[64];
	size_t i;

	/* Inside a model's "processes" array the object is indented; its keys follow. */
	snprintf(pad, sizeof(pad), "%*s", (int)(indent < sizeof(pad) ? indent : sizeof(pad) - 1),
		 "");
	fprintf(out, "{\n%s  \"pid\": %d,\n", pad, r->pid);
	if (identity)
		write_identity_json(out, pad, r);
	fprintf(out, "%s  \"ruby_version\": ", pad);
	json_write_string(out, r->ruby_version);
	fprintf(out, ",\n");
	report_write_layout_json(out, pad, &r->layout);
	fprintf(out, "%s  \"duration_s\": %.3f,\n%s  \"end_reason\": ", pad, r->duration_s, pad);
	json_write_string(out, r->end_reason);
	fprintf(out, ",\n%s  \"target_exited\": %s,\n", pad, r->target_exited ? "true" : "false");
	if (r->exit_status >= 0)
		fprintf(out, "%s  \"exit_status\": %d,\n", pad, r->exit_status);
	fprintf(out, "%s  \"gc_runs\": %" PRIu64 ",\n", pad, r->gc_runs);
	fprintf(out,
		"%s  \"compaction\": {\"count\": %" PRIu64 ", \"followed\": %" PRIu64
		", \"not_followed\": %" PRIu64 "},\n",
		pad, r->compactions, r->moved_followed, r->totals.not_followed);
	fprintf(out, "%s  \"dropped\": {\"header_read_errors\": %" PRIu64
		     ", \"class_overflow\": %" PRIu64 "},\n",
		pad, r->header_read_errors, r->class_overflow);
	if (r->have_gc_counts)
		fprintf(out, "%s  \"gc_stat\": {\"total_allocated_objects\": %" PRIu64
			     ", \"total_freed_objects\": %" PRIu64 "},\n",
			pad, r->gc_allocated, r->gc_freed);
	write_sampling_json(out, pad, r);
	write_heap_json(out, pad, "heap_start", &r->heap_start);
	write_heap_json(out, pad, "heap_end", &r->heap_end);
	fprintf(out, "%s  \"age_buckets\": [", pad);
	for (i = 0; i < AGE_BUCKETS; i++)
		fprintf(out, "%s%" PRIu64, i ? ", " : "", age_bucket_low(i));
	fprintf(out, "],\n%s  \"totals\": {", pad);
	write_counts_json(out, &r->totals);
	write_estimates_json(out, r, &r->est_totals, true);
	fprintf(out, "},\n%s  \"classes\": [", pad);
	for (i = 0; i < r->nrows; i++) {
		fprintf(out, "%s\n%s    {\"name\": ", i ? "," : "", pad);
		json_write_string(out, r->rows[i].name);
		fprintf(out, ", ");
		write_counts_json(out, &r->rows[i].counts);
		write_estimates_json(out, r, &r->rows[i].est, true);
		if (r->have_estimates && r->rows[i].counts.window_bits)
			fprintf(out, ", \"windows\": %u, \"estimate_rough\": %s",
				counts_windows(&r->rows[i].counts),
				estimate_from_few_windows(r, &r->rows[i].counts) ? "true" : "false");
		write_census_json(out, &r->rows[i].census);
		write_ages_json(out, &r->rows[i].ages);
		fputc('}', out);
	}
	fprintf(out, "%s%s]", r->nrows ? "\n  " : "", r->nrows ? pad : "");
	write_suspects_json(out, pad, r);
	if (r->with_stacks)
		write_stacks_json(out, pad, r);
	fprintf(out, "\n%s}", pad);
}

void report_write_json(FILE *out, const struct report *r)
{
	report_write_json_object(out, r, 0, false);
	fputc('\n', out);
}

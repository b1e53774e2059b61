// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The text report: a header, the class table, sites, call paths and the tree. */
#include <inttypes.h>
#include "calltree.h"
#include "escape.h"
#include "writers.h"

static size_t shown_rows(size_t top, size_t n)
{
	return top && top < n ? top : n;
}

static void write_stack_sections(FILE *out, const struct report *r, const struct text_options *o)
{
	char name[1024], cls[512], frame[1024];
	bool est = r->have_estimates;
	size_t i, j, shown;

	fprintf(out, "\nRetained by allocation site (innermost Ruby frame):\n");
	fprintf(out, "%10s %10s%s  %s\n", "RETAINED", "ALLOCATED", est ? "  ~RETAINED" : "",
		"SITE  CLASS");
	shown = shown_rows(o->top, r->nsites);
	for (i = 0; i < shown; i++) {
		const struct site_row *s = &r->sites[i];

		fprintf(out, "%10" PRIu64 " %10" PRIu64, s->counts.retained, s->counts.allocated);
		if (est)
			fprintf(out, " %10" PRIu64, s->est.retained);
		fprintf(out, "  %s:%d  %s\n", term_escape(s->path, name, sizeof(name)), s->line,
			term_escape(s->class_name, cls, sizeof(cls)));
	}
	if (shown < r->nsites)
		fprintf(out, "... %zu more sites\n", r->nsites - shown);

	shown = shown_rows(o->top_stacks, r->nstacks);
	fprintf(out, "\nRetained by call path (top %zu of %zu, innermost frame first):\n", shown,
		r->nstacks);
	for (i = 0; i < shown; i++) {
		const struct stack_row *row = &r->stacks[i];

		fprintf(out, "%10" PRIu64 " retained, %" PRIu64 " allocated: %s\n",
			row->counts.retained, row->counts.allocated,
			term_escape(row->class_name, cls, sizeof(cls)));
		for (j = 0; j < row->stack->depth; j++) {
			frame_display_name(&row->stack->frames[j], frame, sizeof(frame));
			fprintf(out, "            %s\n", term_escape(frame, name, sizeof(name)));
		}
		if (row->stack->truncated)
			fprintf(out, "            ... (frames beyond --depth)\n");
	}

	if (o->tree) {
		struct ct_node *root = report_calltree(r, o->prune, o->tree_callee);

		if (root) {
			fprintf(out, "\n");
			calltree_print(out, root);
			calltree_free(root);
		}
	}
}

static void write_sampling_text(FILE *out, const struct report *r)
{
	const struct sampling_info *si = &r->sampling;

	fprintf(out, "Sampled (--max-overhead %.3g): allocation probes attached in %" PRIu64
		     " windows placed at random in Ruby's allocation stream (%" PRIu64
		     " covering one burst whole), %.2f s of %.1f s; %" PRIu64
		     " allocations covered, 1 in %.1f of them traced; estimated cost to the target "
		     "%.2f%%.\n",
		si->budget_percent, si->windows, si->burst_windows, si->window_time_s, r->duration_s,
		si->covered, si->sample > 0 ? 1 / si->sample : 0, si->est_overhead * 100);
	if (r->have_estimates)
		fprintf(out, "Traced %" PRIu64 " of the %" PRIu64 " objects Ruby allocated (1 in %.1f): "
			     "counts are of traced objects, exact for them; ~ columns scale them up "
			     "to the whole process (--full counts everything).\n",
			si->traced, r->gc_allocated, si->scale);
	else if (!si->windows)
		fprintf(out, "No window opened in %.1f s: the budget pays for the first, and for "
			     "attaching it, only after a second or more of tracing, so nothing was "
			     "traced (trace longer, or --full counts every allocation).\n",
			r->duration_s);
	else if (!si->traced)
		fprintf(out, "No allocation was traced in the %" PRIu64 " windows: nothing to scale "
			     "up, so no estimates.\n",
			si->windows);
	else
		fprintf(out, "Traced %" PRIu64 " allocations; Ruby's own allocation counter could "
			     "not be read, so no estimates.\n",
			si->traced);
	if (si->doubt[0])
		fprintf(out, "Estimates are rough: %s.\n", si->doubt);
}

/* A period of a continuous trace (--every): how long, and what Ruby allocated in it. */
static void write_period(FILE *out, const struct period_info *p)
{
	fprintf(out, "Period %" PRIu64 ": the last %.1f s; ", p->number, p->duration_s);
	if (p->have_gc_counts)
		fprintf(out, "Ruby allocated %" PRIu64 " objects in it, %" PRIu64 " traced.\n",
			p->gc_allocated, p->traced);
	else
		fprintf(out, "%" PRIu64 " allocations traced in it.\n", p->traced);
}

/* What GC.compact did to the trace: moves followed, or not, or not seen. */
static void write_compaction_warnings(FILE *out, const struct report *r)
{
	if (r->compactions && r->sampling.on && !r->sampling.windows)
		fprintf(out, "WARNING: GC.compact ran %" PRIu64 " time(s) while tracing, unseen: no "
			     "window was open, so no traced object was there to move, and nothing "
			     "says what they moved (--full follows every move).\n",
			r->compactions);
	else if (r->compactions)
		fprintf(out, "WARNING: GC.compact ran %" PRIu64 " time(s) while tracing: %" PRIu64
			     " tracked objects moved and were followed, %" PRIu64
			     " left their slots and could not be followed (moved or freed; not "
			     "counted as freed or retained).\n",
			r->compactions, r->moved_followed, r->totals.not_followed);
	if (r->scan_failures)
		fprintf(out, "WARNING: %" PRIu64 " compaction(s) could not be scanned whole for "
			     "moved objects: a dead object whose slot a moved one took may be "
			     "counted retained.\n",
			r->scan_failures);
	if (r->end_read_while_compacting)
		fprintf(out, "The target compacted without pause when the trace ended: the final read "
			     "ran through a compaction, and an object moving as it was read may be "
			     "miscounted (on a GC.compact loop: within 0.5%% of the retained, up to "
			     "about 3%% fewer on Ruby 3.3 and 3.4).\n");
}

/* Ruby 3.4's counters count each move as an allocation and a free: said, with the figure. */
static void write_gc_moves(FILE *out, const struct report *r)
{
	if (r->gc_moves_left_out && r->gc_moved)
		fprintf(out, "Ruby's own counters over the trace (GC.stat) count each of the %" PRIu64
			     " objects GC.compact moved as one more allocation and free: taken out, "
			     "Ruby allocated %" PRIu64 " and freed %" PRIu64 ".\n",
			r->gc_moved, r->gc_allocated, r->gc_freed);
	else if (r->gc_moves_unknown)
		fprintf(out, "Ruby's own counters over the trace (GC.stat) count each object "
			     "GC.compact moved as one more allocation and free, and how many moved is "
			     "not known (%s): their %" PRIu64 " allocated hold the moves.\n",
			r->gc_moves_why, r->gc_allocated);
}

static void write_header(FILE *out, const struct report *r)
{
	fprintf(out, "rbmemtrace: PID %d, ruby %s, traced %.1f s (%s), %" PRIu64 " GC runs\n",
		r->pid, r->ruby_version, r->duration_s, r->end_reason, r->gc_runs);
	report_write_layout_text(out, "", &r->layout);
	if (r->exit_status >= 0)
		fprintf(out, "Command exited with status %d.\n", r->exit_status);
	if (r->gc_counts_stale)
		fprintf(out, "The target exited without passing Ruby's exit (killed, or exit!): Ruby's "
			     "counters are the last ones read, before it allocated its last objects.\n");
	if (r->period.on)
		write_period(out, &r->period);
	fprintf(out, "Counts are of objects allocated while tracing; retained = alive at the end "
		     "and survived a GC since allocated%s.\n",
		r->target_exited ? " (as of the last GC check before the target exited)" : "");
	fprintf(out, "Totals: allocated %" PRIu64 ", freed %" PRIu64 ", retained %" PRIu64
		     ", untracked %" PRIu64 "\n",
		r->totals.allocated, r->totals.freed, r->totals.retained, r->totals.untracked);
	if (r->totals.untracked)
		fprintf(out, "WARNING: %" PRIu64 " objects were allocated after the live-object map "
			     "filled and are not tracked: raise --max-objects.\n",
			r->totals.untracked);
	write_compaction_warnings(out, r);
	write_gc_moves(out, r);
	if (r->sampling.on)
		write_sampling_text(out, r);
	if (r->heap_end.have)
		fprintf(out, "Heap census (exact, read from the heap): %" PRIu64 " live objects at the "
			     "start, %" PRIu64 " at the end (%.1f MB); %" PRIu64 " garbage awaiting the "
			     "sweep.%s\n",
			r->heap_start.have ? r->heap_start.live : 0, r->heap_end.live,
			r->heap_end.bytes / 1e6, r->heap_end.garbage,
			r->est_capped ? " Retained estimates set or bounded by the heap (= and *)." : "");
	if (r->totals.young)
		fprintf(out, "Young: %" PRIu64 " objects are alive but were allocated after the last "
			     "GC started: not yet judged, not counted as retained.\n",
			r->totals.young);
	if (r->header_read_errors || r->class_overflow)
		fprintf(out, "WARNING: %" PRIu64 " allocations could not be read and %" PRIu64
			     " were not counted (class table full).\n",
			r->header_read_errors, r->class_overflow);
	report_write_caps_text(out, "", &r->caps);
}

static void write_suspects(FILE *out, const struct report *r)
{
	const struct report_retainer *rt;
	char name[1024], frame[1024];
	size_t i, j;

	if (!r->nsuspects)
		return;
	fprintf(out, "\nLeak suspects (retained objects that survived %s, most first):\n",
		r->suspects_by_all_retained ? "the trace: fewer than 3 GCs ran, so age cannot tell"
					     : "3 or more GCs");
	for (i = 0; i < r->nsuspects; i++) {
		const struct suspect *s = &r->suspects[i];

		fprintf(out, "%2zu. %s: %s%" PRIu64 " old retained, ~%.1f KB", i + 1,
			term_escape(s->class_name, name, sizeof(name)), r->have_estimates ? "~" : "",
			s->old_retained, s->bytes / 1024.0);
		if (s->have_change)
			fprintf(out, "; live %+" PRId64 " over the trace", s->live_change);
		fputc('\n', out);
		/* a sampled site rests on a few traced objects: it says how many */
		if (s->site && r->have_estimates)
			fprintf(out, "    allocated at %s:%d (%" PRIu64 " traced retained there)\n",
				term_escape(s->site->path, name, sizeof(name)), s->site->line,
				s->site->counts.retained);
		else if (s->site)
			fprintf(out, "    allocated at %s:%d\n",
				term_escape(s->site->path, name, sizeof(name)), s->site->line);
		for (j = 0; s->stack && j < s->stack->stack->depth && j < 4; j++) {
			frame_display_name(&s->stack->stack->frames[j], frame, sizeof(frame));
			fprintf(out, "    %s %s\n", j ? "  from" : "  in", term_escape(frame, name, sizeof(name)));
		}
		if ((rt = report_retainer_of(r, s->class_name)))
			fprintf(out, "    held by %s %s (%" PRIu64 " of %" PRIu64 " live)\n",
				rt->root_kind, term_escape(rt->path, name, sizeof(name)), rt->count,
				rt->live);
	}
}

static const char source_mark[] = {[EST_SAMPLED] = ' ', [EST_BOUNDED] = '*', [EST_HEAP] = '='};

/* One class's row; its estimate's source is added to *sources, and a rough one noted. */
static void write_class_row(FILE *out, const struct report *r, const struct class_row *row,
			    unsigned *sources, bool *rough)
{
	const struct counts *c = &row->counts;
	char name[1024];

	fprintf(out, "%10" PRIu64 " %10" PRIu64 " %10" PRIu64, c->retained, c->allocated, c->freed);
	if (r->totals.young)
		fprintf(out, " %10" PRIu64, c->young);
	if (r->totals.untracked)
		fprintf(out, " %10" PRIu64, c->untracked);
	if (r->have_estimates) {
		fprintf(out, " %9" PRIu64 "%c %10" PRIu64, row->est.retained,
			source_mark[row->est_source], row->est.allocated);
		*sources |= 1u << row->est_source;
	}
	if (r->heap_end.have)
		fprintf(out, " %10" PRIu64 " %+10" PRId64, row->census.live_end, row->census.change);
	if (class_estimate_rough(r, row))
		*rough = true;
	fprintf(out, " %c%s\n", class_estimate_rough(r, row) ? '?' : ' ',
		term_escape(row->name, name, sizeof(name)));
}

/* What the marks of the rows shown mean (=, *, ?): only those that appear. */
static void write_estimate_notes(FILE *out, const struct report *r, unsigned sources, bool rough)
{
	if (sources & (1u << EST_HEAP))
		fprintf(out, "= the heap's own count: the censuses at the start and the end, compared "
			     "slot by slot, found that many objects of the class made during the trace "
			     "and alive after a GC.\n");
	if (sources & (1u << EST_BOUNDED))
		fprintf(out, "* the traced count scaled up, moved into the range the heap allows "
			     "(the censuses' count of new objects, or what the class holds).\n");
	if (rough)
		fprintf(out, "? estimated from objects traced in only 1 or 2 of the %" PRIu64
			     " windows: a class made in one burst that a window covered is scaled up "
			     "as if the whole run made it (--full counts it exactly).\n",
			r->sampling.windows);
}

/* What the call paths lack (truncated, not stored, unreadable), then the sites, paths and tree. */
static void write_stacks(FILE *out, const struct report *r, const struct text_options *opts)
{
	if (r->stacks_truncated || r->stacks_dropped || r->stack_errors)
		fprintf(out, "Stacks: %" PRIu64 " truncated at --depth, %" PRIu64
			     " not stored (stack map full: raise --max-stacks), %" PRIu64
			     " unreadable.\n",
			r->stacks_truncated, r->stacks_dropped, r->stack_errors);
	if (r->stacks_dropped)
		fprintf(out, "Sites: the allocations whose path was not stored keep their site "
			     "(the allocating frame); %" PRIu64 " of %" PRIu64
			     " have none (no Ruby frame, or the tables were full too).\n",
			r->no_site, r->totals.allocated);
	write_stack_sections(out, r, opts);
}

void report_write_text(FILE *out, const struct report *r, const struct text_options *opts)
{
	bool est = r->have_estimates, census = r->heap_end.have, rough = false;
	unsigned sources = 0;
	size_t i, shown;

	write_header(out, r);
	verdict_write_text(out, r->verdict, r->duration_s);
	fprintf(out, "\n%10s %10s %10s%s%s%s%s  %s\n", "RETAINED", "ALLOCATED", "FREED",
		r->totals.young ? "      YOUNG" : "", r->totals.untracked ? "  UNTRACKED" : "",
		est ? "  ~RETAINED ~ALLOCATED" : "", census ? "   LIVE_END     CHANGE" : "",
		"CLASS");
	shown = shown_rows(opts->top, r->nrows);
	for (i = 0; i < shown; i++)
		write_class_row(out, r, &r->rows[i], &sources, &rough);
	if (shown < r->nrows)
		fprintf(out, "... %zu more classes (--top 0 shows all)\n", r->nrows - shown);
	write_estimate_notes(out, r, sources, rough);
	write_suspects(out, r);
	if (r->with_stacks)
		write_stacks(out, r, opts);
}

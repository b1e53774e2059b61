// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "calltree.h"
#include "escape.h"
#include "report.h"

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h ? h : 1;
}

static void counts_add(struct counts *to, const struct counts *c)
{
	to->allocated += c->allocated;
	to->freed += c->freed;
	to->retained += c->retained;
	to->untracked += c->untracked;
	to->not_followed += c->not_followed;
}

int report_add(struct report *r, const char *name, const struct counts *c)
{
	uint64_t h = name_hash(name);
	uintptr_t at = (uintptr_t)u64map_get(&r->by_name, h);
	size_t i;

	/* A hash collision falls back to a scan; it only costs time. */
	if (at && strcmp(r->rows[at - 1].name, name) != 0) {
		at = 0;
		for (i = 0; i < r->nrows && !at; i++)
			if (strcmp(r->rows[i].name, name) == 0)
				at = i + 1;
	}
	if (at) {
		counts_add(&r->rows[at - 1].counts, c);
		return 0;
	}
	if (r->nrows == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct class_row *rows = realloc(r->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		r->rows = rows;
		r->cap = cap;
	}
	r->rows[r->nrows].name = strdup(name);
	if (!r->rows[r->nrows].name)
		return -ENOMEM;
	r->rows[r->nrows].counts = *c;
	r->nrows++;
	if (!u64map_get(&r->by_name, h))
		u64map_put(&r->by_name, h, (void *)(uintptr_t)r->nrows);
	return 0;
}

static uint64_t hash_more(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL; /* separator: "ab","c" differs from "a","bc" */
}

static uint64_t hash_int(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

void frame_display_name(const struct frame *f, char *buf, size_t n)
{
	if (f->line > 0)
		snprintf(buf, n, "%s (%s:%d)", f->label, f->path, f->line);
	else
		snprintf(buf, n, "%s", f->label);
}

static bool same_stack(const struct stack *a, const struct stack *b)
{
	size_t i;

	if (a == b)
		return true;
	if (a->depth != b->depth || a->truncated != b->truncated)
		return false;
	for (i = 0; i < a->depth; i++)
		if (a->frames[i].line != b->frames[i].line ||
		    strcmp(a->frames[i].label, b->frames[i].label) ||
		    strcmp(a->frames[i].path, b->frames[i].path))
			return false;
	return true;
}

static void *grow_array(void *array, size_t *cap, size_t len, size_t size)
{
	void *bigger;

	if (len < *cap)
		return array;
	bigger = realloc(array, (*cap ? *cap * 2 : 64) * size);
	if (bigger)
		*cap = *cap ? *cap * 2 : 64;
	return bigger;
}

static int add_site(struct report *r, const char *class_name, const struct frame *f,
		    const struct counts *c)
{
	uint64_t key = hash_int(hash_more(hash_more(0xcbf29ce484222325ULL, class_name), f->path),
				f->line);
	uintptr_t at = (uintptr_t)u64map_get(&r->sites_by_key, key ? key : 1);
	struct site_row *row, *sites;

	if (at) {
		row = &r->sites[at - 1];
		if (row->line == f->line && !strcmp(row->path, f->path) &&
		    !strcmp(row->class_name, class_name)) {
			counts_add(&row->counts, c);
			return 0;
		}
	}
	sites = grow_array(r->sites, &r->sites_cap, r->nsites, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	r->sites = sites;
	row = &r->sites[r->nsites];
	row->class_name = strdup(class_name);
	if (!row->class_name)
		return -ENOMEM;
	row->path = f->path;
	row->line = f->line;
	row->counts = *c;
	r->nsites++;
	if (!at)
		u64map_put(&r->sites_by_key, key ? key : 1, (void *)(uintptr_t)r->nsites);
	return 0;
}

static int add_path(struct report *r, const char *class_name, const struct stack *st,
		    const struct counts *c)
{
	uint64_t key = hash_more(0xcbf29ce484222325ULL, class_name);
	struct stack_row *row, *rows;
	uintptr_t at;
	size_t i;

	for (i = 0; i < st->depth; i++)
		key = hash_int(hash_more(hash_more(key, st->frames[i].label), st->frames[i].path),
			       st->frames[i].line);
	key = hash_int(key, st->truncated);
	at = (uintptr_t)u64map_get(&r->stacks_by_key, key ? key : 1);
	if (at) {
		row = &r->stacks[at - 1];
		if (same_stack(row->stack, st) && !strcmp(row->class_name, class_name)) {
			counts_add(&row->counts, c);
			return 0;
		}
	}
	rows = grow_array(r->stacks, &r->stacks_cap, r->nstacks, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	r->stacks = rows;
	row = &r->stacks[r->nstacks];
	row->class_name = strdup(class_name);
	if (!row->class_name)
		return -ENOMEM;
	row->stack = st;
	row->counts = *c;
	r->nstacks++;
	if (!at)
		u64map_put(&r->stacks_by_key, key ? key : 1, (void *)(uintptr_t)r->nstacks);
	return 0;
}

int report_add_stack(struct report *r, const char *class_name, const struct stack *st,
		     const struct counts *c)
{
	size_t i;
	int err;

	if (!st || !st->depth)
		return 0;
	/* The site is the innermost Ruby frame: C methods allocate for their caller. */
	for (i = 0; i < st->depth; i++) {
		if (st->frames[i].line > 0) {
			err = add_site(r, class_name, &st->frames[i], c);
			if (err)
				return err;
			break;
		}
	}
	return add_path(r, class_name, st, c);
}

static int counts_cmp(const struct counts *x, const struct counts *y)
{
	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	if (x->allocated != y->allocated)
		return x->allocated > y->allocated ? -1 : 1;
	return 0;
}

static int site_cmp(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;
	int c = counts_cmp(&x->counts, &y->counts);

	if (c)
		return c;
	c = strcmp(x->path, y->path);
	return c ? c : x->line - y->line;
}

static int stack_cmp(const void *a, const void *b)
{
	const struct stack_row *x = a, *y = b;
	int c = counts_cmp(&x->counts, &y->counts);

	return c ? c : strcmp(x->class_name, y->class_name);
}

static int row_cmp(const void *a, const void *b)
{
	const struct class_row *x = a, *y = b;

	if (x->counts.retained != y->counts.retained)
		return x->counts.retained > y->counts.retained ? -1 : 1;
	if (x->counts.allocated != y->counts.allocated)
		return x->counts.allocated > y->counts.allocated ? -1 : 1;
	return strcmp(x->name, y->name);
}

void report_finish(struct report *r)
{
	size_t i;

	qsort(r->rows, r->nrows, sizeof(*r->rows), row_cmp);
	qsort(r->sites, r->nsites, sizeof(*r->sites), site_cmp);
	qsort(r->stacks, r->nstacks, sizeof(*r->stacks), stack_cmp);
	/* Row indexes changed: the indexes are no longer valid. */
	u64map_free(&r->by_name, NULL);
	u64map_free(&r->sites_by_key, NULL);
	u64map_free(&r->stacks_by_key, NULL);
	memset(&r->totals, 0, sizeof(r->totals));
	for (i = 0; i < r->nrows; i++)
		counts_add(&r->totals, &r->rows[i].counts);
}

static size_t shown_rows(size_t top, size_t n)
{
	return top && top < n ? top : n;
}

/* Root first, with the class as the leaf: the shape of the call tree and folded output. */
static size_t root_first_path(const struct stack_row *row, char (*names)[512], const char **path)
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

#define PATH_SLOTS (MAX_STACK_DEPTH + 2)

static bool scaled(const struct report *r)
{
	return r->sampling.on && r->sampling.scale > 0;
}

/* A traced count scaled up to the whole target, under sampling. */
static uint64_t estimate(const struct report *r, uint64_t traced)
{
	return (uint64_t)(traced * r->sampling.scale + 0.5);
}

static void write_stack_sections(FILE *out, const struct report *r, const struct text_options *o)
{
	char name[1024], cls[512], frame[1024];
	size_t i, j, shown;

	fprintf(out, "\nRetained by allocation site (innermost Ruby frame):\n");
	fprintf(out, "%10s %10s%s  %s\n", "RETAINED", "ALLOCATED",
		scaled(r) ? "  ~RETAINED" : "", "SITE  CLASS");
	shown = shown_rows(o->top, r->nsites);
	for (i = 0; i < shown; i++) {
		const struct site_row *s = &r->sites[i];

		fprintf(out, "%10" PRIu64 " %10" PRIu64, s->counts.retained, s->counts.allocated);
		if (scaled(r))
			fprintf(out, " %10" PRIu64, estimate(r, s->counts.retained));
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
		static char names[PATH_SLOTS][512];
		const char *path[PATH_SLOTS];
		struct ct_node *root = calltree_new("(all)");

		for (i = 0; root && i < r->nstacks; i++)
			calltree_add(root, path, root_first_path(&r->stacks[i], names, path),
				     r->stacks[i].counts.retained, r->stacks[i].counts.allocated);
		if (root) {
			/* A retention tree: subtrees that keep under 1% of it are folded. */
			calltree_sort_prune(root, o->prune,
					    o->prune ? (root->retained + 99) / 100 : 0);
			fprintf(out, "\n");
			calltree_print(out, root);
			calltree_free(root);
		}
	}
}

void report_write_folded(FILE *out, const struct report *r)
{
	static char names[PATH_SLOTS][512];
	const char *path[PATH_SLOTS];
	size_t i;

	for (i = 0; i < r->nstacks; i++)
		if (r->stacks[i].counts.retained)
			folded_write_line(out, path, root_first_path(&r->stacks[i], names, path),
					  r->stacks[i].counts.retained);
}

static void write_sampling_text(FILE *out, const struct report *r)
{
	const struct sampling_info *si = &r->sampling;

	fprintf(out, "Sampled (--max-overhead %.3g): allocation probes attached in %" PRIu64
		     " random windows, %.2f s of %.1f s; estimated cost to the target %.2f%%.\n",
		si->budget_percent, si->windows, si->window_time_s, r->duration_s,
		si->est_overhead * 100);
	if (scaled(r))
		fprintf(out, "Traced %" PRIu64 " of the %" PRIu64 " objects Ruby allocated (1 in %.1f): "
			     "counts are of traced objects, exact for them; ~ columns scale them up "
			     "to the whole process (--full counts everything).\n",
			si->traced, r->gc_allocated, si->scale);
	else
		fprintf(out, "Traced %" PRIu64 " allocations; Ruby's own allocation counter could "
			     "not be read, so no estimates.\n",
			si->traced);
}

void report_write_text(FILE *out, const struct report *r, const struct text_options *opts)
{
	char name[1024];
	size_t i, shown;
	size_t top = opts->top;

	fprintf(out, "rbmemtrace: PID %d, ruby %s, traced %.1f s (%s), %" PRIu64 " GC runs\n",
		r->pid, r->ruby_version, r->duration_s, r->end_reason, r->gc_runs);
	if (r->exit_status >= 0)
		fprintf(out, "Command exited with status %d.\n", r->exit_status);
	fprintf(out, "Counts are of objects allocated while tracing; retained = not freed by "
		     "Ruby's GC at the end%s.\n",
		r->target_exited ? " (as of the last GC check before the target exited)" : "");
	fprintf(out, "Totals: allocated %" PRIu64 ", freed %" PRIu64 ", retained %" PRIu64
		     ", untracked %" PRIu64 "\n",
		r->totals.allocated, r->totals.freed, r->totals.retained, r->totals.untracked);
	if (r->totals.untracked)
		fprintf(out, "WARNING: %" PRIu64 " objects were allocated after the live-object map "
			     "filled and are not tracked: raise --max-objects.\n",
			r->totals.untracked);
	if (r->compactions)
		fprintf(out, "WARNING: GC.compact ran %" PRIu64 " time(s) while tracing: %" PRIu64
			     " tracked objects moved and were followed, %" PRIu64
			     " left their slots and could not be followed (moved or freed; not "
			     "counted as freed or retained).\n",
			r->compactions, r->moved_followed, r->totals.not_followed);
	if (r->sampling.on)
		write_sampling_text(out, r);
	if (r->header_read_errors || r->class_overflow)
		fprintf(out, "WARNING: %" PRIu64 " allocations could not be read and %" PRIu64
			     " were not counted (class table full).\n",
			r->header_read_errors, r->class_overflow);

	fprintf(out, "\n%10s %10s %10s%s%s  %s\n", "RETAINED", "ALLOCATED", "FREED",
		r->totals.untracked ? "  UNTRACKED" : "",
		scaled(r) ? "  ~RETAINED ~ALLOCATED" : "", "CLASS");
	shown = top && top < r->nrows ? top : r->nrows;
	for (i = 0; i < shown; i++) {
		const struct counts *c = &r->rows[i].counts;

		fprintf(out, "%10" PRIu64 " %10" PRIu64 " %10" PRIu64, c->retained, c->allocated,
			c->freed);
		if (r->totals.untracked)
			fprintf(out, " %10" PRIu64, c->untracked);
		if (scaled(r))
			fprintf(out, " %10" PRIu64 " %10" PRIu64, estimate(r, c->retained),
				estimate(r, c->allocated));
		fprintf(out, "  %s\n", term_escape(r->rows[i].name, name, sizeof(name)));
	}
	if (shown < r->nrows)
		fprintf(out, "... %zu more classes (--top 0 shows all)\n", r->nrows - shown);
	if (r->with_stacks) {
		if (r->stacks_truncated || r->stacks_dropped || r->stack_errors)
			fprintf(out, "Stacks: %" PRIu64 " truncated at --depth, %" PRIu64
				     " not stored (stack map full: raise --max-stacks), %" PRIu64
				     " unreadable.\n",
				r->stacks_truncated, r->stacks_dropped, r->stack_errors);
		write_stack_sections(out, r, opts);
	}
}

static void write_counts_json(FILE *out, const struct counts *c)
{
	fprintf(out,
		"\"allocated\": %" PRIu64 ", \"freed\": %" PRIu64 ", \"retained\": %" PRIu64
		", \"untracked\": %" PRIu64 ", \"not_followed\": %" PRIu64,
		c->allocated, c->freed, c->retained, c->untracked, c->not_followed);
}

/* Under sampling: est_* are the traced counts scaled to the whole process. */
static void write_estimates_json(FILE *out, const struct report *r, const struct counts *c,
				 bool with_freed)
{
	if (!scaled(r))
		return;
	fprintf(out, ", \"est_allocated\": %" PRIu64 ", \"est_retained\": %" PRIu64,
		estimate(r, c->allocated), estimate(r, c->retained));
	if (with_freed)
		fprintf(out, ", \"est_freed\": %" PRIu64, estimate(r, c->freed));
}

void report_write_json(FILE *out, const struct report *r)
{
	size_t i;

	fprintf(out, "{\n  \"pid\": %d,\n  \"ruby_version\": ", r->pid);
	json_write_string(out, r->ruby_version);
	fprintf(out, ",\n  \"duration_s\": %.3f,\n  \"end_reason\": ", r->duration_s);
	json_write_string(out, r->end_reason);
	fprintf(out, ",\n  \"target_exited\": %s,\n", r->target_exited ? "true" : "false");
	if (r->exit_status >= 0)
		fprintf(out, "  \"exit_status\": %d,\n", r->exit_status);
	fprintf(out, "  \"gc_runs\": %" PRIu64 ",\n", r->gc_runs);
	fprintf(out,
		"  \"compaction\": {\"count\": %" PRIu64 ", \"followed\": %" PRIu64
		", \"not_followed\": %" PRIu64 "},\n",
		r->compactions, r->moved_followed, r->totals.not_followed);
	fprintf(out, "  \"dropped\": {\"header_read_errors\": %" PRIu64 ", \"class_overflow\": %" PRIu64
		     "},\n",
		r->header_read_errors, r->class_overflow);
	if (r->have_gc_counts)
		fprintf(out, "  \"gc_stat\": {\"total_allocated_objects\": %" PRIu64
			     ", \"total_freed_objects\": %" PRIu64 "},\n",
			r->gc_allocated, r->gc_freed);
	if (r->sampling.on) {
		const struct sampling_info *si = &r->sampling;

		fprintf(out,
			"  \"sampling\": {\"max_overhead_percent\": %.3g, \"windows\": %" PRIu64
			", \"window_s\": %.3f, \"estimated_overhead_percent\": %.3f, \"probe_hits\": %" PRIu64
			", \"traced\": %" PRIu64 ", \"fraction\": %.6f, \"scale\": %.3f},\n",
			si->budget_percent, si->windows, si->window_time_s, si->est_overhead * 100,
			si->probe_hits, si->traced, si->scale > 0 ? 1 / si->scale : 0, si->scale);
	} else {
		fprintf(out, "  \"sampling\": null,\n");
	}
	fprintf(out, "  \"totals\": {");
	write_counts_json(out, &r->totals);
	write_estimates_json(out, r, &r->totals, true);
	fprintf(out, "},\n  \"classes\": [");
	for (i = 0; i < r->nrows; i++) {
		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		json_write_string(out, r->rows[i].name);
		fprintf(out, ", ");
		write_counts_json(out, &r->rows[i].counts);
		write_estimates_json(out, r, &r->rows[i].counts, true);
		fputc('}', out);
	}
	fprintf(out, "%s]", r->nrows ? "\n  " : "");
	if (r->with_stacks) {
		fprintf(out, ",\n  \"stack_drops\": {\"truncated\": %" PRIu64 ", \"dropped\": %" PRIu64
			     ", \"errors\": %" PRIu64 "},\n  \"sites\": [",
			r->stacks_truncated, r->stacks_dropped, r->stack_errors);
		for (i = 0; i < r->nsites; i++) {
			const struct site_row *site = &r->sites[i];

			fprintf(out, "%s\n    {\"class\": ", i ? "," : "");
			json_write_string(out, site->class_name);
			fprintf(out, ", \"path\": ");
			json_write_string(out, site->path);
			fprintf(out, ", \"line\": %d, \"allocated\": %" PRIu64 ", \"retained\": %" PRIu64,
				site->line, site->counts.allocated, site->counts.retained);
			write_estimates_json(out, r, &site->counts, false);
			fputc('}', out);
		}
		fprintf(out, "%s],\n  \"stacks\": [", r->nsites ? "\n  " : "");
		for (i = 0; i < r->nstacks; i++) {
			const struct stack_row *row = &r->stacks[i];
			size_t j;

			fprintf(out, "%s\n    {\"class\": ", i ? "," : "");
			json_write_string(out, row->class_name);
			fprintf(out, ", \"allocated\": %" PRIu64 ", \"retained\": %" PRIu64,
				row->counts.allocated, row->counts.retained);
			write_estimates_json(out, r, &row->counts, false);
			fprintf(out, ", \"truncated\": %s, \"frames\": [",
				row->stack->truncated ? "true" : "false");
			for (j = 0; j < row->stack->depth; j++) {
				const struct frame *f = &row->stack->frames[j];

				fprintf(out, "%s{\"label\": ", j ? ", " : "");
				json_write_string(out, f->label);
				fprintf(out, ", \"path\": ");
				json_write_string(out, f->path);
				fprintf(out, ", \"line\": %d}", f->line);
			}
			fprintf(out, "]}");
		}
		fprintf(out, "%s]", r->nstacks ? "\n  " : "");
	}
	fprintf(out, "\n}\n");
}

void report_free(struct report *r)
{
	size_t i;

	for (i = 0; i < r->nrows; i++)
		free(r->rows[i].name);
	free(r->rows);
	u64map_free(&r->by_name, NULL);
	for (i = 0; i < r->nsites; i++)
		free(r->sites[i].class_name);
	free(r->sites);
	u64map_free(&r->sites_by_key, NULL);
	for (i = 0; i < r->nstacks; i++)
		free(r->stacks[i].class_name);
	free(r->stacks);
	u64map_free(&r->stacks_by_key, NULL);
	r->sites = NULL;
	r->stacks = NULL;
	r->nsites = r->nstacks = 0;
	r->rows = NULL;
	r->nrows = r->cap = 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
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
	/* Row indexes changed: the name index is no longer valid. */
	u64map_free(&r->by_name, NULL);
	memset(&r->totals, 0, sizeof(r->totals));
	for (i = 0; i < r->nrows; i++)
		counts_add(&r->totals, &r->rows[i].counts);
}

void report_write_text(FILE *out, const struct report *r, size_t top)
{
	char name[1024];
	size_t i, shown;

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
	if (r->header_read_errors || r->class_overflow)
		fprintf(out, "WARNING: %" PRIu64 " allocations could not be read and %" PRIu64
			     " were not counted (class table full).\n",
			r->header_read_errors, r->class_overflow);

	fprintf(out, "\n%10s %10s %10s%s  %s\n", "RETAINED", "ALLOCATED", "FREED",
		r->totals.untracked ? "  UNTRACKED" : "", "CLASS");
	shown = top && top < r->nrows ? top : r->nrows;
	for (i = 0; i < shown; i++) {
		const struct counts *c = &r->rows[i].counts;

		fprintf(out, "%10" PRIu64 " %10" PRIu64 " %10" PRIu64, c->retained, c->allocated,
			c->freed);
		if (r->totals.untracked)
			fprintf(out, " %10" PRIu64, c->untracked);
		fprintf(out, "  %s\n", term_escape(r->rows[i].name, name, sizeof(name)));
	}
	if (shown < r->nrows)
		fprintf(out, "... %zu more classes (--top 0 shows all)\n", r->nrows - shown);
}

static void write_counts_json(FILE *out, const struct counts *c)
{
	fprintf(out,
		"\"allocated\": %" PRIu64 ", \"freed\": %" PRIu64 ", \"retained\": %" PRIu64
		", \"untracked\": %" PRIu64 ", \"not_followed\": %" PRIu64,
		c->allocated, c->freed, c->retained, c->untracked, c->not_followed);
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
	fprintf(out, "  \"totals\": {");
	write_counts_json(out, &r->totals);
	fprintf(out, "},\n  \"classes\": [");
	for (i = 0; i < r->nrows; i++) {
		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		json_write_string(out, r->rows[i].name);
		fprintf(out, ", ");
		write_counts_json(out, &r->rows[i].counts);
		fputc('}', out);
	}
	fprintf(out, "%s]\n}\n", r->nrows ? "\n  " : "");
}

void report_free(struct report *r)
{
	size_t i;

	for (i = 0; i < r->nrows; i++)
		free(r->rows[i].name);
	free(r->rows);
	u64map_free(&r->by_name, NULL);
	r->rows = NULL;
	r->nrows = r->cap = 0;
}

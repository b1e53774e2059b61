// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The heap census report (rbmemtrace census): what the heap holds, by class. */
#include <inttypes.h>
#include "classnames.h"
#include "escape.h"
#include "writers.h"

static void write_heap_text(FILE *out, const struct heap_info *h)
{
	fprintf(out, "Heap: %" PRIu64 " slots in %" PRIu64 " pages: %" PRIu64 " live (%.1f MB), %" PRIu64
		     " free, %" PRIu64 " garbage (dead, not yet swept).\n",
		h->slots, h->pages, h->live, h->bytes / 1e6, h->free, h->garbage);
	if (h->marking)
		fprintf(out, "NOTE: taken during incremental marking: %" PRIu64 " unmarked objects on "
			     "unswept pages could not be judged and count as live.\n",
			h->unjudged);
	if (h->gc_ran)
		fprintf(out, "NOTE: a GC ran while the heap was read: counts may be off by what it "
			     "freed meanwhile.\n");
}

void report_write_census_text(FILE *out, const struct report *r, size_t top)
{
	char name[1024];
	size_t i, shown = top && top < r->nrows ? top : r->nrows;

	fprintf(out, "rbmemtrace census: PID %d, ruby %s, GC count %" PRIu64 ", read in %.1f ms\n",
		r->pid, r->ruby_version, r->heap_end.gc_count, r->heap_end.seconds * 1e3);
	report_write_layout_text(out, &r->layout);
	write_heap_text(out, &r->heap_end);
	fprintf(out, "Bytes: the slot plus the heap memory strings, arrays, hashes, objects' ivars, "
		     "bignums and structs own (as ObjectSpace.memsize_of).\n");
	fprintf(out, "\n%10s %12s %10s %10s  %s\n", "LIVE", "BYTES", "OLD", "GARBAGE", "CLASS");
	for (i = 0; i < shown; i++) {
		const struct census_counts *c = &r->rows[i].census;

		fprintf(out, "%10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %10" PRIu64 "  %s\n",
			c->live_end, c->bytes_end, c->old_end, c->garbage_end,
			term_escape(r->rows[i].name, name, sizeof(name)));
	}
	if (shown < r->nrows)
		fprintf(out, "... %zu more classes (--top 0 shows all)\n", r->nrows - shown);
}

/* Per builtin type, named as ObjectSpace.count_objects names them. */
static void write_types_json(FILE *out, const char *key, const uint64_t *types)
{
	bool first = true;
	int t;

	fprintf(out, "  \"%s\": {", key);
	for (t = 0; t < 32; t++) {
		if (!types[t])
			continue;
		fprintf(out, "%s\"%s\": %" PRIu64, first ? "" : ", ", ruby_type_name(t), types[t]);
		first = false;
	}
	fprintf(out, "},\n");
}

void report_write_census_json(FILE *out, const struct report *r)
{
	const struct heap_info *h = &r->heap_end;
	size_t i;

	fprintf(out, "{\n  \"pid\": %d,\n  \"ruby_version\": ", r->pid);
	json_write_string(out, r->ruby_version);
	fprintf(out, ",\n");
	report_write_layout_json(out, "", &r->layout);
	fprintf(out,
		"  \"heap\": {\"slots\": %" PRIu64 ", \"live\": %" PRIu64 ", \"free\": %" PRIu64
		", \"garbage\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"pages\": %" PRIu64
		", \"marking\": %s, \"unjudged\": %" PRIu64 ", \"sweeping\": %s, \"gc_ran\": %s"
		", \"gc_count\": %" PRIu64 ", \"seconds\": %.6f},\n",
		h->slots, h->live, h->free, h->garbage, h->bytes, h->pages,
		h->marking ? "true" : "false", h->unjudged, h->sweeping ? "true" : "false",
		h->gc_ran ? "true" : "false", h->gc_count, h->seconds);
	write_types_json(out, "types", h->types);
	write_types_json(out, "garbage_types", h->garbage_types);
	fprintf(out, "  \"classes\": [");
	for (i = 0; i < r->nrows; i++) {
		const struct census_counts *c = &r->rows[i].census;

		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		json_write_string(out, r->rows[i].name);
		fprintf(out,
			", \"live\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"old\": %" PRIu64
			", \"garbage\": %" PRIu64 "}",
			c->live_end, c->bytes_end, c->old_end, c->garbage_end);
	}
	fprintf(out, "%s]\n}\n", r->nrows ? "\n  " : "");
}

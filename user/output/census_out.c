// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The heap census report (rbmemtrace census): what the heap holds, by class. */
#include <inttypes.h>
#include "classnames.h"
#include "escape.h"
#include "json_writer.h"
#include "writers.h"

static void write_heap_text(FILE *out, const struct heap_info *h)
{
	fprintf(out,
		"Heap: %" PRIu64 " slots in %" PRIu64 " pages: %" PRIu64 " live (%.1f MB), %" PRIu64
		" free, %" PRIu64 " garbage (dead, not yet swept).\n",
		h->slots, h->pages, h->live, h->bytes / 1e6, h->free, h->garbage);
	if (h->marking)
		fprintf(out,
			"NOTE: taken during incremental marking: %" PRIu64 " unmarked objects on "
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
	report_write_layout_text(out, "", &r->layout);
	write_heap_text(out, &r->heap_end);
	report_write_caps_text(out, "", &r->caps);
	fprintf(out,
		"Bytes: the slot plus the heap memory strings, arrays, hashes, objects' ivars, "
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
static void write_types(struct jw *w, const char *key, const uint64_t *types)
{
	int t;

	jw_object(w, key, JW_INLINE);
	for (t = 0; t < 32; t++)
		if (types[t])
			jw_u64(w, ruby_type_name(t), types[t]);
	jw_end(w);
}

void report_write_census_json(FILE *out, const struct report *r)
{
	const struct heap_info *h = &r->heap_end;
	struct jw w;
	size_t i;

	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_LINES);
	jw_int(&w, JK(pid), r->pid);
	jw_string(&w, JK(ruby_version), r->ruby_version);
	report_write_layout_json(&w, &r->layout);
	jw_object(&w, JK(heap), JW_INLINE);
	jw_u64(&w, JK(slots), h->slots);
	jw_u64(&w, JK(live), h->live);
	jw_u64(&w, JK(free), h->free);
	jw_u64(&w, JK(garbage), h->garbage);
	jw_u64(&w, JK(bytes), h->bytes);
	jw_u64(&w, JK(pages), h->pages);
	jw_bool(&w, JK(marking), h->marking);
	jw_u64(&w, JK(unjudged), h->unjudged);
	jw_bool(&w, JK(sweeping), h->sweeping);
	jw_bool(&w, JK(gc_ran), h->gc_ran);
	jw_u64(&w, JK(gc_count), h->gc_count);
	jw_double(&w, JK(seconds), "%.6f", h->seconds);
	jw_end(&w);
	write_types(&w, JK(types), h->types);
	write_types(&w, JK(garbage_types), h->garbage_types);
	report_write_caps_json(&w, &r->caps);
	jw_array(&w, JK(classes), JW_LINES);
	for (i = 0; i < r->nrows; i++) {
		const struct census_counts *c = &r->rows[i].census;

		jw_object(&w, NULL, JW_INLINE);
		jw_string(&w, JK(name), r->rows[i].name);
		jw_u64(&w, JK(live), c->live_end);
		jw_u64(&w, JK(bytes), c->bytes_end);
		jw_u64(&w, JK(old), c->old_end);
		jw_u64(&w, JK(garbage), c->garbage_end);
		jw_end(&w);
	}
	jw_end(&w);
	jw_end(&w);
	fputc('\n', out);
}

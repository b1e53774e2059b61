// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The leak verdict (model/verdict.h), as text leading the report and as JSON members. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "escape.h"
#include "json_keys.h"
#include "json_writer.h"
#include "writers.h"

/* 1234567 as "1,234,567". */
static const char *commas(uint64_t n, char *buf, size_t len)
{
	char digits[32];
	size_t nd = (size_t) snprintf(digits, sizeof(digits), "%" PRIu64, n), i, at = 0;

	for (i = 0; i < nd && at + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[at++] = ',';
		buf[at++] = digits[i];
	}
	buf[at] = '\0';
	return buf;
}

static const char *human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 10ull << 20)
		snprintf(buf, len, "%.0f MB", b / 1048576.0);
	else if (b >= 1ull << 20)
		snprintf(buf, len, "%.1f MB", b / 1048576.0);
	else if (b >= 10ull << 10)
		snprintf(buf, len, "%.0f KB", b / 1024.0);
	else
		snprintf(buf, len, "%.1f KB", b / 1024.0);
	return buf;
}

/* "PostsController::SUMMARIES" or "App::SERVICE @records": the root and the last step. */
static void point_title(const struct verdict_point *p, char *buf, size_t n)
{
	char e1[512], e2[256];

	if (!p->root_kind) { /* its path was not read again (below) */
		snprintf(buf, n, "(a holder whose path moved)");
		return;
	}
	snprintf(buf, n, "%s%s%s", term_escape(p->root_name ? p->root_name : "?", e1, sizeof(e1)),
		 p->nedges ? " " : "",
		 p->nedges ? term_escape(p->edges[p->nedges - 1].via, e2, sizeof(e2)) : "");
}

static void point_path(FILE *out, const struct verdict_point *p)
{
	char e[512];
	size_t i;

	if (!p->root_kind) {
		fprintf(out, "      no path from a root: what held it changed before it was read "
			     "again (read the verdict again)\n");
		return;
	}
	fprintf(out, "      %s %s", p->root_kind ? p->root_kind : "?",
		term_escape(p->root_name ? p->root_name : "?", e, sizeof(e)));
	for (i = 0; i < p->nedges; i++) {
		fprintf(out, " > %s", term_escape(p->edges[i].via, e, sizeof(e)));
		fprintf(out, " %s", term_escape(p->edges[i].class_name, e, sizeof(e)));
		if (p->edges_cut && i + 1 == p->nedges / 2)
			fprintf(out, " > ...");
	}
	fputc('\n', out);
}

/* The lines that added entries, when the container was watched (--watch). */
static void point_insertions(FILE *out, const struct verdict_insertions *ins)
{
	char path[512], label[256], a[32], b[32], why[256];
	size_t i;

	if (!ins->source) {
		if (ins->ended)
			fprintf(out, "      entries added: not watched (%s)\n",
				term_escape(ins->ended, why, sizeof(why)));
		return;
	}
	if (!ins->nsites)
		fprintf(out, "      no entry added while watched (%.1f s)\n", ins->seconds);
	for (i = 0; i < ins->nsites; i++) {
		fprintf(out, "      %s %s:%d in %s", i ? "and at" : "entries added at",
			term_escape(ins->sites[i].path, path, sizeof(path)), ins->sites[i].line,
			term_escape(ins->sites[i].label, label, sizeof(label)));
		if (i)
			fprintf(out, " (%s)\n", commas(ins->sites[i].count, a, sizeof(a)));
		else
			fprintf(out, " (watched %.1f s: %s of %s insertions)\n", ins->seconds,
				commas(ins->sites[i].count, a, sizeof(a)),
				commas(ins->count, b, sizeof(b)));
	}
	if (ins->missed)
		fprintf(out, "      (%s insertions without a readable call path)\n",
			commas(ins->missed, a, sizeof(a)));
	if (ins->ended)
		fprintf(out, "      (the watch ended early: %s)\n",
			term_escape(ins->ended, why, sizeof(why)));
	if (ins->note)
		fprintf(out, "      (no breakpoint: %s)\n", term_escape(ins->note, why, sizeof(why)));
}

static void write_point(FILE *out, const struct verdict_point *p, size_t rank, double seconds,
			bool at_exit)
{
	char title[1024], cls[256], a[32], b[32], bytes[32], kept[32];
	size_t i;

	point_title(p, title, sizeof(title));
	fprintf(out, "%2zu. %s  %s", rank + 1, title,
		term_escape(p->container_class ? p->container_class : "?", cls, sizeof(cls)));
	if (p->size_before >= 0 && p->size_after >= 0)
		fprintf(out, " %s -> %s entries", commas((uint64_t) p->size_before, a, sizeof(a)),
			commas((uint64_t) p->size_after, b, sizeof(b)));
	if (at_exit)
		fprintf(out, " at the exit\n      gathered %s objects (",
			commas((uint64_t) p->grew_objects, a, sizeof(a)));
	else
		fprintf(out, " over %.1f s\n      grew by %s objects (", seconds,
			commas((uint64_t) p->grew_objects, a, sizeof(a)));
	for (i = 0; i < p->nby_class && i < 3; i++)
		fprintf(out, "%s%s %s", i ? ", " : "",
			term_escape(p->by_class[i].class_name, cls, sizeof(cls)),
			commas(p->by_class[i].objects, b, sizeof(b)));
	fprintf(out, "%s), %s; keeps %s alive\n", p->nby_class > 3 ? ", ..." : "",
		human_bytes((uint64_t) p->grew_bytes, bytes, sizeof(bytes)),
		human_bytes(p->dominated_bytes, kept, sizeof(kept)));
	point_path(out, p);
	point_insertions(out, &p->ins);
	for (i = 0; i < p->nsites; i++)
		fprintf(out, "      %s allocated at %s:%d (%" PRIu64 " traced)\n",
			term_escape(p->sites[i].class_name, cls, sizeof(cls)),
			term_escape(p->sites[i].path, title, sizeof(title)), p->sites[i].line,
			p->sites[i].traced);
}

void verdict_write_text(FILE *out, const struct verdict *v, double seconds)
{
	char a[32], b[32];
	size_t i;

	if (!v)
		return;
	if (v->trace_seconds > 0) /* between its two walks: a period's, not the trace's */
		seconds = v->trace_seconds;
	if (v->none) {
		char e[768];

		fprintf(out, "\nLeak verdict: none (%s).\n", term_escape(v->none, e, sizeof(e)));
		return;
	}
	if (!v->n) {
		fprintf(out, "\nLeak verdict (read from the heap, exact): no old object keeps more "
			     "alive than at the start (%s new objects, none gathered).\n",
			commas(v->new_objects, a, sizeof(a)));
		return;
	}
	fprintf(out, "\nLeak verdict %s(read from the heap, exact):\n",
		v->at_exit ? "at the exit: what holds the objects the program made " : "");
	for (i = 0; i < v->n; i++)
		write_point(out, &v->points[i], i, seconds, v->at_exit);
	fprintf(out, "    (%s new objects alive at the end; %s of them held by no old object "
		     "of their own%s%s%s)\n",
		commas(v->new_objects, a, sizeof(a)), commas(v->unattributed, b, sizeof(b)),
		v->vm_lists_grew ? "; the VM's own lists gained a few, as code first ran" : "",
		v->small_points ? "; smaller growth left out as noise" : "",
		v->compacted ? "; a compaction ran between the walks: a container that moved is "
			       "not compared"
			     : "");
}

static void write_holder_json(struct jw *w, const struct verdict_point *p)
{
	size_t i;

	jw_object(w, JK(holder), JW_INLINE);
	jw_object(w, JK(root), JW_INLINE);
	jw_string(w, JK(kind), p->root_kind ? p->root_kind : "");
	jw_string(w, JK(name), p->root_name ? p->root_name : "");
	jw_end(w);
	jw_array(w, JK(edges), JW_INLINE);
	for (i = 0; i < p->nedges; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(via), p->edges[i].via);
		jw_string(w, JK(class), p->edges[i].class_name);
		jw_end(w);
	}
	jw_end(w);
	if (p->edges_cut)
		jw_bool(w, JK(edges_cut), true);
	jw_end(w);
}

static void write_grew_json(struct jw *w, const struct verdict_point *p)
{
	size_t i;

	jw_object(w, JK(grew), JW_INLINE);
	jw_i64(w, JK(objects), p->grew_objects);
	jw_i64(w, JK(bytes), p->grew_bytes);
	jw_u64(w, JK(new_objects), p->new_objects);
	jw_u64(w, JK(new_bytes), p->new_bytes);
	jw_array(w, JK(by_class), JW_INLINE);
	for (i = 0; i < p->nby_class; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(class), p->by_class[i].class_name);
		jw_u64(w, JK(objects), p->by_class[i].objects);
		jw_u64(w, JK(bytes), p->by_class[i].bytes);
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
}

static void write_insert_paths_json(struct jw *w, const struct verdict_insertions *ins)
{
	size_t i, j;

	jw_array(w, JK(paths), JW_INLINE);
	for (i = 0; i < ins->npaths; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_array(w, JK(frames), JW_INLINE);
		for (j = 0; j < ins->paths[i].nframes; j++) {
			jw_object(w, NULL, JW_INLINE);
			jw_string(w, JK(label), ins->paths[i].frames[j].label);
			jw_string(w, JK(path), ins->paths[i].frames[j].path);
			jw_int(w, JK(line), ins->paths[i].frames[j].line);
			jw_end(w);
		}
		jw_end(w);
		jw_bool(w, JK(truncated), ins->paths[i].cut);
		jw_u64(w, JK(count), ins->paths[i].count);
		jw_end(w);
	}
	jw_end(w);
}

/* The lines that added entries: "none" when the container was not watched. */
static void write_insertions_json(struct jw *w, const struct verdict_insertions *ins)
{
	size_t i;

	jw_object(w, JK(insertions), JW_INLINE);
	jw_string(w, JK(source), ins->source ? ins->source : "none");
	if (ins->source) {
		jw_string(w, JK(form), ins->form);
		jw_double(w, JK(seconds), "%.3f", ins->seconds);
		jw_u64(w, JK(count), ins->count);
		jw_u64(w, JK(missed), ins->missed);
		jw_u64(w, JK(moves), ins->moves);
		jw_int(w, JK(size_before), ins->size_before);
		jw_int(w, JK(size_after), ins->size_after);
	}
	if (ins->ended)
		jw_string(w, JK(ended), ins->ended);
	if (ins->note)
		jw_string(w, JK(note), ins->note);
	jw_array(w, JK(sites), JW_INLINE);
	for (i = 0; i < ins->nsites; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(path), ins->sites[i].path);
		jw_int(w, JK(line), ins->sites[i].line);
		jw_string(w, JK(label), ins->sites[i].label);
		jw_u64(w, JK(count), ins->sites[i].count);
		jw_end(w);
	}
	jw_end(w);
	write_insert_paths_json(w, ins);
	jw_end(w);
}

/* Where the grown objects came from: insertions (when watched) and the traced allocations. */
static void write_sources_json(struct jw *w, const struct verdict_point *p)
{
	size_t i;

	write_insertions_json(w, &p->ins);
	jw_array(w, JK(alloc_sites), JW_INLINE);
	for (i = 0; i < p->nsites; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(class), p->sites[i].class_name);
		jw_string(w, JK(path), p->sites[i].path);
		jw_int(w, JK(line), p->sites[i].line);
		jw_u64(w, JK(traced), p->sites[i].traced);
		jw_end(w);
	}
	jw_end(w);
}

static void write_point_json(struct jw *w, const struct verdict_point *p)
{
	jw_object(w, NULL, JW_LINES);
	write_holder_json(w, p);
	jw_object(w, JK(container), JW_INLINE);
	jw_string(w, JK(class), p->container_class ? p->container_class : "");
	if (p->size_before >= 0)
		jw_i64(w, JK(size_before), p->size_before);
	if (p->size_after >= 0)
		jw_i64(w, JK(size_after), p->size_after);
	jw_end(w);
	write_grew_json(w, p);
	jw_u64(w, JK(dominated_bytes), p->dominated_bytes);
	jw_u64(w, JK(dominated_objects), p->dominated_objects);
	write_sources_json(w, p);
	jw_end(w);
}

void verdict_write_json(struct jw *w, const struct verdict *v)
{
	size_t i;

	if (!v)
		return;
	jw_array(w, JK(verdict), JW_LINES);
	for (i = 0; i < v->n; i++)
		write_point_json(w, &v->points[i]);
	jw_end(w);
	jw_object(w, JK(verdict_walk), JW_INLINE);
	if (v->none)
		jw_string(w, JK(none), v->none);
	jw_double(w, JK(seconds), "%.3f", v->seconds);
	jw_u64(w, JK(tracer_bytes), v->tracer_bytes);
	jw_u64(w, JK(new_objects), v->new_objects);
	jw_u64(w, JK(unattributed), v->unattributed);
	jw_bool(w, JK(compacted), v->compacted);
	jw_u64(w, JK(vm_lists_grew), v->vm_lists_grew);
	jw_u64(w, JK(small_points), v->small_points);
	if (v->at_exit)
		jw_bool(w, JK(at_exit), true);
	jw_end(w);
}

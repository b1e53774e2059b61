// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A `why` report written out: text (for each class, its paths as a tree by
 * root: the root, then each step down to the class, shared steps printed
 * once, each holder with what it keeps alive when known), JSON (docs/json.md,
 * "why"), and folded chains (root first) for a
 * flame graph.  Names read from the target (classes, constants, ivars) are
 * escaped for the terminal; nothing the program stored (a hash key, a
 * string's bytes) is ever printed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "escape.h"
#include "json_writer.h"
#include "why_out.h"
#include "writers.h"

#define NAME 2048

static const char *esc(const char *s, char *buf, size_t n)
{
	return term_escape(s ? s : "", buf, n);
}

static void human_bytes(uint64_t b, char *buf, size_t n)
{
	if (b >= 10ull << 20)
		snprintf(buf, n, "%.1f MB", b / 1048576.0);
	else if (b >= 10ull << 10)
		snprintf(buf, n, "%.1f KB", b / 1024.0);
	else
		snprintf(buf, n, "%" PRIu64 " B", b);
}

static void site_text(const struct why_site *s, char *buf, size_t n)
{
	char p[NAME];

	if (s->path)
		snprintf(buf, n, ", allocated at %s:%d", esc(s->path, p, sizeof(p)), s->line);
	else
		buf[0] = '\0';
}

/* " (keeps 1.2 MB)": what a holder keeps alive (why_model.h), or nothing if not known. */
static void keeps_text(uint64_t dominated, char *buf, size_t n)
{
	char b[32];

	if (!dominated) {
		buf[0] = '\0';
		return;
	}
	human_bytes(dominated, b, sizeof(b));
	snprintf(buf, n, " (keeps %s)", b);
}

/* Steps a path shares with the one printed before it: printed once, as a tree. */
static size_t shared_steps(const struct why_path *a, const struct why_path *b)
{
	size_t i;

	if (!a || a->root_name != b->root_name || a->root_kind != b->root_kind ||
	    a->root_class != b->root_class)
		return 0;
	for (i = 0; i < a->nedges && i < b->nedges; i++)
		if (a->edges[i].via != b->edges[i].via ||
		    a->edges[i].class_name != b->edges[i].class_name)
			break;
	return i + 1; /* the root line, then i edges */
}

/* A path after its count: its root (or "(as above)"), then the steps prev does not share. */
static void write_path_text(FILE *out, const struct why_path *p, const struct why_path *prev)
{
	char a[NAME], b[NAME], c[NAME], keeps[48];
	size_t same = shared_steps(prev, p), j;

	if (same) {
		fprintf(out, "  %*s(as above)\n", (int) (2 * same - 2), "");
	} else {
		site_text(&p->root_site, c, sizeof(c));
		keeps_text(p->root_dominated_bytes, keeps, sizeof(keeps));
		fprintf(out, "  %s %s  %s%s%s\n", p->root_kind, esc(p->root_name, a, sizeof(a)),
			esc(p->root_class, b, sizeof(b)), keeps, c);
		same = 1;
	}
	for (j = same - 1; j < p->nedges; j++) {
		const struct why_edge *e = &p->edges[j];

		site_text(j + 1 == p->nedges ? &p->site : &e->site, c, sizeof(c));
		/* holders only: the held objects are what the path counts */
		keeps_text(j + 1 == p->nedges ? 0 : e->dominated_bytes, keeps, sizeof(keeps));
		fprintf(out, "  %16s  %*s%s  %s%s%s\n", "", (int) (2 * j + 2), "",
			esc(e->via, a, sizeof(a)), esc(e->class_name, b, sizeof(b)), keeps, c);
	}
}

static void write_target_text(FILE *out, const struct why_target *t, size_t max_paths)
{
	char a[NAME], c[NAME], bytes[32];
	const struct why_path *prev = NULL;
	uint64_t shown = 0;
	size_t i;

	human_bytes(t->bytes, bytes, sizeof(bytes));
	site_text(&t->site, c, sizeof(c));
	fprintf(out, "\n%s: %" PRIu64 " live, %s%s\n", esc(t->class_name, a, sizeof(a)), t->count,
		bytes, c);
	for (i = 0; i < t->npaths && (!max_paths || i < max_paths); i++) {
		const struct why_path *p = &t->paths[i];

		shown += p->count;
		fprintf(out, "  %8" PRIu64 " %5.1f%%", p->count,
			t->count ? 100.0 * p->count / t->count : 0);
		write_path_text(out, p, prev);
		prev = p;
	}
	if (i < t->npaths)
		fprintf(out, "  %8" PRIu64 " %5.1f%%  on %zu other paths (--paths 0 shows all)\n",
			t->count - t->unexplained - t->dropped - shown,
			t->count
			    ? 100.0 * (t->count - t->unexplained - t->dropped - shown) / t->count
			    : 0,
			t->npaths - i);
	if (t->unexplained > t->unexplained_young)
		fprintf(out, "  %8" PRIu64 " %5.1f%%  unexplained: no root walked reaches them\n",
			t->unexplained - t->unexplained_young,
			t->count ? 100.0 * (t->unexplained - t->unexplained_young) / t->count : 0);
	if (t->unexplained_young)
		fprintf(out,
			"  %8" PRIu64 " %5.1f%%  unexplained and allocated since the last GC: "
			"probably garbage\n",
			t->unexplained_young,
			t->count ? 100.0 * t->unexplained_young / t->count : 0);
	if (t->dropped)
		fprintf(out, "  %8" PRIu64 " %5.1f%%  path no longer held when re-read (dropped)\n",
			t->dropped, t->count ? 100.0 * t->dropped / t->count : 0);
}

/* 174762 -> "174,762" */
static void thousands(uint64_t v, char *buf, size_t n)
{
	char digits[32];
	size_t len, i, at = 0;

	len = (size_t) snprintf(digits, sizeof(digits), "%" PRIu64, v);
	for (i = 0; i < len && at + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[at++] = ',';
		buf[at++] = digits[i];
	}
	buf[at] = '\0';
}

/* The heap's unexplained objects by what heads them. */
static void write_groups_text(FILE *out, const struct why_report *r)
{
	const struct why_unexplained *u = &r->unexplained;
	uint64_t shown = 0;
	char buf[NAME];
	size_t i;

	if (!u->in_heap)
		return;
	fprintf(out,
		"\nThe heap's unexplained objects: %" PRIu64 " of %" PRIu64
		" live (%.1f%%; %.1f%% without the %" PRIu64
		" allocated since the last GC), by the kind of their topmost unreached holder:\n",
		u->in_heap, r->walk.objects,
		r->walk.objects ? 100.0 * u->in_heap / r->walk.objects : 0,
		r->walk.objects ? 100.0 * (u->in_heap - u->in_heap_young) / r->walk.objects : 0,
		u->in_heap_young);
	for (i = 0; i < u->ngroups; i++) {
		const struct why_group *g = &u->groups[i];

		shown += g->objects;
		fprintf(out, "  %8" PRIu64 "  under %" PRIu64 " %s: %s", g->objects, g->heads,
			esc(g->head, buf, sizeof(buf)), g->cause);
		if (g->young)
			fprintf(out, " (%" PRIu64 " allocated since the last GC)", g->young);
		fprintf(out, "\n");
	}
	if (u->in_heap > shown)
		fprintf(out, "  %8" PRIu64 "  in other groups\n", u->in_heap - shown);
}

/*
 * "constant App::SUMMARIES  Hash: 174,762 of 200,000 entries read (the
 * table changed between its chunks)": a container read in part, by its
 * holder path.
 */
static void write_part_text(FILE *out, const struct why_part *p)
{
	char a[NAME], b[NAME], read[32], total[32];
	size_t i;

	if (p->root_kind) {
		fprintf(out, "  %s %s  %s", p->root_kind, esc(p->root_name, a, sizeof(a)),
			esc(p->root_class, b, sizeof(b)));
		for (i = 0; i < p->nedges; i++)
			fprintf(out, " > %s %s", esc(p->edges[i].via, a, sizeof(a)),
				esc(p->edges[i].class_name, b, sizeof(b)));
	} else {
		fprintf(out, "  a %s no root walked reaches", esc(p->class_name, a, sizeof(a)));
	}
	thousands(p->read, read, sizeof(read));
	thousands(p->total, total, sizeof(total));
	if (!p->total)
		fprintf(out, ": its %s not read (%s)\n", p->table, p->reason);
	else
		fprintf(out, ": %s of %s %s read (%s)\n", read, total, p->table, p->reason);
}

void why_write_text(FILE *out, const struct why_report *r, size_t max_paths)
{
	const struct why_walk *w = &r->walk;
	char cmd[NAME], bytes[32];
	size_t i;

	if (r->merged)
		fprintf(out, "rbmemtrace why: %u reports merged", r->merged);
	else
		fprintf(out, "rbmemtrace why: PID %d%s%s, ruby %s", (int) r->pid,
			r->command[0] ? " " : "", esc(r->command, cmd, sizeof(cmd)),
			r->ruby_version);
	human_bytes(w->tracer_bytes, bytes, sizeof(bytes));
	fprintf(out,
		"; walked %" PRIu64 " objects, %" PRIu64 " references from %" PRIu64
		" roots in %.2f s (%s of graph)",
		w->objects, w->edges, w->roots, w->seconds, bytes);
	if (w->frozen)
		fprintf(out, ", target stopped for %.1f ms\n", w->paused_ms);
	else
		fprintf(out, ", target not stopped%s\n", w->gc_ran ? " (a GC ran meanwhile)" : "");
	fprintf(out,
		"Every path was read again after the walk: %" PRIu64 " re-read, %" PRIu64
		" no longer held (dropped).\n",
		w->rechecked, w->dropped);
	if (w->conservative_roots)
		fprintf(out,
			"Machine stacks and saved registers, read conservatively: %" PRIu64
			" words are live objects (roots \"stack of thread N (conservative)\"), %" PRIu64
			" objects reached only through them.\n",
			w->conservative_roots, w->conservative_only);
	if (r->verdict)
		verdict_write_text(out, r->verdict, r->verdict->trace_seconds);
	if (!r->ntargets)
		fprintf(out, "\nNo live object was selected.\n");
	for (i = 0; i < r->ntargets; i++)
		write_target_text(out, &r->targets[i], max_paths);
	if (r->nparts)
		fprintf(out, "\nRead in part: what the rest of %s holds was not walked%s:\n",
			r->nparts == 1 ? "this container" : "these containers",
			r->unexplained.objects > r->unexplained.young
			    ? ", and may be among the unexplained"
			    : "");
	for (i = 0; i < r->nparts; i++)
		write_part_text(out, &r->parts[i]);
	if (r->unexplained.objects > r->unexplained.young) {
		fprintf(out, "\nNot walked, and could hold the %" PRIu64 " unexplained objects:",
			r->unexplained.objects - r->unexplained.young);
		for (i = 0; i < r->unexplained.nnot_walked; i++)
			fprintf(out, "%s %s", i ? ";" : "", r->unexplained.not_walked[i]);
		fprintf(out, ".\n");
	}
	write_groups_text(out, r);
	report_write_caps_text(out, "\n", &r->caps);
}

/* ---- JSON ---- */

static void site_json(struct jw *w, const struct why_site *s)
{
	if (!s->path)
		return;
	jw_object(w, JK(site), JW_INLINE);
	jw_string(w, JK(path), s->path);
	jw_int(w, JK(line), s->line);
	jw_end(w);
}

static void path_json(struct jw *w, const struct why_path *p)
{
	size_t i;

	jw_object(w, NULL, JW_INLINE);
	jw_object(w, JK(root), JW_INLINE);
	jw_string(w, JK(kind), p->root_kind);
	jw_string(w, JK(name), p->root_name);
	jw_string(w, JK(class), p->root_class);
	site_json(w, &p->root_site);
	jw_u64(w, JK(dominated_bytes), p->root_dominated_bytes);
	jw_end(w);
	jw_array(w, JK(edges), JW_INLINE);
	for (i = 0; i < p->nedges; i++) {
		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(via), p->edges[i].via);
		jw_string(w, JK(class), p->edges[i].class_name);
		site_json(w, &p->edges[i].site);
		jw_u64(w, JK(dominated_bytes), p->edges[i].dominated_bytes);
		jw_end(w);
	}
	jw_end(w);
	jw_u64(w, JK(count), p->count);
	jw_u64(w, JK(bytes), p->bytes);
	site_json(w, &p->site);
	jw_end(w);
}

static void part_json(struct jw *w, const struct why_part *p)
{
	size_t i;

	jw_object(w, NULL, JW_INLINE);
	if (p->root_kind) {
		jw_object(w, JK(holder), JW_INLINE);
		jw_object(w, JK(root), JW_INLINE);
		jw_string(w, JK(kind), p->root_kind);
		jw_string(w, JK(name), p->root_name);
		jw_string(w, JK(class), p->root_class);
		jw_end(w);
		jw_array(w, JK(edges), JW_INLINE);
		for (i = 0; i < p->nedges; i++) {
			jw_object(w, NULL, JW_INLINE);
			jw_string(w, JK(via), p->edges[i].via);
			jw_string(w, JK(class), p->edges[i].class_name);
			jw_end(w);
		}
		jw_end(w);
		jw_end(w);
	}
	jw_string(w, JK(class), p->class_name);
	jw_string(w, JK(table), p->table);
	jw_u64(w, JK(entries_read), p->read);
	jw_u64(w, JK(entries_total), p->total);
	jw_string(w, JK(reason), p->reason);
	jw_end(w);
}

/* What no path explains, and the containers read in part. */
static void unexplained_json(struct jw *w, const struct why_report *r)
{
	size_t i;

	jw_object(w, JK(unexplained), JW_INLINE);
	jw_u64(w, JK(objects), r->unexplained.objects);
	jw_u64(w, JK(bytes), r->unexplained.bytes);
	jw_u64(w, JK(young), r->unexplained.young);
	jw_u64(w, JK(opaque_data), r->unexplained.opaque_data);
	jw_u64(w, JK(unread), r->unexplained.unread);
	jw_array(w, JK(not_walked), JW_INLINE);
	for (i = 0; i < r->unexplained.nnot_walked; i++)
		jw_string(w, NULL, r->unexplained.not_walked[i]);
	jw_end(w);
	jw_u64(w, JK(in_heap), r->unexplained.in_heap);
	jw_u64(w, JK(in_heap_young), r->unexplained.in_heap_young);
	jw_array(w, JK(groups), JW_INLINE);
	for (i = 0; i < r->unexplained.ngroups; i++) {
		const struct why_group *g = &r->unexplained.groups[i];

		jw_object(w, NULL, JW_INLINE);
		jw_string(w, JK(head), g->head);
		jw_string(w, JK(cause), g->cause);
		jw_u64(w, JK(objects), g->objects);
		jw_u64(w, JK(heads), g->heads);
		jw_u64(w, JK(young), g->young);
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
	jw_array(w, JK(read_in_part), JW_LINES);
	for (i = 0; i < r->nparts; i++)
		part_json(w, &r->parts[i]);
	jw_end(w);
}

void why_write_json_members(struct jw *w, const struct why_report *r, size_t max_paths)
{
	const struct why_walk *wk = &r->walk;
	size_t i, j;

	jw_int(w, JK(pid), r->pid);
	if (r->host[0])
		jw_string(w, JK(host), r->host);
	if (r->command[0])
		jw_string(w, JK(command), r->command);
	jw_string(w, JK(ruby_version), r->ruby_version);
	if (r->selection)
		jw_string(w, JK(selection), r->selection);
	jw_array(w, JK(targets), JW_LINES);
	for (i = 0; i < r->ntargets; i++) {
		const struct why_target *t = &r->targets[i];

		jw_object(w, NULL, JW_LINES);
		jw_string(w, JK(class), t->class_name);
		jw_u64(w, JK(count), t->count);
		jw_u64(w, JK(bytes), t->bytes);
		site_json(w, &t->site);
		jw_u64(w, JK(unexplained), t->unexplained);
		jw_u64(w, JK(young), t->unexplained_young);
		jw_u64(w, JK(dropped), t->dropped);
		jw_array(w, JK(paths), JW_LINES);
		for (j = 0; j < t->npaths && (!max_paths || j < max_paths); j++)
			path_json(w, &t->paths[j]);
		jw_end(w);
		jw_end(w);
	}
	jw_end(w);
	unexplained_json(w, r);
	report_write_caps_json(w, &r->caps);
	jw_object(w, JK(walk), JW_INLINE);
	jw_u64(w, JK(objects), wk->objects);
	jw_u64(w, JK(edges), wk->edges);
	jw_u64(w, JK(roots), wk->roots);
	jw_u64(w, JK(reached), wk->reached);
	jw_double(w, JK(seconds), "%.3f", wk->seconds);
	jw_double(w, JK(heap_seconds), "%.3f", wk->heap_seconds);
	jw_double(w, JK(dominators_seconds), "%.3f", wk->dominators_seconds);
	jw_double(w, JK(paused_ms), "%.1f", wk->paused_ms);
	jw_bool(w, JK(frozen), wk->frozen);
	jw_u64(w, JK(rechecked), wk->rechecked);
	jw_u64(w, JK(dropped), wk->dropped);
	jw_u64(w, JK(tracer_bytes), wk->tracer_bytes);
	jw_u64(w, JK(reads), wk->reads);
	jw_bool(w, JK(gc_ran), wk->gc_ran);
	jw_u64(w, JK(conservative_roots), wk->conservative_roots);
	jw_u64(w, JK(conservative_only), wk->conservative_only);
	jw_end(w);
	verdict_write_json(w, r->verdict);
}

void why_write_json(FILE *out, const struct why_report *r, size_t max_paths)
{
	struct jw w;

	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_LINES);
	why_write_json_members(&w, r, max_paths);
	jw_end(&w);
	fputc('\n', out);
}

/* ---- folded chains ---- */

void why_write_folded(FILE *out, const struct why_report *r)
{
	char frame[NAME * 2];
	size_t i, j, k;

	for (i = 0; i < r->ntargets; i++) {
		const struct why_target *t = &r->targets[i];

		for (j = 0; j < t->npaths; j++) {
			const struct why_path *p = &t->paths[j];

			snprintf(frame, sizeof(frame), "%s %s (%s)", p->root_kind, p->root_name,
				 p->root_class);
			folded_write_escaped(out, frame);
			for (k = 0; k < p->nedges; k++) {
				snprintf(frame, sizeof(frame), "%s %s", p->edges[k].via,
					 p->edges[k].class_name);
				fputc(';', out);
				folded_write_escaped(out, frame);
			}
			fprintf(out, " %" PRIu64 "\n", p->count);
		}
		if (t->unexplained) {
			folded_write_escaped(out, "(unexplained)");
			fputc(';', out);
			folded_write_escaped(out, t->class_name);
			fprintf(out, " %" PRIu64 "\n", t->unexplained);
		}
	}
}

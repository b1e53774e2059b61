// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The data an HTML page draws (html_data.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "html_data.h"
#include "retained_paths.h"
#include "strpool.h"

void html_string(struct jw *w, const char *key, const char *s)
{
	static char buf[16384];

	jw_string(w, key, s ? term_escape(s, buf, sizeof(buf)) : NULL);
}

/* The page's frame names, each once; a path is their indices. */
struct names {
	struct u64map index; /* str_hash(name) | 1 -> index + 1 */
	char **v;
	size_t n, cap;
};

static long name_index(struct names *ns, const char *name)
{
	uint64_t key = str_hash(name) | 1;
	uintptr_t at = (uintptr_t)u64map_get(&ns->index, key);
	char *copy;

	if (at && !strcmp(ns->v[at - 1], name))
		return (long)(at - 1);
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 256;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	copy = strdup(name);
	if (!copy || (!at && u64map_put(&ns->index, key, (void *)(uintptr_t)(ns->n + 1)))) {
		free(copy);
		return -ENOMEM;
	}
	ns->v[ns->n] = copy;
	return (long)ns->n++;
}

static void names_write(struct jw *w, const struct names *ns)
{
	size_t i;

	jw_array(w, "names", JW_LINES);
	for (i = 0; i < ns->n; i++)
		html_string(w, NULL, ns->v[i]);
	jw_end(w);
}

static void names_free(struct names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	u64map_free(&ns->index, NULL);
}

/* An icicle row as the page reads it: [count, bytes, name index, ...], root first. */
static void write_row(struct jw *w, uint64_t count, uint64_t bytes, const long *idx, size_t n)
{
	size_t i;

	jw_array(w, NULL, JW_COMPACT);
	jw_u64(w, NULL, count);
	jw_u64(w, NULL, bytes);
	for (i = 0; i < n; i++)
		jw_u64(w, NULL, (uint64_t)idx[i]);
	jw_end(w);
}

/* One icicle path: [objects, bytes, name index, ...], root first, the class its leaf. */
static int write_path(struct jw *w, struct names *ns, const struct retained_path *p)
{
	static char names[REPORT_PATH_SLOTS][REPORT_NAME_MAX];
	const char *path[REPORT_PATH_SLOTS];
	struct stack_row one = {.class_name = (char *)p->class_name, .stack = p->stack};
	size_t n = 1, i;
	long idx[REPORT_PATH_SLOTS];

	if (p->stack)
		n = report_path_root_first(&one, names, path);
	else
		path[0] = p->class_name;
	for (i = 0; i < n; i++)
		if ((idx[i] = name_index(ns, path[i])) < 0)
			return (int)idx[i];
	write_row(w, p->objects, p->bytes, idx, n);
	return 0;
}

/* The icicle: the HTML_MAX_PATHS paths that retain most, the rest summed as left out. */
static int write_tree(struct jw *w, const struct report *r)
{
	struct retained_paths rp;
	struct names ns = {};
	uint64_t lo_objects = 0, lo_bytes = 0;
	size_t i;
	int err = report_retained_paths(r, &rp);

	if (err)
		return err;
	jw_object(w, "tree", JW_LINES);
	jw_string(w, "what", rp.in_use ? "in use at the period's end (the census's count)"
				       : "retained: alive and survived a GC");
	jw_u64(w, "objects", rp.objects);
	jw_u64(w, "bytes", rp.bytes);
	jw_array(w, "paths", JW_LINES);
	for (i = 0; !err && i < rp.n; i++) {
		if (i >= HTML_MAX_PATHS) {
			lo_objects += rp.v[i].objects;
			lo_bytes += rp.v[i].bytes;
			continue;
		}
		err = write_path(w, &ns, &rp.v[i]);
	}
	jw_end(w);
	jw_object(w, "left_out", JW_INLINE);
	jw_u64(w, "paths", rp.n > HTML_MAX_PATHS ? rp.n - HTML_MAX_PATHS : 0);
	jw_u64(w, "objects", lo_objects);
	jw_u64(w, "bytes", lo_bytes);
	jw_end(w);
	names_write(w, &ns);
	jw_end(w);
	names_free(&ns);
	retained_paths_free(&rp);
	return err;
}

static void write_class(struct jw *w, const struct report *r, const struct class_row *c)
{
	bool est = r->have_estimates;

	jw_object(w, NULL, JW_COMPACT);
	html_string(w, "name", c->name);
	jw_u64(w, "allocated", est ? c->est.allocated : c->counts.allocated);
	jw_u64(w, "freed", est ? c->est.freed : c->counts.freed);
	jw_u64(w, "retained", est ? c->est.retained : c->counts.retained);
	if (c->census.have) {
		jw_u64(w, "live", c->census.live_end);
		jw_u64(w, "bytes", c->census.bytes_end);
		jw_i64(w, "change", c->census.change);
	}
	if (r->period.on)
		jw_u64(w, "period_allocated",
		       r->period.estimated ? c->period.est_allocated : c->period.allocated);
	jw_end(w);
}

static void write_classes(struct jw *w, const struct report *r)
{
	size_t i;

	jw_array(w, "classes", JW_LINES);
	for (i = 0; i < r->nrows && i < HTML_MAX_CLASSES; i++)
		write_class(w, r, &r->rows[i]);
	jw_end(w);
	jw_u64(w, "classes_left_out", r->nrows > HTML_MAX_CLASSES ? r->nrows - HTML_MAX_CLASSES : 0);
}

static void write_suspects(struct jw *w, const struct report *r)
{
	const struct report_retainer *rt;
	size_t i;

	jw_array(w, "suspects", JW_LINES);
	for (i = 0; i < r->nsuspects; i++) {
		const struct suspect *s = &r->suspects[i];

		jw_object(w, NULL, JW_COMPACT);
		html_string(w, "class", s->class_name);
		jw_u64(w, "old_retained", s->old_retained);
		jw_u64(w, "bytes", s->bytes);
		if (s->have_change)
			jw_i64(w, "live_change", s->live_change);
		if (s->site) {
			html_string(w, "site_path", s->site->path);
			jw_int(w, "site_line", s->site->line);
		}
		if ((rt = report_retainer_of(r, s->class_name))) {
			html_string(w, "holder_kind", rt->root_kind);
			html_string(w, "holder", rt->path);
			jw_u64(w, "holder_count", rt->count);
		}
		jw_end(w);
	}
	jw_end(w);
}

/* The verdict's points, each with its holder path in words, as the text says it. */
static void write_verdict(struct jw *w, const struct verdict *v)
{
	size_t i, j;

	if (!v)
		return;
	jw_object(w, "verdict", JW_LINES);
	html_string(w, "none", v->none);
	jw_bool(w, "at_exit", v->at_exit);
	jw_double(w, "seconds", "%.1f", v->trace_seconds);
	jw_array(w, "points", JW_LINES);
	for (i = 0; i < v->n; i++) {
		const struct verdict_point *p = &v->points[i];

		jw_object(w, NULL, JW_COMPACT);
		html_string(w, "root_kind", p->root_kind);
		html_string(w, "root", p->root_name);
		jw_array(w, "edges", JW_COMPACT);
		for (j = 0; j < p->nedges; j++) {
			jw_array(w, NULL, JW_COMPACT);
			html_string(w, NULL, p->edges[j].via);
			html_string(w, NULL, p->edges[j].class_name);
			jw_end(w);
		}
		jw_end(w);
		jw_bool(w, "edges_cut", p->edges_cut);
		html_string(w, "container", p->container_class);
		jw_i64(w, "size_before", p->size_before);
		jw_i64(w, "size_after", p->size_after);
		jw_i64(w, "grew_objects", p->grew_objects);
		jw_i64(w, "grew_bytes", p->grew_bytes);
		jw_u64(w, "dominated_bytes", p->dominated_bytes);
		jw_u64(w, "dominated_objects", p->dominated_objects);
		jw_array(w, "by_class", JW_COMPACT);
		for (j = 0; j < p->nby_class; j++) {
			jw_array(w, NULL, JW_COMPACT);
			html_string(w, NULL, p->by_class[j].class_name);
			jw_u64(w, NULL, p->by_class[j].objects);
			jw_u64(w, NULL, p->by_class[j].bytes);
			jw_end(w);
		}
		jw_end(w);
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
}

static void write_facts(struct jw *w, const struct report *r)
{
	jw_object(w, "facts", JW_LINES);
	jw_int(w, "pid", r->pid);
	html_string(w, "host", r->host);
	html_string(w, "command", r->command);
	html_string(w, "ruby_version", r->ruby_version);
	jw_double(w, "duration_s", "%.1f", r->duration_s);
	jw_u64(w, "merged", r->merged);
	jw_bool(w, "sampled", r->have_estimates);
	jw_u64(w, "gc_runs", r->gc_runs);
	jw_u64(w, "allocated", r->have_estimates ? r->est_totals.allocated : r->totals.allocated);
	jw_u64(w, "retained", r->have_estimates ? r->est_totals.retained : r->totals.retained);
	if (r->heap_end.have) {
		jw_u64(w, "heap_live", r->heap_end.live);
		jw_u64(w, "heap_bytes", r->heap_end.bytes);
	}
	if (r->period.on) {
		jw_u64(w, "period", r->period.number);
		jw_double(w, "period_time", "%.3f", r->period.time);
	}
	jw_end(w);
}

int html_report_members(struct jw *w, const struct report *r)
{
	write_facts(w, r);
	write_verdict(w, r->verdict);
	write_suspects(w, r);
	write_classes(w, r);
	return write_tree(w, r);
}

/* One retainer path as an icicle path: the root, each edge, the held class last. */
static int write_why_path(struct jw *w, struct names *ns, const struct why_target *t,
			  const struct why_path *p)
{
	char name[REPORT_NAME_MAX];
	long idx[1 + WHY_HTML_MAX_EDGES + 1];
	size_t n = 0, i;

	snprintf(name, sizeof(name), "%s %s", p->root_kind ? p->root_kind : "?",
		 p->root_name ? p->root_name : "");
	idx[n++] = name_index(ns, name);
	for (i = 0; i < p->nedges && i < WHY_HTML_MAX_EDGES; i++) {
		snprintf(name, sizeof(name), "%s %s", p->edges[i].via ? p->edges[i].via : "?",
			 p->edges[i].class_name ? p->edges[i].class_name : "?");
		idx[n++] = name_index(ns, name);
	}
	if (!p->nedges || strcmp(p->edges[p->nedges - 1].class_name ?: "", t->class_name))
		idx[n++] = name_index(ns, t->class_name);
	for (i = 0; i < n; i++)
		if (idx[i] < 0)
			return (int)idx[i];
	write_row(w, p->count, p->bytes, idx, n);
	return 0;
}

int html_why_members(struct jw *w, const struct why_report *wr)
{
	struct names ns = {};
	uint64_t objects = 0, bytes = 0, lo_paths = 0, lo_objects = 0, lo_bytes = 0, written = 0;
	size_t i, j;
	int err = 0;

	jw_object(w, "facts", JW_LINES);
	jw_int(w, "pid", wr->pid);
	html_string(w, "host", wr->host);
	html_string(w, "command", wr->command);
	html_string(w, "ruby_version", wr->ruby_version);
	html_string(w, "selection", wr->selection);
	jw_end(w);
	write_verdict(w, wr->verdict);
	jw_array(w, "classes", JW_LINES);
	for (i = 0; i < wr->ntargets; i++) {
		jw_object(w, NULL, JW_COMPACT);
		html_string(w, "name", wr->targets[i].class_name);
		jw_u64(w, "live", wr->targets[i].count);
		jw_u64(w, "bytes", wr->targets[i].bytes);
		jw_u64(w, "unexplained", wr->targets[i].unexplained);
		jw_u64(w, "paths", wr->targets[i].npaths);
		jw_end(w);
	}
	jw_end(w);
	jw_object(w, "tree", JW_LINES);
	jw_string(w, "what", "live objects held along each retainer path (root first)");
	jw_array(w, "paths", JW_LINES);
	for (i = 0; !err && i < wr->ntargets; i++)
		for (j = 0; !err && j < wr->targets[i].npaths; j++) {
			const struct why_path *p = &wr->targets[i].paths[j];

			objects += p->count;
			bytes += p->bytes;
			if (written++ >= HTML_MAX_PATHS) {
				lo_paths++;
				lo_objects += p->count;
				lo_bytes += p->bytes;
				continue;
			}
			err = write_why_path(w, &ns, &wr->targets[i], p);
		}
	jw_end(w);
	jw_u64(w, "objects", objects);
	jw_u64(w, "bytes", bytes);
	jw_object(w, "left_out", JW_INLINE);
	jw_u64(w, "paths", lo_paths);
	jw_u64(w, "objects", lo_objects);
	jw_u64(w, "bytes", lo_bytes);
	jw_end(w);
	names_write(w, &ns);
	jw_end(w);
	names_free(&ns);
	return err;
}

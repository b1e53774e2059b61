// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A `why` report read back from its JSON (docs/json.md, "why"), for merge:
 * every member the writer writes is read, strings interned, and the report
 * summed into the one given (why_merge), by names.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_get.h"
#include "json_keys.h"
#include "why_model.h"
#include "why_read.h"

static void read_site(struct json_reader *rd, const json_t *obj, const char *where,
		      struct why_site *s)
{
	json_t *site = jr_get_obj(rd, obj, where, JK(site), false);

	*s = (struct why_site){NULL, 0};
	if (!site)
		return;
	s->path = jr_get_str(rd, site, "site", JK(path), true);
	s->line = (int) jr_get_int(rd, site, "site", JK(line), -(1 << 30), 1 << 30, 0);
}

static int read_path(struct json_reader *rd, struct why_report *r, struct why_target *t,
		     const json_t *pj)
{
	json_t *root = jr_get_obj(rd, pj, "path", JK(root), true);
	json_t *edges = jr_get_arr(rd, pj, "path", JK(edges), true);
	struct why_path p = {0};
	size_t i, n = edges ? json_array_size(edges) : 0;
	int ret;

	p.root_kind = jr_get_str(rd, root, "root", JK(kind), true);
	p.root_name = jr_get_str(rd, root, "root", JK(name), true);
	p.root_class = jr_get_str(rd, root, "root", JK(class), true);
	read_site(rd, root, "root", &p.root_site);
	p.root_dominated_bytes = jr_get_u64(rd, root, "root", JK(dominated_bytes), false);
	p.count = jr_get_u64(rd, pj, "path", JK(count), true);
	p.bytes = jr_get_u64(rd, pj, "path", JK(bytes), true);
	read_site(rd, pj, "path", &p.site);
	p.edges = calloc(n ? n : 1, sizeof(*p.edges));
	if (!p.edges)
		return -ENOMEM;
	p.nedges = n;
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(edges, i);

		p.edges[i].via = jr_get_str(rd, e, "edge", JK(via), true);
		p.edges[i].class_name = jr_get_str(rd, e, "edge", JK(class), true);
		read_site(rd, e, "edge", &p.edges[i].site);
		p.edges[i].dominated_bytes = jr_get_u64(rd, e, "edge", JK(dominated_bytes), false);
	}
	ret = rd->failed ? -EINVAL : why_add_path(r, t, &p);
	free(p.edges);
	return ret;
}

static int read_target(struct json_reader *rd, struct why_report *r, const json_t *tj)
{
	json_t *paths = jr_get_arr(rd, tj, "target", JK(paths), true);
	const char *name = jr_get_str(rd, tj, "target", JK(class), true);
	struct why_target *t;
	size_t i;
	int ret;

	if (rd->failed)
		return -EINVAL;
	t = why_target(r, name);
	if (!t)
		return -ENOMEM;
	t->count += jr_get_u64(rd, tj, "target", JK(count), true);
	t->bytes += jr_get_u64(rd, tj, "target", JK(bytes), true);
	t->unexplained += jr_get_u64(rd, tj, "target", JK(unexplained), true);
	t->unexplained_young += jr_get_u64(rd, tj, "target", JK(young), false);
	t->dropped += jr_get_u64(rd, tj, "target", JK(dropped), true);
	if (!t->site.path) {
		read_site(rd, tj, "target", &t->site);
		if (t->site.path)
			t->site.path = why_intern(r, t->site.path);
	}
	for (i = 0; i < json_array_size(paths); i++)
		if ((ret = read_path(rd, r, t, json_array_get(paths, i))))
			return ret;
	return rd->failed ? -EINVAL : 0;
}

/* One container of read_in_part, added to r. */
static int read_part(struct json_reader *rd, struct why_report *r, const json_t *pj)
{
	json_t *holder = jr_get_obj(rd, pj, "read_in_part", JK(holder), false);
	json_t *root = holder ? jr_get_obj(rd, holder, "holder", JK(root), true) : NULL;
	json_t *edges = holder ? jr_get_arr(rd, holder, "holder", JK(edges), true) : NULL;
	struct why_part p = {0};
	size_t i, n = edges ? json_array_size(edges) : 0;
	int ret;

	if (root) {
		p.root_kind = jr_get_str(rd, root, "root", JK(kind), true);
		p.root_name = jr_get_str(rd, root, "root", JK(name), true);
		p.root_class = jr_get_str(rd, root, "root", JK(class), true);
	}
	p.class_name = jr_get_str(rd, pj, "read_in_part", JK(class), true);
	p.table = jr_get_str(rd, pj, "read_in_part", JK(table), true);
	p.reason = jr_get_str(rd, pj, "read_in_part", JK(reason), true);
	p.read = jr_get_u64(rd, pj, "read_in_part", JK(entries_read), true);
	p.total = jr_get_u64(rd, pj, "read_in_part", JK(entries_total), true);
	p.edges = calloc(n ? n : 1, sizeof(*p.edges));
	if (!p.edges)
		return -ENOMEM;
	p.nedges = n;
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(edges, i);

		p.edges[i].via = jr_get_str(rd, e, "edge", JK(via), true);
		p.edges[i].class_name = jr_get_str(rd, e, "edge", JK(class), true);
	}
	ret = rd->failed ? -EINVAL : why_add_part(r, &p);
	free(p.edges);
	return ret;
}

/* Containers read in part (absent from reports written before it was). */
static int read_parts(struct json_reader *rd, struct why_report *r, const json_t *doc)
{
	json_t *parts = jr_get_arr(rd, doc, "why", JK(read_in_part), false);
	size_t i;
	int ret;

	for (i = 0; parts && i < json_array_size(parts); i++)
		if ((ret = read_part(rd, r, json_array_get(parts, i))))
			return ret;
	return 0;
}

/* The heap's unexplained groups (reports before them have none). */
static void read_groups(struct json_reader *rd, struct why_report *r, const json_t *u)
{
	json_t *gs = jr_get_arr(rd, u, "unexplained", JK(groups), false);
	size_t i;

	r->unexplained.in_heap = jr_get_u64(rd, u, "unexplained", JK(in_heap), false);
	r->unexplained.in_heap_young = jr_get_u64(rd, u, "unexplained", JK(in_heap_young), false);
	for (i = 0; gs && i < json_array_size(gs); i++) {
		json_t *gj = json_array_get(gs, i);
		struct why_group g = {
		    .head = jr_get_str(rd, gj, "group", JK(head), true),
		    .cause = jr_get_str(rd, gj, "group", JK(cause), true),
		    .objects = jr_get_u64(rd, gj, "group", JK(objects), true),
		    .heads = jr_get_u64(rd, gj, "group", JK(heads), true),
		    .young = jr_get_u64(rd, gj, "group", JK(young), false),
		};

		if (g.head && g.cause)
			why_add_group(r, &g);
	}
}

static void read_walk(struct json_reader *rd, struct why_report *r, const json_t *doc)
{
	json_t *w = jr_get_obj(rd, doc, "why", JK(walk), true);
	json_t *u = jr_get_obj(rd, doc, "why", JK(unexplained), true);
	json_t *nw = jr_get_arr(rd, u, "unexplained", JK(not_walked), false);
	size_t i;

	r->walk.objects = jr_get_u64(rd, w, "walk", JK(objects), true);
	r->walk.edges = jr_get_u64(rd, w, "walk", JK(edges), true);
	r->walk.roots = jr_get_u64(rd, w, "walk", JK(roots), true);
	r->walk.reached = jr_get_u64(rd, w, "walk", JK(reached), true);
	r->walk.seconds = jr_get_real(rd, w, "walk", JK(seconds));
	r->walk.heap_seconds = jr_get_real(rd, w, "walk", JK(heap_seconds));
	r->walk.dominators_seconds = jr_get_real(rd, w, "walk", JK(dominators_seconds));
	r->walk.paused_ms = jr_get_real(rd, w, "walk", JK(paused_ms));
	r->walk.frozen = jr_get_bool(rd, w, "walk", JK(frozen));
	r->walk.rechecked = jr_get_u64(rd, w, "walk", JK(rechecked), true);
	r->walk.dropped = jr_get_u64(rd, w, "walk", JK(dropped), true);
	r->walk.tracer_bytes = jr_get_u64(rd, w, "walk", JK(tracer_bytes), true);
	r->walk.reads = jr_get_u64(rd, w, "walk", JK(reads), true);
	r->walk.gc_ran = jr_get_bool(rd, w, "walk", JK(gc_ran));
	r->walk.conservative_roots = jr_get_u64(rd, w, "walk", JK(conservative_roots), false);
	r->walk.conservative_only = jr_get_u64(rd, w, "walk", JK(conservative_only), false);
	r->unexplained.objects = jr_get_u64(rd, u, "unexplained", JK(objects), true);
	r->unexplained.bytes = jr_get_u64(rd, u, "unexplained", JK(bytes), true);
	r->unexplained.young = jr_get_u64(rd, u, "unexplained", JK(young), false);
	r->unexplained.opaque_data = jr_get_u64(rd, u, "unexplained", JK(opaque_data), true);
	r->unexplained.unread = jr_get_u64(rd, u, "unexplained", JK(unread), true);
	u = jr_get_obj(rd, doc, "why", JK(limits_reached), false);
#define CAP_READ(id, key) r->caps.n[id] = jr_get_u64(rd, u, "limits_reached", JK(key), false);
	CAPS(CAP_READ)
#undef CAP_READ
	for (i = 0; nw && i < json_array_size(nw) && i < WHY_MAX_NOT_WALKED; i++)
		if (json_is_string(json_array_get(nw, i)))
			r->unexplained.not_walked[r->unexplained.nnot_walked++] =
			    why_intern(r, json_string_value(json_array_get(nw, i)));
	read_groups(rd, r, u);
}

bool why_json_is_why(const char *path)
{
	json_t *doc = json_load_file(path, 0, NULL);
	bool is = doc && json_is_object(doc) && json_object_get(doc, JK(walk)) &&
		  json_object_get(doc, JK(targets));

	json_decref(doc);
	return is;
}

int why_read_file(const char *path, struct why_report *into, char *err, size_t errlen)
{
	struct json_reader rd = {.name = path, .err = err, .errlen = errlen};
	struct why_report one = {0};
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr), *targets;
	size_t i;
	int ret = 0;

	if (!doc) {
		snprintf(err, errlen, "%s: not JSON (line %d: %s)", path, jerr.line, jerr.text);
		return -1;
	}
	one.pid = (pid_t) jr_get_int(&rd, doc, "why", JK(pid), 0, 1 << 30, 0);
	snprintf(one.ruby_version, sizeof(one.ruby_version), "%s",
		 jr_get_str(&rd, doc, "why", JK(ruby_version), true));
	targets = jr_get_arr(&rd, doc, "why", JK(targets), true);
	for (i = 0; !ret && !rd.failed && i < json_array_size(targets); i++)
		ret = read_target(&rd, &one, json_array_get(targets, i));
	read_walk(&rd, &one, doc);
	if (!ret && !rd.failed)
		ret = read_parts(&rd, &one, doc);
	if (!rd.failed && !ret) {
		if (!into->merged && !into->ntargets)
			snprintf(into->ruby_version, sizeof(into->ruby_version), "%s",
				 one.ruby_version);
		else if (strcmp(into->ruby_version, one.ruby_version))
			snprintf(into->ruby_version, sizeof(into->ruby_version), "mixed");
		ret = why_merge(into, &one);
		if (ret)
			snprintf(err, errlen, "%s: out of memory", path);
	} else if (!rd.failed) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	}
	why_free(&one);
	json_decref(doc);
	return rd.failed || ret ? -1 : 0;
}

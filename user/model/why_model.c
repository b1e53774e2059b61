// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "why_model.h"

const char *why_intern(struct why_report *r, const char *s)
{
	return s ? strpool_intern(&r->strings, s) : NULL;
}

struct why_target *why_target(struct why_report *r, const char *class_name)
{
	const char *name = why_intern(r, class_name);
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i].class_name == name)
			return &r->targets[i];
	if (r->ntargets == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		struct why_target *t = realloc(r->targets, cap * sizeof(*t));

		if (!t)
			return NULL;
		r->targets = t;
		r->cap = cap;
	}
	memset(&r->targets[r->ntargets], 0, sizeof(r->targets[0]));
	r->targets[r->ntargets].class_name = name;
	return &r->targets[r->ntargets++];
}

static uint64_t mix(uint64_t h, const char *s)
{
	h ^= str_hash(s ? s : "");
	return h * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
}

uint64_t why_path_key(const struct why_path *p)
{
	uint64_t h = mix(mix(0x84222325cbf29ce4ULL, p->root_kind), p->root_name);
	size_t i;

	h = mix(h, p->root_class);
	for (i = 0; i < p->nedges; i++)
		h = mix(mix(h, p->edges[i].via), p->edges[i].class_name);
	return h ? h : 1;
}

static void site_intern(struct why_report *r, struct why_site *s)
{
	if (s->path)
		s->path = why_intern(r, s->path);
}

int why_add_path(struct why_report *r, struct why_target *t, const struct why_path *p)
{
	uint64_t key = why_path_key(p);
	uintptr_t at = (uintptr_t) u64map_get(&t->by_key, key);
	struct why_path *q;
	size_t i;

	if (at) {
		q = &t->paths[at - 1];
		q->count += p->count;
		q->bytes += p->bytes;
		/* the largest holder at each step (why_model.h) */
		if (p->root_dominated_bytes > q->root_dominated_bytes)
			q->root_dominated_bytes = p->root_dominated_bytes;
		for (i = 0; i < p->nedges && i < q->nedges; i++)
			if (p->edges[i].dominated_bytes > q->edges[i].dominated_bytes)
				q->edges[i].dominated_bytes = p->edges[i].dominated_bytes;
		if (!q->site.path && p->site.path)
			q->site = (struct why_site){why_intern(r, p->site.path), p->site.line};
		return 0;
	}
	if (t->npaths == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;

		q = realloc(t->paths, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		t->paths = q;
		t->cap = cap;
	}
	q = &t->paths[t->npaths];
	*q = *p;
	q->key = key;
	q->root_kind = why_intern(r, p->root_kind);
	q->root_name = why_intern(r, p->root_name);
	q->root_class = why_intern(r, p->root_class);
	site_intern(r, &q->root_site);
	site_intern(r, &q->site);
	q->edges = calloc(p->nedges ? p->nedges : 1, sizeof(*q->edges));
	if (!q->edges)
		return -ENOMEM;
	for (i = 0; i < p->nedges; i++) {
		q->edges[i].via = why_intern(r, p->edges[i].via);
		q->edges[i].class_name = why_intern(r, p->edges[i].class_name);
		q->edges[i].site = p->edges[i].site;
		q->edges[i].dominated_bytes = p->edges[i].dominated_bytes;
		site_intern(r, &q->edges[i].site);
	}
	if (u64map_put(&t->by_key, key, (void *) (uintptr_t) (t->npaths + 1))) {
		free(q->edges);
		return -ENOMEM;
	}
	t->npaths++;
	return 0;
}

int why_add_part(struct why_report *r, const struct why_part *p)
{
	struct why_part *q;
	size_t i;

	if (r->nparts == r->cap_parts) {
		size_t cap = r->cap_parts ? r->cap_parts * 2 : 8;

		q = realloc(r->parts, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		r->parts = q;
		r->cap_parts = cap;
	}
	q = &r->parts[r->nparts];
	*q = *p;
	q->root_kind = why_intern(r, p->root_kind);
	q->root_name = why_intern(r, p->root_name);
	q->root_class = why_intern(r, p->root_class);
	q->class_name = why_intern(r, p->class_name);
	q->table = why_intern(r, p->table);
	q->reason = why_intern(r, p->reason);
	q->edges = calloc(p->nedges ? p->nedges : 1, sizeof(*q->edges));
	if (!q->edges)
		return -ENOMEM;
	for (i = 0; i < p->nedges; i++) {
		q->edges[i].via = why_intern(r, p->edges[i].via);
		q->edges[i].class_name = why_intern(r, p->edges[i].class_name);
	}
	r->nparts++;
	return 0;
}

static int path_cmp(const void *a, const void *b)
{
	const struct why_path *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->root_name ? x->root_name : "", y->root_name ? y->root_name : "");
}

static int target_cmp(const void *a, const void *b)
{
	const struct why_target *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->class_name, y->class_name);
}

void why_finish(struct why_report *r)
{
	size_t i, j;

	for (i = 0; i < r->ntargets; i++) {
		struct why_target *t = &r->targets[i];

		sort_array(t->paths, t->npaths, sizeof(*t->paths), path_cmp);
		/* the order changed: the key index follows */
		u64map_free(&t->by_key, NULL);
		for (j = 0; j < t->npaths; j++)
			u64map_put(&t->by_key, t->paths[j].key, (void *) (uintptr_t) (j + 1));
	}
	sort_array(r->targets, r->ntargets, sizeof(*r->targets), target_cmp);
}

/* The walk's figures and the unexplained counts of from, added to into's. */
static void merge_walk(struct why_report *into, const struct why_report *from)
{
	size_t k;

	into->walk.objects += from->walk.objects;
	into->walk.edges += from->walk.edges;
	into->walk.roots += from->walk.roots;
	into->walk.reached += from->walk.reached;
	into->walk.seconds += from->walk.seconds;
	into->walk.heap_seconds += from->walk.heap_seconds;
	into->walk.dominators_seconds += from->walk.dominators_seconds;
	into->walk.paused_ms += from->walk.paused_ms;
	into->walk.frozen |= from->walk.frozen;
	into->walk.rechecked += from->walk.rechecked;
	into->walk.dropped += from->walk.dropped;
	into->walk.tracer_bytes += from->walk.tracer_bytes;
	into->walk.reads += from->walk.reads;
	into->walk.gc_ran |= from->walk.gc_ran;
	into->walk.conservative_roots += from->walk.conservative_roots;
	into->walk.conservative_only += from->walk.conservative_only;
	into->unexplained.objects += from->unexplained.objects;
	into->unexplained.bytes += from->unexplained.bytes;
	into->unexplained.young += from->unexplained.young;
	into->unexplained.opaque_data += from->unexplained.opaque_data;
	into->unexplained.unread += from->unexplained.unread;
	into->unexplained.in_heap += from->unexplained.in_heap;
	into->unexplained.in_heap_young += from->unexplained.in_heap_young;
	for (k = 0; k < from->unexplained.ngroups; k++)
		why_add_group(into, &from->unexplained.groups[k]);
}

int why_merge(struct why_report *into, const struct why_report *from)
{
	size_t i, j, k;

	for (i = 0; i < from->ntargets; i++) {
		const struct why_target *f = &from->targets[i];
		struct why_target *t = why_target(into, f->class_name);

		if (!t)
			return -ENOMEM;
		t->count += f->count;
		t->bytes += f->bytes;
		t->unexplained += f->unexplained;
		t->unexplained_bytes += f->unexplained_bytes;
		t->unexplained_young += f->unexplained_young;
		t->dropped += f->dropped;
		if (!t->site.path && f->site.path)
			t->site = (struct why_site){why_intern(into, f->site.path), f->site.line};
		for (j = 0; j < f->npaths; j++)
			if (why_add_path(into, t, &f->paths[j]))
				return -ENOMEM;
	}
	merge_walk(into, from);
	for (k = 0; k < from->nparts; k++)
		if (why_add_part(into, &from->parts[k]))
			return -ENOMEM;
	caps_add(&into->caps, &from->caps);
	for (k = 0; k < from->unexplained.nnot_walked; k++) {
		const char *s = why_intern(into, from->unexplained.not_walked[k]);

		for (j = 0; j < into->unexplained.nnot_walked; j++)
			if (into->unexplained.not_walked[j] == s)
				break;
		if (j == into->unexplained.nnot_walked && j < WHY_MAX_NOT_WALKED)
			into->unexplained.not_walked[into->unexplained.nnot_walked++] = s;
	}
	into->merged += from->merged ? from->merged : 1;
	return 0;
}

void why_add_group(struct why_report *r, const struct why_group *g)
{
	struct why_unexplained *u = &r->unexplained;
	const char *head = why_intern(r, g->head), *cause = why_intern(r, g->cause);
	size_t i, j;

	for (i = 0; i < u->ngroups; i++)
		if (u->groups[i].head == head && u->groups[i].cause == cause)
			break;
	if (i == u->ngroups) {
		/* full: the new one replaces the smallest, if bigger */
		if (i == WHY_MAX_GROUPS) {
			for (i = 0, j = 1; j < u->ngroups; j++)
				if (u->groups[j].objects < u->groups[i].objects)
					i = j;
			if (u->groups[i].objects >= g->objects)
				return;
		} else {
			u->ngroups++;
		}
		u->groups[i] = (struct why_group){.head = head, .cause = cause};
	}
	u->groups[i].objects += g->objects;
	u->groups[i].heads += g->heads;
	u->groups[i].young += g->young;
	/* most objects first */
	while (i > 0 && u->groups[i].objects > u->groups[i - 1].objects) {
		struct why_group t = u->groups[i];

		u->groups[i] = u->groups[i - 1];
		u->groups[--i] = t;
	}
}

void why_drop_target(struct why_report *r, size_t i)
{
	size_t j;

	if (i >= r->ntargets)
		return;
	for (j = 0; j < r->targets[i].npaths; j++)
		free(r->targets[i].paths[j].edges);
	free(r->targets[i].paths);
	u64map_free(&r->targets[i].by_key, NULL);
	memmove(&r->targets[i], &r->targets[i + 1], (r->ntargets - i - 1) * sizeof(r->targets[0]));
	r->ntargets--;
}

void why_free(struct why_report *r)
{
	size_t i, j;

	for (i = 0; i < r->ntargets; i++) {
		for (j = 0; j < r->targets[i].npaths; j++)
			free(r->targets[i].paths[j].edges);
		free(r->targets[i].paths);
		u64map_free(&r->targets[i].by_key, NULL);
	}
	free(r->targets);
	for (i = 0; i < r->nparts; i++)
		free(r->parts[i].edges);
	free(r->parts);
	strpool_free(&r->strings);
	verdict_free(r->verdict);
	memset(r, 0, sizeof(*r));
}

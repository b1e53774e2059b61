// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The leak verdict read back from JSON (verdict_read.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "json_keys.h"
#include "verdict_read.h"

/* A string member interned in v ("" when absent and required). */
static const char *str(struct json_reader *rd, struct verdict *v, const json_t *o,
		       const char *at, const char *key, bool required)
{
	const char *s = jr_get_str(rd, o, at, key, required);

	return s ? verdict_intern(v, s) : NULL;
}

static void read_holder(struct json_reader *rd, struct verdict *v, struct verdict_point *p,
			const json_t *o, const char *at)
{
	json_t *h = jr_get_obj(rd, o, at, JK(holder), true);
	json_t *root = jr_get_obj(rd, h, at, JK(root), true);
	json_t *edges = jr_get_arr(rd, h, at, JK(edges), false), *e;
	size_t i;

	p->root_kind = str(rd, v, root, at, JK(kind), true);
	p->root_name = str(rd, v, root, at, JK(name), true);
	json_array_foreach(edges, i, e)
	{
		if (p->nedges == VERDICT_MAX_EDGES || rd->failed)
			break;
		p->edges[p->nedges].via = str(rd, v, e, at, JK(via), true);
		p->edges[p->nedges].class_name = str(rd, v, e, at, JK(class), true);
		p->nedges++;
	}
	p->edges_cut = jr_get_bool(rd, h, at, JK(edges_cut)) || json_array_size(edges) > p->nedges;
}

static void read_grew(struct json_reader *rd, struct verdict *v, struct verdict_point *p,
		      const json_t *o, const char *at)
{
	json_t *g = jr_get_obj(rd, o, at, JK(grew), true);
	json_t *by = jr_get_arr(rd, g, at, JK(by_class), false), *c;
	size_t i;

	p->grew_objects = jr_get_int(rd, g, at, JK(objects), INT64_MIN, INT64_MAX, 0);
	p->grew_bytes = jr_get_int(rd, g, at, JK(bytes), INT64_MIN, INT64_MAX, 0);
	p->new_objects = jr_get_u64(rd, g, at, JK(new_objects), false);
	p->new_bytes = jr_get_u64(rd, g, at, JK(new_bytes), false);
	json_array_foreach(by, i, c)
	{
		if (p->nby_class == VERDICT_MAX_CLASSES || rd->failed)
			break;
		p->by_class[p->nby_class].class_name = str(rd, v, c, at, JK(class), true);
		p->by_class[p->nby_class].objects = jr_get_u64(rd, c, at, JK(objects), false);
		p->by_class[p->nby_class].bytes = jr_get_u64(rd, c, at, JK(bytes), false);
		p->nby_class++;
	}
}

static void read_sites(struct json_reader *rd, struct verdict *v, struct verdict_point *p,
		       const json_t *o, const char *at)
{
	json_t *sites = jr_get_arr(rd, o, at, JK(alloc_sites), false), *s;
	size_t i;

	json_array_foreach(sites, i, s)
	{
		if (p->nsites == VERDICT_MAX_SITES || rd->failed)
			break;
		p->sites[p->nsites].class_name = str(rd, v, s, at, JK(class), true);
		p->sites[p->nsites].path = str(rd, v, s, at, JK(path), true);
		p->sites[p->nsites].line = (int)jr_get_int(rd, s, at, JK(line), INT_MIN, INT_MAX, 0);
		p->sites[p->nsites].traced = jr_get_u64(rd, s, at, JK(traced), false);
		p->nsites++;
	}
}

static void read_point(struct json_reader *rd, struct verdict *v, struct verdict_point *p,
		       const json_t *o, const char *at)
{
	json_t *c;

	if (!json_is_object(o)) {
		jr_fail(rd, at, NULL, "expected an object");
		return;
	}
	read_holder(rd, v, p, o, at);
	c = jr_get_obj(rd, o, at, JK(container), true);
	p->container_class = str(rd, v, c, at, JK(class), true);
	p->size_before = jr_get_int(rd, c, at, JK(size_before), 0, INT64_MAX, -1);
	p->size_after = jr_get_int(rd, c, at, JK(size_after), 0, INT64_MAX, -1);
	read_grew(rd, v, p, o, at);
	p->dominated_bytes = jr_get_u64(rd, o, at, JK(dominated_bytes), true);
	p->dominated_objects = jr_get_u64(rd, o, at, JK(dominated_objects), false);
	read_sites(rd, v, p, o, at);
}

static void read_walk(struct json_reader *rd, struct verdict *v, const json_t *w, const char *at)
{
	v->none = str(rd, v, w, at, JK(none), false);
	v->seconds = jr_get_real(rd, w, at, JK(seconds));
	v->tracer_bytes = jr_get_u64(rd, w, at, JK(tracer_bytes), false);
	v->new_objects = jr_get_u64(rd, w, at, JK(new_objects), false);
	v->unattributed = jr_get_u64(rd, w, at, JK(unattributed), false);
	v->compacted = jr_get_bool(rd, w, at, JK(compacted));
	v->vm_lists_grew = jr_get_u64(rd, w, at, JK(vm_lists_grew), false);
	v->small_points = jr_get_u64(rd, w, at, JK(small_points), false);
	v->at_exit = jr_get_bool(rd, w, at, JK(at_exit));
}

struct verdict *jr_read_verdict(struct json_reader *rd, const json_t *o, const char *where)
{
	json_t *points = jr_get_arr(rd, o, where, JK(verdict), false), *p;
	json_t *walk = jr_get_obj(rd, o, where, JK(verdict_walk), false);
	struct verdict *v;
	char at[300];
	size_t i;

	if (!walk || rd->failed)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v) {
		jr_fail(rd, where, NULL, "out of memory");
		return NULL;
	}
	snprintf(at, sizeof(at), "%s%sverdict_walk", where, *where ? "." : "");
	read_walk(rd, v, walk, at);
	json_array_foreach(points, i, p)
	{
		if (v->n == VERDICT_MAX || rd->failed)
			break;
		snprintf(at, sizeof(at), "%s%sverdict[%zu]", where, *where ? "." : "", i);
		read_point(rd, v, &v->points[v->n++], p, at);
	}
	if (rd->failed) {
		verdict_free(v);
		return NULL;
	}
	return v;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* verdict_classes.h: the verdict's nodes and the end census's classes. */
#include "verdict_classes.h"

uint32_t verdict_node_class(void *ctx, uint32_t v)
{
	struct verdict_end *e = ctx;
	const struct rg_page *p = e->class_page;
	uint64_t addr;

	if (!p || v < p->first || v - p->first >= p->nslots) {
		if (!(p = refgraph_page_of(e->g, v)))
			return 0;
		e->class_page = p;
	}
	addr = p->start + (uint64_t) (v - p->first) * p->slot_size;
	return census_slot_class_at(e->end, addr, &e->class_hint);
}

/* The census class a hash names in the end's census, or NULL (the map made at first use). */
const struct census_class *verdict_census_class(struct verdict_end *e, uint32_t hash)
{
	size_t i;

	if (!e->by_hash.len) {
		u64map_for_each(&e->end->classes, i)
		{
			uint32_t h = census_class_hash(e->end->classes.keys[i]);

			if (!u64map_get(&e->by_hash, h) &&
			    u64map_put(&e->by_hash, h, e->end->classes.values[i]))
				break;
		}
	}
	return hash ? u64map_get(&e->by_hash, hash) : NULL;
}

void verdict_class_maps_free(struct verdict_end *e)
{
	u64map_free(&e->by_hash, NULL);
	u64map_free(&e->wanted_by_hash, NULL);
}

/* The class a census hash names, in the end's census; "?" when unknown. */
const char *verdict_class_name(struct why_context *c, struct verdict_end *e, uint32_t hash)
{
	const struct census_class *cc = verdict_census_class(e, hash);
	uint64_t klass;

	if (!cc)
		return "?";
	klass = cc->klass;
	if (klass && RBM_KIND_TYPE(cc->kind) != RB_T_IMEMO)
		klass = class_namer_object_class(&c->namer, klass);
	return class_namer_key_name(&c->namer, klass, cc->kind);
}

/* --class: whether objects of the class a hash names count (each class asked once). */
bool verdict_class_wanted(struct why_context *c, struct verdict_end *e, uint32_t hash)
{
	uintptr_t v;

	if (!e->wanted)
		return true;
	v = (uintptr_t) u64map_get(&e->wanted_by_hash, hash);
	if (!v) {
		v = e->wanted(e->wanted_ctx, verdict_class_name(c, e, hash)) ? 2 : 1;
		u64map_put(&e->wanted_by_hash, hash, (void *) v);
	}
	return v == 2;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include "census_model.h"
#include "rbmemtrace.h"

static void heap_info_from(struct heap_info *h, const struct census *c)
{
	size_t i;

	h->have = true;
	h->pages = c->pages;
	h->slots = c->slots;
	h->live = c->live;
	h->free = c->free;
	h->garbage = c->garbage;
	h->unjudged = c->unjudged;
	h->gc_count = c->gc_count;
	h->marking = c->marking;
	h->sweeping = c->sweeping;
	h->gc_ran = c->gc_count_changed;
	h->seconds = c->seconds;
	h->bytes = 0;
	memcpy(h->types, c->types, sizeof(h->types));
	memset(h->garbage_types, 0, sizeof(h->garbage_types));
	u64map_for_each(&c->classes, i)
	{
		const struct census_class *cc = c->classes.values[i];

		h->bytes += cc->bytes;
		h->garbage_types[RBM_KIND_TYPE(cc->kind)] += cc->garbage;
	}
}

/* The class a census row counts as: past singleton classes and iclasses (ObjectSpace's view). */
static uint64_t row_class(const struct census_class *cc, struct class_namer *cn)
{
	if (cc->named)
		return cc->object_class;
	if (cc->klass && RBM_KIND_TYPE(cc->kind) != RB_T_IMEMO)
		return class_namer_object_class(cn, cc->klass);
	return cc->klass;
}

void census_name_classes(struct census *c, struct class_namer *cn)
{
	size_t i;

	u64map_for_each(&c->classes, i)
	{
		struct census_class *cc = c->classes.values[i];

		if (!cc->live && !cc->garbage)
			continue;
		cc->object_class = row_class(cc, cn);
		cc->named = true;
		if (!cc->name)
			cc->name = strdup(class_namer_key_name(cn, cc->object_class, cc->kind));
	}
}

int census_to_report(const struct census *c, struct class_namer *cn, struct report *r,
		     enum census_moment when, bool (*wanted)(void *ctx, const char *name),
		     void *ctx)
{
	size_t i;

	heap_info_from(when == CENSUS_AT_START ? &r->heap_start : &r->heap_end, c);
	u64map_for_each(&c->classes, i)
	{
		const struct census_class *cc = c->classes.values[i];
		struct class_row *row;
		const char *name;

		if (!cc->live && !cc->garbage)
			continue;
		name = cc->name ? cc->name : class_namer_key_name(cn, row_class(cc, cn), cc->kind);
		if (wanted && !wanted(ctx, name))
			continue;
		row = report_row(r, name);
		if (!row)
			return -ENOMEM;
		row->census.have = true;
		if (when == CENSUS_AT_START) {
			row->census.live_start += cc->live;
			continue;
		}
		row->census.live_end += cc->live;
		row->census.bytes_end += cc->bytes;
		row->census.old_end += cc->old;
		row->census.garbage_end += cc->garbage;
		if (c->compared) {
			row->census.have_new = true;
			row->census.new_alive += cc->new_alive;
			row->census.new_retained += cc->new_aged;
			row->census.new_unaged += cc->new_unaged;
			row->census.new_old += cc->new_old;
		}
	}
	return 0;
}

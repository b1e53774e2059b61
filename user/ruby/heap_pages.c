// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include "heap_pages.h"
#include "ruby_caps.h"
#include "target_mem.h"

int heap_page_table_find(pid_t pid, const struct ruby_layout *l, uint64_t objspace,
			 struct heap_page_table *t)
{
	uint64_t sorted;
	int ret;

	memset(t, 0, sizeof(*t));
	if ((ret = target_read_u64(pid, objspace + l->objspace_sorted, &sorted)))
		return ret;
	if (l->sorted_darray_data) {
		if (sorted && (ret = target_read_u64(pid, sorted, &t->npages)))
			return ret;
		if (sorted)
			t->addr = sorted + l->sorted_darray_data;
	} else {
		if ((ret =
			 target_read_u64(pid, objspace + l->objspace_allocated_pages, &t->npages)))
			return ret;
		t->addr = sorted;
	}
	return t->addr && t->npages && t->npages <= RUBY_MAX_HEAP_PAGES ? 0 : -ERANGE;
}

int heap_page_table_read(pid_t pid, const struct heap_page_table *t, uint64_t *pages)
{
	/* One read; Ruby may realloc the table meanwhile: its pages are tested anyway. */
	return target_read(pid, t->addr, pages, t->npages * sizeof(*pages));
}

size_t heap_page_geo_bytes(const struct ruby_layout *l)
{
	size_t n = l->page_start + 8;

	if (l->page_total_slots + 2 > n)
		n = l->page_total_slots + 2;
	if (l->pool_count > 1 && l->page_slot_size + 2 > n)
		n = l->page_slot_size + 2;
	return n;
}

void heap_page_geo_of(const struct ruby_layout *l, const uint8_t *hdr, struct heap_page_geo *g)
{
	uint16_t total, size = (uint16_t) l->slot_size;

	memcpy(&g->start, hdr + l->page_start, 8);
	memcpy(&total, hdr + l->page_total_slots, 2);
	if (l->pool_count > 1)
		memcpy(&size, hdr + l->page_slot_size, 2);
	g->nslots = total;
	g->slot_size = size;
	g->body = g->start & ~(uint64_t) (l->page_size - 1);
}

bool heap_page_fits(const struct ruby_layout *l, const struct heap_page_geo *g)
{
	if (!g->nslots || g->nslots > l->max_slots || g->slot_size < l->slot_size ||
	    g->slot_size > l->max_slot_size || g->slot_size % l->slot_size)
		return false;
	/* the body's first word is its heap_page_header: slots start after it */
	return g->start - g->body >= 8 &&
	       g->start - g->body + (uint64_t) g->nslots * g->slot_size <= l->page_size;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The graph's nodes numbered from the heap page table, and found by address (refgraph_impl.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"
#include "heap_caps.h"
#include "heap_pages.h"
#include "refgraph_impl.h"
#include "target_mem.h"

/* One page of the table numbered: its slots are the next nodes, its body found by address. */
static int add_page(struct refgraph *g, uint64_t page, const struct heap_page_geo *p, char *err,
		    size_t errlen)
{
	g->pages[g->npages] = (struct rg_page){page, p->start, p->nslots, p->slot_size, g->nnodes};
	if ((uint64_t) g->nnodes + p->nslots >= RG_NONE / 2)
		return rbm_fail(err, errlen, -E2BIG, "more than 2^31 heap slots");
	g->nnodes += p->nslots;
	if (u64map_put(&g->by_body, p->body, (void *) (uintptr_t) (g->npages + 1)))
		return rbm_fail(err, errlen, -ENOMEM, "out of memory");
	g->npages++;
	return 0;
}

/* The page table: where each page's slots are, read before the walk to number the nodes. */
int refgraph_read_pages(struct refgraph *g, uint64_t objspace, char *err, size_t errlen)
{
	const struct ruby_layout *l = g->l;
	struct heap_page_table t;
	uint64_t *table;
	size_t geo_bytes = heap_page_geo_bytes(l);
	uint8_t *geo;
	bool *ok;
	size_t i;
	int ret;

	ret = heap_page_table_find(g->pid, l, objspace, &t);
	if (ret == -ERANGE)
		return rbm_fail(err, errlen, -EINVAL,
			    "the heap page table has %llu pages (the cap is %u, 2^24)",
			    (unsigned long long) t.npages, RUBY_MAX_HEAP_PAGES);
	if (ret)
		return rbm_fail(err, errlen, ret, "cannot read the heap page table: %s",
			    strerror(-ret));
	table = malloc(t.npages * sizeof(*table));
	geo = malloc(t.npages * geo_bytes);
	ok = calloc(t.npages, sizeof(*ok));
	g->pages = calloc(t.npages, sizeof(*g->pages));
	if (!table || !geo || !ok || !g->pages) {
		ret = rbm_fail(err, errlen, -ENOMEM, "out of memory for %llu pages",
			   (unsigned long long) t.npages);
		goto out;
	}
	ret = heap_page_table_read(g->pid, &t, table);
	if (ret) {
		rbm_fail(err, errlen, ret, "cannot read the heap page table: %s", strerror(-ret));
		goto out;
	}
	target_read_many(g->pid, table, t.npages, geo_bytes, geo, ok);
	for (i = 0; i < t.npages; i++) {
		struct heap_page_geo p;

		heap_page_geo_of(l, geo + i * geo_bytes, &p);
		if (!ok[i] || !heap_page_fits(l, &p))
			continue; /* emptied (3.4 keeps them, 0 slots), or not a page */
		if ((ret = add_page(g, table[i], &p, err, errlen)))
			goto out;
	}
	ret = g->npages
		  ? 0
		  : rbm_fail(err, errlen, -EINVAL, "no heap page fits Ruby %s's layout", l->series);
out:
	free(table);
	free(geo);
	free(ok);
	return ret;
}

/* addr's node in page p, or RG_NONE. */
static uint32_t node_in(const struct rg_page *p, uint64_t addr)
{
	uint64_t off;

	if (!p || addr < p->start)
		return RG_NONE;
	off = addr - p->start;
	if (off % p->slot_size || off / p->slot_size >= p->nslots)
		return RG_NONE;
	return p->first + (uint32_t) (off / p->slot_size);
}

uint32_t refgraph_node(const struct refgraph *g, uint64_t addr)
{
	const struct rg_page *hint = NULL;

	return refgraph_node_at(g, addr, &hint);
}

uint32_t refgraph_node_at(const struct refgraph *g, uint64_t addr, const struct rg_page **hint)
{
	uint32_t n = node_in(*hint, addr);
	uintptr_t i;

	if (n != RG_NONE)
		return n;
	i = (uintptr_t) u64map_get(&g->by_body, addr & ~(uint64_t) (g->l->page_size - 1));
	if (!i)
		return RG_NONE;
	*hint = &g->pages[i - 1];
	return node_in(*hint, addr);
}

const struct rg_page *refgraph_page_of(const struct refgraph *g, uint32_t n)
{
	size_t lo = 0, hi = g->npages;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rg_page *p = &g->pages[mid];

		if (n < p->first)
			hi = mid;
		else if (n >= p->first + p->nslots)
			lo = mid + 1;
		else
			return p;
	}
	return NULL;
}

uint64_t refgraph_addr(const struct refgraph *g, uint32_t n, uint32_t *slot_size)
{
	const struct rg_page *p = refgraph_page_of(g, n);

	if (!p)
		return 0;
	if (slot_size)
		*slot_size = p->slot_size;
	return p->start + (uint64_t) (n - p->first) * p->slot_size;
}

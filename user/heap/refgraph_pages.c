// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The graph's nodes numbered from the heap page table (refgraph_impl.h). */
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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* verdict_run.h: the start's walk of the leak verdict, kept for the end (or the next period). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "accumulation.h"
#include "clock.h"
#include "diag.h"
#include "target_mem.h"
#include "verdict_run.h"

#define FREE_NULL(p)                                                                               \
	do {                                                                                       \
		free(p);                                                                           \
		(p) = NULL;                                                                        \
	} while (0)

static uint64_t read_compact_count(pid_t pid, uint64_t addr)
{
	uint64_t n;

	return addr && target_read_u64(pid, addr, &n) == 0 ? n : ~(uint64_t) 0;
}

/*
 * What each node kept alive of the objects the start's census saw: the
 * walk, read while the target runs, also meets objects made after the
 * census, which the end's comparison calls new.
 */
static int weigh_start(struct verdict_base *b, const struct census *start)
{
	uint8_t *counted = calloc((size_t) b->g.nnodes + 1, 1);
	struct census_hint hint = {0};
	unsigned int age;
	bool unprotected;
	uint32_t pi, j;

	if (!counted)
		return -ENOMEM;
	/* page by page: each page looked up once in the census */
	for (pi = 0; pi < b->g.npages; pi++) {
		const struct rg_page *p = &b->g.pages[pi];

		for (j = 0; j < p->nslots && p->first + j < b->g.nnodes; j++)
			counted[p->first + j] =
			    census_slot_info_at(start, p->start + (uint64_t) j * p->slot_size, &age,
						&unprotected, &hint) == SLOT_LIVE;
	}
	accum_weigh(&b->d, counted, b->g.bytes);
	free(counted);
	return 0;
}

void verdict_base_take(struct verdict_base *b, struct ruby_target *t, uint64_t compact_count_addr,
		       const struct census *start)
{
	struct root_set roots = {0};
	double t0 = now_seconds();
	char err[512];
	int ret;

	memset(b, 0, sizeof(*b));
	b->compact_count = read_compact_count(t->pid, compact_count_addr);
	if (why_walk_graph(t, &roots, &b->g, err, sizeof(err))) {
		snprintf(b->why_not, sizeof(b->why_not), "the start's heap walk failed: %s", err);
		vm_roots_free(&roots);
		return;
	}
	b->g.meta = NULL; /* the walk's context is closed */
	ret = dominators_of_graph(&b->d, &b->g, &roots) ?: weigh_start(b, start);
	vm_roots_free(&roots);
	if (ret) {
		snprintf(b->why_not, sizeof(b->why_not), "the start's dominators: %s",
			 strerror(-ret));
		refgraph_free(&b->g);
		return;
	}
	/*
	 * Kept: addresses to nodes, their size, what each kept alive (a node
	 * the start's census saw weighs one object at least: that says live).
	 */
	FREE_NULL(b->g.targets);
	FREE_NULL(b->g.off);
	FREE_NULL(b->g.sel);
	FREE_NULL(b->d.idom);
	FREE_NULL(b->d.order);
	FREE_NULL(b->g.state);
	FREE_NULL(b->g.bytes);
	b->bytes = (uint64_t) b->g.nnodes * (sizeof(*b->d.dom_bytes) + sizeof(*b->d.dom_objects) +
					     (b->g.size ? sizeof(*b->g.size) : 0)) +
		   b->g.npages * sizeof(*b->g.pages);
	b->at = now_seconds();
	b->seconds = b->at - t0;
	b->taken = true;
	rbm_info("verdict: the start's walk: %llu live objects in %.0f ms, %llu bytes kept",
		 (unsigned long long) b->g.live, b->seconds * 1e3, (unsigned long long) b->bytes);
}

void verdict_base_free(struct verdict_base *b)
{
	refgraph_free(&b->g);
	dominators_free(&b->d);
	memset(b, 0, sizeof(*b));
}

/*
 * The end's walk as the next period's start: addresses to nodes, what each
 * keeps alive of what the end's census saw (dom's sums, reweighed), sizes.
 */
int verdict_base_from(struct verdict_base *b, const struct refgraph *g,
		     const struct dominators *dom, uint64_t compact_count)
{
	size_t n1 = (size_t) g->nnodes + 1, i;

	memset(b, 0, sizeof(*b));
	b->g.pid = g->pid;
	b->g.l = g->l;
	b->g.nnodes = g->nnodes;
	b->g.npages = g->npages;
	b->g.pages = malloc((g->npages + 1) * sizeof(*g->pages));
	b->g.size = g->size ? malloc(n1 * sizeof(*g->size)) : NULL;
	b->d.n = dom->n;
	b->d.dom_bytes = malloc(n1 * sizeof(*dom->dom_bytes));
	b->d.dom_objects = malloc(n1 * sizeof(*dom->dom_objects));
	if (!b->g.pages || (g->size && !b->g.size) || !b->d.dom_bytes || !b->d.dom_objects)
		return -ENOMEM;
	memcpy(b->g.pages, g->pages, g->npages * sizeof(*g->pages));
	if (g->size)
		memcpy(b->g.size, g->size, g->nnodes * sizeof(*g->size));
	memcpy(b->d.dom_bytes, dom->dom_bytes, n1 * sizeof(*dom->dom_bytes));
	memcpy(b->d.dom_objects, dom->dom_objects, n1 * sizeof(*dom->dom_objects));
	u64map_for_each(&g->by_body, i)
	if (u64map_put(&b->g.by_body, g->by_body.keys[i], g->by_body.values[i]))
		return -ENOMEM;
	b->compact_count = compact_count;
	b->bytes = (uint64_t) g->nnodes * 16 + g->npages * sizeof(*g->pages);
	b->at = now_seconds();
	b->taken = true;
	return 0;
}

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
static int weigh_start(struct verdict_base *b, struct dominators *d, const struct census *start)
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
	accum_weigh(d, counted, b->g.bytes);
	free(counted);
	return 0;
}

/* Only the pages of g stay: addresses to nodes. */
static void keep_pages_only(struct refgraph *g)
{
	FREE_NULL(g->targets);
	FREE_NULL(g->off);
	FREE_NULL(g->sel);
	FREE_NULL(g->picked);
	FREE_NULL(g->state);
	FREE_NULL(g->bytes);
	FREE_NULL(g->size);
	FREE_NULL(g->parts);
	g->cap_edges = g->cap_sel = g->cap_parts = 0;
}

static uint64_t base_bytes(const struct verdict_base *b)
{
	return node_figures_bytes(&b->fig) + b->g.npages * sizeof(*b->g.pages) +
	       b->g.by_body.cap * (sizeof(uint64_t) + sizeof(void *));
}

void verdict_base_take(struct verdict_base *b, struct ruby_target *t, uint64_t compact_count_addr,
		       const struct census *start)
{
	struct root_set roots = {0};
	struct dominators d = {0};
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
	ret = dominators_of_graph(&d, &b->g, &roots);
	vm_roots_free(&roots);
	if (!ret) {
		/* the tree's sums need only the result's arrays: the edges go first */
		FREE_NULL(b->g.targets);
		FREE_NULL(b->g.off);
		ret = weigh_start(b, &d, start) ?:
		      node_figures_build(&b->fig, &b->g, d.dom_objects, d.dom_bytes);
	}
	dominators_free(&d);
	if (ret) {
		snprintf(b->why_not, sizeof(b->why_not), "the start's dominators: %s",
			 strerror(-ret));
		node_figures_free(&b->fig);
		refgraph_free(&b->g);
		return;
	}
	keep_pages_only(&b->g);
	b->bytes = base_bytes(b);
	b->at = now_seconds();
	b->seconds = b->at - t0;
	b->taken = true;
	rbm_info("verdict: the start's walk: %llu live objects in %.0f ms, %llu bytes kept "
		 "(%u of %u nodes not plain)",
		 (unsigned long long) b->g.live, b->seconds * 1e3, (unsigned long long) b->bytes,
		 b->fig.nfig, b->fig.n);
}

void verdict_base_free(struct verdict_base *b)
{
	refgraph_free(&b->g);
	node_figures_free(&b->fig);
	memset(b, 0, sizeof(*b));
}

/*
 * The end's walk as the next period's start: addresses to nodes, what each
 * keeps alive of what the end's census saw (dom's sums, reweighed), sizes.
 */
int verdict_base_from(struct verdict_base *b, const struct refgraph *g,
		      const struct dominators *dom, uint64_t compact_count)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	b->g.pid = g->pid;
	b->g.l = g->l;
	b->g.nnodes = g->nnodes;
	b->g.npages = g->npages;
	b->g.pages = malloc((g->npages + 1) * sizeof(*g->pages));
	if (!b->g.pages)
		return -ENOMEM;
	memcpy(b->g.pages, g->pages, g->npages * sizeof(*g->pages));
	u64map_for_each(&g->by_body, i)
	if (u64map_put(&b->g.by_body, g->by_body.keys[i], g->by_body.values[i]))
		return -ENOMEM;
	if (node_figures_build(&b->fig, g, dom->dom_objects, dom->dom_bytes))
		return -ENOMEM;
	b->compact_count = compact_count;
	b->bytes = base_bytes(b);
	b->at = now_seconds();
	b->taken = true;
	return 0;
}

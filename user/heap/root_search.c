// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The search under every retainer path (retainers.h): breadth first over
 * the reference graph from every root at once, the exact roots before the
 * conservative ones.
 */
#include <errno.h>
#include <stdlib.h>
#include "retainers.h"

/* Roots [from, to) at depth 0, in their order: the first of two equal paths wins. */
static size_t seed(const struct refgraph *g, const struct root_set *roots, size_t from, size_t to,
		   uint32_t *parent, uint32_t *queue, size_t tail)
{
	size_t i;

	for (i = from; i < to; i++) {
		uint32_t n = refgraph_node(g, roots->r[i].value);

		if (n == RG_NONE || !(g->state[n] & RG_LIVE) || parent[n] != RG_NONE)
			continue;
		parent[n] = g->nnodes + (uint32_t) i;
		queue[tail++] = n;
	}
	return tail;
}

/* Breadth first from queue[head, tail): returns the new tail. */
static size_t spread(const struct refgraph *g, uint32_t *parent, uint32_t *queue, size_t head,
		     size_t tail)
{
	uint64_t e;

	while (head < tail) {
		uint32_t n = queue[head++];

		for (e = g->off[n]; e < g->off[n + 1]; e++) {
			uint32_t m = g->targets[e];

			if (parent[m] != RG_NONE || !(g->state[m] & RG_LIVE))
				continue;
			parent[m] = n;
			queue[tail++] = m;
		}
	}
	return tail;
}

/*
 * The exact roots first, then what only the conservative ones (machine
 * stacks, the last roots->conservative) reach: a path through a stack word
 * is the last resort.
 */
int64_t retainers_search_split(const struct refgraph *g, const struct root_set *roots,
			       uint32_t *parent, uint64_t *conservative_only)
{
	uint32_t *queue = malloc((size_t) g->nnodes * sizeof(*queue) + 4);
	size_t exact = roots->n - (roots->conservative < roots->n ? roots->conservative : roots->n);
	size_t tail, i;

	if (!queue)
		return -ENOMEM;
	for (i = 0; i < g->nnodes; i++)
		parent[i] = RG_NONE;
	tail = spread(g, parent, queue, 0, seed(g, roots, 0, exact, parent, queue, 0));
	i = tail;
	tail = spread(g, parent, queue, i, seed(g, roots, exact, roots->n, parent, queue, tail));
	if (conservative_only)
		*conservative_only = tail - i;
	free(queue);
	return (int64_t) tail;
}

int64_t retainers_search(const struct refgraph *g, const struct root_set *roots, uint32_t *parent)
{
	return retainers_search_split(g, roots, parent, NULL);
}

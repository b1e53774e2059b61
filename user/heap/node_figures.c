// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* node_figures.h: the start's figures, two bits a plain node and 12 bytes another. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "node_figures.h"

static bool bit(const uint64_t *bits, uint32_t v)
{
	return bits[v / 64] >> (v % 64) & 1;
}

static void set_bit(uint64_t *bits, uint32_t v)
{
	bits[v / 64] |= (uint64_t) 1 << (v % 64);
}

/* The seen and odd bits from the pages (a plain node's bytes are its slot's). */
static uint32_t mark(struct node_figures *f, const struct refgraph *g, const uint32_t *objects,
		     const uint64_t *bytes)
{
	uint32_t odd = 0, pi, j;

	for (pi = 0; pi < g->npages; pi++) {
		const struct rg_page *p = &g->pages[pi];

		for (j = 0; j < p->nslots && p->first + j < f->n; j++) {
			uint32_t v = p->first + j;

			if (!objects[v])
				continue;
			set_bit(f->seen, v);
			if (objects[v] == 1 && bytes[v] == p->slot_size && !(g->size && g->size[v]))
				continue;
			set_bit(f->odd, v);
			odd++;
		}
	}
	return odd;
}

static int keep_odd(struct node_figures *f, const struct refgraph *g, const uint32_t *objects,
		    const uint64_t *bytes)
{
	uint32_t words = (f->n + 63) / 64, w, k = 0;

	for (w = 0; w < words; w++) {
		uint64_t b = f->odd[w];

		f->rank[w] = k;
		while (b) {
			uint32_t v = w * 64 + (uint32_t) __builtin_ctzll(b);

			b &= b - 1;
			f->fig[k] = (struct node_fig){
			    .objects = objects[v],
			    .size = g->size ? g->size[v] : 0,
			    .bytes = bytes[v] < UINT32_MAX ? (uint32_t) bytes[v] : UINT32_MAX,
			};
			if (bytes[v] >= UINT32_MAX &&
			    u64map_put(&f->big, (uint64_t) v + 1, (void *) (uintptr_t) bytes[v]))
				return -ENOMEM;
			k++;
		}
	}
	f->rank[words] = k;
	return 0;
}

int node_figures_build(struct node_figures *f, const struct refgraph *g, const uint32_t *objects,
		       const uint64_t *bytes)
{
	size_t words = ((size_t) g->nnodes + 63) / 64;

	memset(f, 0, sizeof(*f));
	f->n = g->nnodes;
	f->sizes = g->size != NULL;
	f->seen = calloc(words + 1, sizeof(*f->seen));
	f->odd = calloc(words + 1, sizeof(*f->odd));
	f->rank = malloc((words + 1) * sizeof(*f->rank));
	if (!f->seen || !f->odd || !f->rank)
		return -ENOMEM;
	f->nfig = mark(f, g, objects, bytes);
	f->fig = malloc(((size_t) f->nfig + 1) * sizeof(*f->fig));
	if (!f->fig)
		return -ENOMEM;
	return keep_odd(f, g, objects, bytes);
}

bool node_figures_seen(const struct node_figures *f, uint32_t v)
{
	return v < f->n && bit(f->seen, v);
}

bool node_figures_get(const struct node_figures *f, const struct refgraph *g, uint32_t v,
		      struct node_kept *out)
{
	const struct node_fig *x;
	uint32_t slot_size = 0;
	uint64_t below;

	if (!node_figures_seen(f, v))
		return false;
	if (!bit(f->odd, v)) {
		refgraph_addr(g, v, &slot_size);
		*out = (struct node_kept){1, slot_size, f->sizes ? 0 : -1};
		return true;
	}
	below = f->odd[v / 64] & (((uint64_t) 1 << (v % 64)) - 1);
	x = &f->fig[f->rank[v / 64] + (uint32_t) __builtin_popcountll(below)];
	*out = (struct node_kept){
	    .objects = x->objects,
	    .bytes = x->bytes < UINT32_MAX
			 ? x->bytes
			 : (uint64_t) (uintptr_t) u64map_get(&f->big, (uint64_t) v + 1),
	    .size = f->sizes ? (int64_t) x->size : -1,
	};
	return true;
}

uint64_t node_figures_bytes(const struct node_figures *f)
{
	uint64_t words = ((uint64_t) f->n + 63) / 64 + 1;

	return words * (2 * sizeof(uint64_t) + sizeof(uint32_t)) +
	       (uint64_t) f->nfig * sizeof(*f->fig) +
	       f->big.cap * (sizeof(uint64_t) + sizeof(void *));
}

void node_figures_free(struct node_figures *f)
{
	free(f->seen);
	free(f->odd);
	free(f->rank);
	free(f->fig);
	u64map_free(&f->big, NULL);
	memset(f, 0, sizeof(*f));
}

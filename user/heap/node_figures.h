/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What each node of a walked graph kept alive (its dominated objects and
 * bytes) and its size (a container's entries), kept compactly from one
 * walk to the next: the leak verdict compares the end's figures with the
 * start's.  Most nodes are plain: a leaf that keeps only itself alive,
 * holds no entries and owns no memory beyond its slot.  A plain node costs
 * two bits (seen, and not odd); only the others keep their figures, 12
 * bytes each, found by a rank over the bits (no search).  So a heap of a
 * million objects keeps a few MB where whole arrays (16 B a node) took 16.
 */
#ifndef RBM_NODE_FIGURES_H
#define RBM_NODE_FIGURES_H
#include <stdbool.h>
#include <stdint.h>
#include "refgraph.h"
#include "u64map.h"

struct node_fig {
	uint32_t objects, size;
	uint32_t bytes; /* UINT32_MAX: in big, by node + 1 */
};

struct node_figures {
	uint32_t n;	  /* nodes */
	uint64_t *seen;	  /* bit per node: it kept one object alive at least (the census saw it) */
	uint64_t *odd;	  /* bit per node: not plain, its figures in fig[] */
	uint32_t *rank;	  /* per 64 nodes: odd nodes before them */
	struct node_fig *fig;
	uint32_t nfig;
	struct u64map big; /* node + 1 -> bytes, for 4 GiB and more */
	bool sizes;	   /* the graph had sizes */
};

/* A node's figures as they were. */
struct node_kept {
	uint64_t objects, bytes;
	int64_t size; /* -1: no sizes were kept */
};

/*
 * Keeps, for each node of g, objects[v] and bytes[v] (the dominators'
 * sums) and g->size[v] (if g has sizes).  A node is plain when it kept one
 * object, bytes equal to its slot's size, and no entries.  0 or -ENOMEM.
 */
int node_figures_build(struct node_figures *f, const struct refgraph *g, const uint32_t *objects,
		       const uint64_t *bytes);

/* Whether node v kept anything alive (false past the end). */
bool node_figures_seen(const struct node_figures *f, uint32_t v);

/* Node v's figures (g: the graph f was built from, its pages); false if not seen. */
bool node_figures_get(const struct node_figures *f, const struct refgraph *g, uint32_t v,
		      struct node_kept *out);

/* The bytes it holds. */
uint64_t node_figures_bytes(const struct node_figures *f);

void node_figures_free(struct node_figures *f);

#endif

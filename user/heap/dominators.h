/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Dominators of the reference graph (refgraph.h): node d dominates node n
 * when every path from a root to n goes through d, so freeing d's only
 * holder frees n too.  The roots hang from one virtual root (node number
 * n of an n-node graph), which dominates what two roots share.  From the
 * tree: what each node keeps alive (its dominated objects and bytes, its
 * own included), and the nodes in an order where each comes after its
 * immediate dominator, for sums down or up the tree.
 *
 * Used by `why` (what each holder on a path keeps alive) and by the leak
 * verdict (the nearest old node above the new objects, and how much more
 * it keeps alive at the end than at the start).
 */
#ifndef RBM_DOMINATORS_H
#define RBM_DOMINATORS_H
#include <stddef.h>
#include <stdint.h>
#include "refgraph.h"
#include "vm_roots.h"

struct dominators {
	uint32_t n;		/* nodes of the graph; node n is the virtual root */
	uint32_t *idom;		/* n + 1: immediate dominator; RG_NONE: unreached, and the root's */
	uint64_t *dom_bytes;	/* n + 1: bytes of the node and of what it dominates */
	uint32_t *dom_objects;	/* n + 1: objects, likewise (the virtual root not counted) */
	uint32_t *order;	/* the reached nodes (virtual root first), each after its idom */
	uint32_t nreached;	/* entries of order */
	double seconds;

	/* the most memory it held at once, the result included */
	uint64_t peak_bytes;
};

/*
 * Over a graph of n nodes in CSR form (node i's successors are
 * targets[off[i] .. off[i + 1])), from roots[0 .. nroots) (node numbers;
 * any >= n is skipped), each node weighing bytes[i] (NULL: 0).  Pure: for
 * unit tests and the bench.  0 or -ENOMEM; dominators_free either way.
 */
int dominators_compute(struct dominators *d, uint32_t n, const uint32_t *off,
		       const uint32_t *targets, const uint32_t *roots, size_t nroots,
		       const uint32_t *bytes);

/* Over a walked heap: its roots' values that are nodes of g, its nodes' bytes (g->bytes). */
int dominators_of_graph(struct dominators *d, const struct refgraph *g,
			const struct root_set *roots);

void dominators_free(struct dominators *d);

#endif

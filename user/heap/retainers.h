/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Retainer paths: a breadth-first search over the reference graph
 * (refgraph.h) from every root at once (vm_roots.h, in their order) gives
 * each reachable object the shortest path from a root, preferring the
 * earlier root of two equally short ones.  Each selected object's path is
 * then read again from the running target, root first and edge by edge
 * (refs_decode_now): an edge whose parent no longer references its child
 * drops the path (counted), and the labels that survive are put into words
 * (refs_names.h) and summed into the why model by root, labels and
 * classes, each object on it with what it keeps alive (its dominated
 * bytes, when the dominators were computed).
 *
 * Memory: a u32 parent and a u32 queue entry per node for the search, and
 * the decoded references of each object on a printed path (each decoded
 * once, shared by every path through it).
 */
#ifndef RBM_RETAINERS_H
#define RBM_RETAINERS_H
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include "dominators.h"
#include "refgraph.h"
#include "refs_names.h"
#include "vm_roots.h"
#include "why_model.h"

/* Paths longer than this keep their first and last half; the middle is said in one edge. */
#define WHY_MAX_EDGES 32

struct retainers_in {
	struct refgraph *g;
	const struct root_set *roots;
	struct refs_namer *namer;
	const struct dominators *dom;	     /* NULL: what each holder keeps alive is not known */
	const char *const *target_names;     /* by the target numbers the selection gave */
	const struct why_site *target_sites; /* NULL, or the class's top site per target */
	size_t ntargets;
	bool sel_only; /* only g->sel, not the walk's picks (g->picked) */
	/* The allocation site of a traced object; NULL: none known */
	const struct why_site *(*site_of)(void *ctx, uint64_t addr);
	void *site_ctx;
};

/* Finds, re-verifies, names and sums every selected object's path into out.  0 or -errno. */
int retainers_explain(const struct retainers_in *in, struct why_report *out, char *err,
		      size_t errlen);

/*
 * The search alone, for tests and the bench: parent[] per node (RG_NONE:
 * unreached; >= nnodes: a root, parent - nnodes its index in roots).
 * Returns how many nodes were reached, or -ENOMEM.
 */
int64_t retainers_search(const struct refgraph *g, const struct root_set *roots, uint32_t *parent);
/* The same; *conservative_only: the objects only machine stacks' roots reach. */
int64_t retainers_search_split(const struct refgraph *g, const struct root_set *roots,
			       uint32_t *parent, uint64_t *conservative_only);

#endif

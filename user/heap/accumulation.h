/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Accumulation points: where the objects new since the start of a trace
 * hang in the end's dominator tree (dominators.h).  The point of a new
 * object is its nearest dominator that is old (already alive at the
 * start): an old container that gathered it (a constant's Hash, a service
 * object's ivar).  A new object whose only old dominator is the virtual
 * root (two old holders share it, or a root holds it directly) has none.
 * Per-request containers are new themselves, so they are passed through
 * up to what holds them.  Pure: arrays in, sums out, for unit tests.
 */
#ifndef RBM_ACCUMULATION_H
#define RBM_ACCUMULATION_H
#include <stddef.h>
#include <stdint.h>
#include "dominators.h"

#define ACCUM_OLD 0	/* alive at the start */
#define ACCUM_NEW 1	/* not alive at the start */
#define ACCUM_SKIP 2	/* not judged: no census slot (counted in neither) */

struct accum_class {
	uint32_t class_hash; /* census_class_hash of its class key */
	uint64_t objects, bytes;
};

struct accum_point {
	uint32_t node;
	uint64_t new_objects, new_bytes; /* new objects it gathered */
	struct accum_class *classes;	 /* accum_classes: by class, most bytes first */
	size_t nclasses;
};

/*
 * The dominator tree's sums again, counting only the nodes whose counted[v]
 * is set (the objects a census saw: a walk read while the target runs also
 * meets objects made after it, which the census calls new): d->dom_objects
 * and d->dom_bytes (from bytes[], may be NULL) are rewritten.
 */
void accum_weigh(struct dominators *d, const uint8_t *counted, const uint32_t *bytes);

/*
 * point[v] for every node: the accumulation point of new (or skipped)
 * node v, or RG_NONE (old, unreached, or no old dominator).  Skipped nodes
 * pass through like new ones but are never counted.  0 or -ENOMEM.
 */
int accum_assign(const struct dominators *d, const uint8_t *newness, uint32_t *point);

/*
 * The points with their new objects summed (bytes[] per node, may be
 * NULL), in *out (malloc'd, *n of them).  0 or -ENOMEM.
 */
int accum_sum(const struct dominators *d, const uint32_t *point, const uint8_t *newness,
	      const uint32_t *bytes, struct accum_point **out, size_t *n);

/*
 * Fills the classes of the n points pts (chosen among accum_sum's) from
 * class_of(ctx, node), asked of their new nodes only, in node order.
 * 0 or -ENOMEM.
 */
int accum_classes(const struct dominators *d, const uint32_t *point, const uint8_t *newness,
		  const uint32_t *bytes, uint32_t (*class_of)(void *ctx, uint32_t node), void *ctx,
		  struct accum_point *pts, size_t n);
void accum_free(struct accum_point *pts, size_t n);

#endif

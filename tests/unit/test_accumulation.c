// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/heap/accumulation.c: new objects to the old node above them in the dominator tree. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "accumulation.h"

/*
 * A dominator tree given by hand: idom[] of n nodes (n: the virtual root),
 * order[] listing each node after its idom.
 */
static struct dominators tree(uint32_t n, const uint32_t *idom, const uint32_t *order,
			      uint32_t nreached)
{
	struct dominators d = {.n = n, .nreached = nreached};

	d.idom = malloc((n + 1) * sizeof(*d.idom));
	d.order = malloc(nreached * sizeof(*d.order));
	memcpy(d.idom, idom, (n + 1) * sizeof(*d.idom));
	memcpy(d.order, order, nreached * sizeof(*d.order));
	return d;
}

static void untree(struct dominators *d)
{
	free(d->idom);
	free(d->order);
}

/*
 *  V -> 0 (old Hash) -> 1 (new entry) -> 2 (new string)
 *  V -> 3 (new, a root holds it directly)
 *  V -> 4 (old) -> 5 (skipped: allocated after the end) -> 6 (new)
 *  7: unreached
 */
/* The class of a node from an array of them. */
static uint32_t from_array(void *ctx, uint32_t node)
{
	return ((const uint32_t *) ctx)[node];
}

static const uint32_t idom8[9] = {8, 0, 1, 8, 8, 4, 5, RG_NONE, RG_NONE};
static const uint32_t order8[8] = {8, 0, 3, 4, 1, 5, 2, 6};
static const uint8_t newness8[8] = {ACCUM_OLD, ACCUM_NEW, ACCUM_NEW, ACCUM_NEW,
				    ACCUM_OLD, ACCUM_SKIP, ACCUM_NEW, ACCUM_NEW};

Test(accumulation, new_objects_hang_from_the_nearest_old_dominator)
{
	struct dominators d = tree(8, idom8, order8, 8);
	uint32_t point[8];

	cr_assert_eq(accum_assign(&d, newness8, point), 0);
	cr_expect_eq(point[0], RG_NONE, "old nodes have no point");
	cr_expect_eq(point[1], 0);
	cr_expect_eq(point[2], 0, "a new container passes its objects up to the old one");
	cr_expect_eq(point[3], RG_NONE, "held by a root directly: no old holder of its own");
	cr_expect_eq(point[4], RG_NONE);
	cr_expect_eq(point[5], 4, "a skipped node passes through");
	cr_expect_eq(point[6], 4);
	cr_expect_eq(point[7], RG_NONE, "unreached");
	untree(&d);
}

Test(accumulation, sums_count_only_new_objects_and_their_classes)
{
	struct dominators d = tree(8, idom8, order8, 8);
	static const uint32_t bytes[8] = {1000, 40, 80, 40, 500, 40, 120, 40};
	static const uint32_t classes[8] = {11, 22, 33, 22, 11, 44, 33, 22};
	uint32_t point[8];
	struct accum_point *pts = NULL;
	size_t n = 0, i;

	cr_assert_eq(accum_assign(&d, newness8, point), 0);
	cr_assert_eq(accum_sum(&d, point, newness8, bytes, &pts, &n), 0);
	cr_assert_eq(n, 2);
	for (i = 0; i < n; i++) {
		if (pts[i].node == 0) {
			cr_expect_eq(pts[i].new_objects, 2);
			cr_expect_eq(pts[i].new_bytes, 120);
		} else {
			cr_expect_eq(pts[i].node, 4);
			cr_expect_eq(pts[i].new_objects, 1, "the skipped node is not counted");
			cr_expect_eq(pts[i].new_bytes, 120);
		}
	}
	cr_assert_eq(accum_classes(&d, point, newness8, bytes, from_array, (void *) classes, pts, n), 0);
	for (i = 0; i < n; i++) {
		if (pts[i].node != 0)
			continue;
		cr_assert_eq(pts[i].nclasses, 2);
		cr_expect_eq(pts[i].classes[0].class_hash, 33, "most bytes first");
		cr_expect_eq(pts[i].classes[0].bytes, 80);
		cr_expect_eq(pts[i].classes[1].class_hash, 22);
		cr_expect_eq(pts[i].classes[1].objects, 1);
	}
	accum_free(pts, n);
	untree(&d);
}

Test(accumulation, many_classes_all_kept)
{
	enum { N = 101 };
	uint32_t idom[N + 1], order[N + 1], point[N], classes[N];
	uint8_t newness[N];
	struct dominators d;
	struct accum_point *pts = NULL;
	size_t n = 0;
	uint32_t i;

	idom[0] = N;
	newness[0] = ACCUM_OLD;
	order[0] = N;
	order[1] = 0;
	for (i = 1; i < N; i++) {
		idom[i] = 0;
		newness[i] = ACCUM_NEW;
		classes[i] = i; /* a hundred classes under one point */
		order[i + 1] = i;
	}
	classes[0] = 0;
	idom[N] = RG_NONE;
	d = tree(N, idom, order, N + 1);
	cr_assert_eq(accum_assign(&d, newness, point), 0);
	cr_assert_eq(accum_sum(&d, point, newness, NULL, &pts, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(accum_classes(&d, point, newness, NULL, from_array, (void *) classes, pts, n), 0);
	cr_expect_eq(pts[0].nclasses, 100);
	cr_expect_eq(pts[0].new_objects, 100);
	accum_free(pts, n);
	untree(&d);
}

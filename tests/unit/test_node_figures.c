// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/heap/node_figures.c: each node's figures read back as they were
 * given, whether plain (kept as two bits) or not, across words of the
 * bitmaps, on pages of two slot sizes, with bytes past 4 GiB and no sizes.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include "node_figures.h"

#define N 200

/* Two pages: nodes 0..99 of 40-byte slots, 100..199 of 80-byte ones. */
static struct rg_page pages[2] = {
    {.start = 0x10000, .nslots = 100, .slot_size = 40, .first = 0},
    {.start = 0x20000, .nslots = 100, .slot_size = 80, .first = 100},
};

static uint32_t slot_of(uint32_t v)
{
	return v < 100 ? 40 : 80;
}

/* Figures with every kind: unseen, plain, and odd by objects, bytes or size. */
static void figures(uint32_t *objects, uint64_t *bytes, uint32_t *size)
{
	uint32_t v;

	for (v = 0; v < N; v++) {
		objects[v] = v % 7 == 0 ? 0 : 1;
		bytes[v] = objects[v] ? slot_of(v) : 0;
		size[v] = 0;
		if (v % 5 == 1)
			objects[v] = 3 + v, bytes[v] = 1000 + v;
		if (v % 11 == 2)
			bytes[v] += 17;
		if (v % 13 == 3 && objects[v])
			size[v] = v;
	}
	bytes[64] = 5ULL << 32, objects[64] = 9;
}

Test(node_figures, every_node_reads_back)
{
	uint32_t objects[N], size[N + 1];
	uint64_t bytes[N];
	struct refgraph g = {.pages = pages, .npages = 2, .nnodes = N, .size = size};
	struct node_figures f;
	struct node_kept k;
	uint32_t v, odd = 0;

	figures(objects, bytes, size);
	cr_assert_eq(node_figures_build(&f, &g, objects, bytes), 0);
	for (v = 0; v < N; v++) {
		bool plain = objects[v] == 1 && bytes[v] == slot_of(v) && !size[v];

		odd += objects[v] && !plain;
		cr_expect_eq(node_figures_seen(&f, v), objects[v] != 0, "node %u", v);
		if (!objects[v]) {
			cr_expect_not(node_figures_get(&f, &g, v, &k), "node %u", v);
			continue;
		}
		cr_assert(node_figures_get(&f, &g, v, &k), "node %u", v);
		cr_expect_eq(k.objects, objects[v], "node %u", v);
		cr_expect_eq(k.bytes, bytes[v], "node %u: %lu", v, (unsigned long) k.bytes);
		cr_expect_eq(k.size, (int64_t) size[v], "node %u", v);
	}
	cr_expect_eq(f.nfig, odd);
	cr_expect_lt(f.nfig, N, "plain nodes keep no figures");
	cr_expect_not(node_figures_seen(&f, N));
	cr_expect_not(node_figures_seen(&f, UINT32_MAX));
	node_figures_free(&f);
}

Test(node_figures, without_sizes_a_size_reads_unknown)
{
	uint32_t objects[N], size[N + 1];
	uint64_t bytes[N];
	struct refgraph g = {.pages = pages, .npages = 2, .nnodes = N};
	struct node_figures f;
	struct node_kept k;

	figures(objects, bytes, size);
	cr_assert_eq(node_figures_build(&f, &g, objects, bytes), 0);
	cr_assert(node_figures_get(&f, &g, 150, &k));
	cr_expect_eq(k.size, -1);
	cr_expect_eq(k.bytes, 80);
	cr_assert(node_figures_get(&f, &g, 1, &k));
	cr_expect_eq(k.size, -1);
	cr_expect_eq(k.objects, 4);
	node_figures_free(&f);
}

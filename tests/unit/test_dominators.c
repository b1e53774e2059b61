// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/heap/dominators.c: the dominator tree and what each node keeps
 * alive, checked against a brute force (take node d away: what the roots
 * no longer reach is what d dominates) on random small graphs of fixed
 * seeds, on hand-made shapes, and on a chain of a million (no recursion).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dominators.h"
#include "refgraph.h"

#define MAXN 14

struct tgraph {
	uint32_t n;
	uint32_t off[MAXN + 1];
	uint32_t targets[MAXN * MAXN];
	uint32_t roots[8];
	size_t nroots;
	uint32_t bytes[MAXN];
};

/* Builds a CSR from an edge list (pairs), in the order given. */
static void tg_edges(struct tgraph *t, uint32_t n, const uint32_t (*e)[2], size_t ne)
{
	uint32_t i, k = 0;
	size_t j;

	t->n = n;
	for (i = 0; i < n; i++) {
		t->off[i] = k;
		for (j = 0; j < ne; j++)
			if (e[j][0] == i)
				t->targets[k++] = e[j][1];
		t->bytes[i] = 40 + 8 * i;
	}
	t->off[n] = k;
}

/* What the roots reach with node skip taken away (skip >= n: nothing taken away). */
static void reach(const struct tgraph *t, uint32_t skip, bool *seen)
{
	uint32_t stack[MAXN * MAXN + 8], sp = 0, v, e;
	size_t i;

	memset(seen, 0, t->n * sizeof(*seen));
	for (i = 0; i < t->nroots; i++)
		if (t->roots[i] < t->n && t->roots[i] != skip && !seen[t->roots[i]]) {
			seen[t->roots[i]] = true;
			stack[sp++] = t->roots[i];
		}
	while (sp) {
		v = stack[--sp];
		for (e = t->off[v]; e < t->off[v + 1]; e++) {
			uint32_t c = t->targets[e];

			if (c != skip && !seen[c]) {
				seen[c] = true;
				stack[sp++] = c;
			}
		}
	}
}

/* Checks d against the brute force: idoms, what each keeps alive, the order. */
static void check(const struct tgraph *t, const struct dominators *d)
{
	bool all[MAXN], without[MAXN][MAXN], dom[MAXN][MAXN]; /* dom[a][b]: a dominates b */
	uint32_t a, b, reached = 0, pos[MAXN + 1];
	uint64_t total = 0;

	reach(t, RG_NONE, all);
	for (a = 0; a < t->n; a++)
		reach(t, a, without[a]);
	for (a = 0; a < t->n; a++)
		for (b = 0; b < t->n; b++)
			dom[a][b] = all[b] && (a == b || !without[a][b]);
	cr_assert_eq(d->n, t->n);
	for (b = 0; b < t->n; b++) {
		uint32_t want = RG_NONE, objects = 0;
		uint64_t bytes = 0;

		if (all[b]) {
			reached++;
			total += t->bytes[b];
			/* the idom: the strict dominator every other strict dominator dominates */
			want = t->n;
			for (a = 0; a < t->n; a++) {
				uint32_t c;
				bool below_all = a != b && dom[a][b];

				for (c = 0; c < t->n && below_all; c++)
					if (c != b && c != a && dom[c][b] && !dom[c][a])
						below_all = false;
				if (below_all)
					want = a;
			}
			for (a = 0; a < t->n; a++)
				if (dom[b][a]) {
					objects++;
					bytes += t->bytes[a];
				}
		}
		cr_expect_eq(d->idom[b], want, "node %u: idom %u, want %u", b, d->idom[b], want);
		cr_expect_eq(d->dom_objects[b], objects, "node %u: %u objects, want %u", b,
			     d->dom_objects[b], objects);
		cr_expect_eq(d->dom_bytes[b], bytes, "node %u: %llu bytes, want %llu", b,
			     (unsigned long long) d->dom_bytes[b], (unsigned long long) bytes);
	}
	cr_expect_eq(d->idom[t->n], RG_NONE);
	cr_expect_eq(d->dom_objects[t->n], reached);
	cr_expect_eq(d->dom_bytes[t->n], total);
	cr_assert_eq(d->nreached, reached + 1);
	cr_assert_eq(d->order[0], t->n);
	for (a = 0; a <= t->n; a++)
		pos[a] = RG_NONE;
	for (a = 0; a < d->nreached; a++) {
		cr_assert_leq(d->order[a], t->n);
		cr_assert_eq(pos[d->order[a]], RG_NONE, "node %u twice in order", d->order[a]);
		pos[d->order[a]] = a;
	}
	for (a = 1; a < d->nreached; a++) {
		uint32_t v = d->order[a];

		cr_assert(v < t->n && all[v]);
		cr_expect_lt(pos[d->idom[v]], a, "node %u before its idom", v);
	}
}

static void run_check(const struct tgraph *t)
{
	struct dominators d;

	cr_assert_eq(
	    dominators_compute(&d, t->n, t->off, t->targets, t->roots, t->nroots, t->bytes), 0);
	check(t, &d);
	dominators_free(&d);
}

#define EDGES(...) ((const uint32_t[][2]){__VA_ARGS__})
#define NE(...) (sizeof((const uint32_t[][2]){__VA_ARGS__}) / sizeof(uint32_t[2]))
#define GRAPH(t, n, ...) tg_edges(t, n, EDGES(__VA_ARGS__), NE(__VA_ARGS__))

Test(dominators, diamond)
{
	struct tgraph t = {.roots = {0}, .nroots = 1};
	struct dominators d;

	GRAPH(&t, 5, {0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4});
	cr_assert_eq(dominators_compute(&d, t.n, t.off, t.targets, t.roots, 1, t.bytes), 0);
	cr_expect_eq(d.idom[0], 5);
	cr_expect_eq(d.idom[1], 0);
	cr_expect_eq(d.idom[2], 0);
	cr_expect_eq(d.idom[3], 0);
	cr_expect_eq(d.idom[4], 3);
	cr_expect_eq(d.dom_objects[0], 5);
	cr_expect_eq(d.dom_objects[3], 2);
	cr_expect_eq(d.dom_bytes[3], t.bytes[3] + t.bytes[4]);
	dominators_free(&d);
	run_check(&t);
}

Test(dominators, cycle_and_self_loops)
{
	struct tgraph t = {.roots = {0}, .nroots = 1};

	GRAPH(&t, 5, {0, 1}, {1, 2}, {2, 3}, {3, 1}, {1, 1}, {3, 3}, {3, 4}, {4, 0});
	run_check(&t);
	t.roots[0] = 2;
	run_check(&t);
}

Test(dominators, two_roots_share)
{
	struct tgraph t = {.roots = {0, 1}, .nroots = 2};
	struct dominators d;

	/* 2 is held by both roots: only the virtual root dominates it, and 3 below it */
	GRAPH(&t, 5, {0, 2}, {1, 2}, {2, 3}, {1, 4});
	cr_assert_eq(dominators_compute(&d, t.n, t.off, t.targets, t.roots, 2, t.bytes), 0);
	cr_expect_eq(d.idom[2], 5);
	cr_expect_eq(d.idom[3], 2);
	cr_expect_eq(d.dom_objects[0], 1);
	cr_expect_eq(d.dom_objects[1], 2);
	cr_expect_eq(d.dom_objects[2], 2);
	cr_expect_eq(d.dom_objects[5], 5);
	dominators_free(&d);
	run_check(&t);
}

Test(dominators, unreached_and_bad_roots)
{
	struct tgraph t = {.roots = {9, 1, 1, 77}, .nroots = 4};
	struct dominators d;

	/* 0 and 3 are unreached (3 refers to 2, which does not make it reached) */
	GRAPH(&t, 4, {0, 1}, {3, 2}, {1, 2});
	cr_assert_eq(dominators_compute(&d, t.n, t.off, t.targets, t.roots, 4, t.bytes), 0);
	cr_expect_eq(d.idom[0], RG_NONE);
	cr_expect_eq(d.idom[3], RG_NONE);
	cr_expect_eq(d.dom_objects[0], 0);
	cr_expect_eq(d.dom_bytes[3], 0);
	cr_expect_eq(d.idom[2], 1);
	cr_expect_eq(d.nreached, 3);
	dominators_free(&d);
	run_check(&t);
	/* no root at all: only the virtual root */
	t.nroots = 0;
	run_check(&t);
}

Test(dominators, empty_graph)
{
	struct dominators d;
	uint32_t off[1] = {0};

	cr_assert_eq(dominators_compute(&d, 0, off, NULL, NULL, 0, NULL), 0);
	cr_expect_eq(d.nreached, 1);
	cr_expect_eq(d.order[0], 0);
	cr_expect_eq(d.idom[0], RG_NONE);
	cr_expect_eq(d.dom_objects[0], 0);
	dominators_free(&d);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

Test(dominators, random_against_brute_force)
{
	uint64_t seed;

	for (seed = 1; seed <= 3000; seed++) {
		uint64_t s = seed * 0x9e3779b97f4a7c15ULL;
		struct tgraph t = {0};
		uint32_t e[MAXN * 4][2];
		size_t ne = 0, i, want = 0;
		uint32_t n = 1 + rnd(&s) % MAXN, density = 1 + rnd(&s) % 4;

		want = n * density / 2 + rnd(&s) % (n + 1);
		for (i = 0; i < want && ne < MAXN * 4; i++) {
			e[ne][0] = rnd(&s) % n;
			e[ne][1] = rnd(&s) % n;
			ne++;
		}
		t.nroots = 1 + rnd(&s) % 3;
		for (i = 0; i < t.nroots; i++)
			t.roots[i] = rnd(&s) % (n + 1); /* n: not a node, skipped */
		tg_edges(&t, n, (const uint32_t(*)[2]) e, ne);
		run_check(&t);
	}
}

/* A chain of n nodes, i -> i + 1 (or i + 1 -> i, rooted at the end), each of 1 byte. */
static void chain(uint32_t n, bool backwards, uint32_t **off, uint32_t **targets)
{
	uint32_t i;

	*off = malloc(((size_t) n + 1) * sizeof(**off));
	*targets = malloc((size_t) n * sizeof(**targets));
	cr_assert(*off && *targets);
	for (i = 0; i < n; i++) {
		(*off)[i] = backwards ? (i ? i - 1 : 0) : i;
		if (backwards && i)
			(*targets)[i - 1] = i - 1;
		else if (!backwards && i + 1 < n)
			(*targets)[i] = i + 1;
	}
	(*off)[n] = n - 1;
}

Test(dominators, million_chain)
{
	const uint32_t n = 1000000;
	uint32_t *off, *targets, *bytes = malloc(n * sizeof(*bytes)), i, root = 0;
	struct dominators d;
	bool ok = true;

	cr_assert(bytes);
	for (i = 0; i < n; i++)
		bytes[i] = 1;
	chain(n, false, &off, &targets);
	cr_assert_eq(dominators_compute(&d, n, off, targets, &root, 1, bytes), 0);
	for (i = 1; i < n && ok; i++)
		ok = d.idom[i] == i - 1 && d.dom_objects[i] == n - i && d.dom_bytes[i] == n - i;
	cr_expect(ok, "chain: node %u", i - 1);
	cr_expect_eq(d.dom_bytes[0], n);
	cr_expect_eq(d.nreached, n + 1);
	dominators_free(&d);
	free(off);
	free(targets);

	/* backwards, rooted at the far end */
	chain(n, true, &off, &targets);
	root = n - 1;
	cr_assert_eq(dominators_compute(&d, n, off, targets, &root, 1, bytes), 0);
	for (i = 0, ok = true; i + 1 < n && ok; i++)
		ok = d.idom[i] == i + 1 && d.dom_objects[i] == i + 1;
	cr_expect(ok, "backwards chain: node %u", i - 1);
	dominators_free(&d);
	free(off);
	free(targets);
	free(bytes);
}

/*
 * A long chain whose end points back at every node of it, reached first
 * through the chain: every back edge asks for a compressed path as long as
 * the chain, in reverse preorder; without recursion this neither overflows
 * nor takes quadratic time.
 */
Test(dominators, chain_with_back_edges)
{
	const uint32_t n = 200000;
	uint32_t *off = malloc((n + 1) * sizeof(*off)), *targets = malloc(2 * n * sizeof(*targets));
	uint32_t i, k = 0, roots[2] = {0, n / 2};
	struct dominators d;
	bool ok = true;

	cr_assert(off && targets);
	for (i = 0; i < n; i++) {
		off[i] = k;
		if (i + 1 < n)
			targets[k++] = i + 1;
		else
			for (uint32_t j = 0; j < n - 1; j++)
				targets[k++] = j;
	}
	off[n] = k;
	cr_assert_eq(dominators_compute(&d, n, off, targets, roots, 2, NULL), 0);
	/* nodes after n / 2 hang from it; those before it, from the virtual root (two ways in) */
	for (i = 0; i < n && ok; i++)
		ok = d.idom[i] == (i <= n / 2 ? n : i - 1);
	cr_expect(ok, "node %u: idom %u", i - 1, d.idom[i - 1]);
	cr_expect_eq(d.dom_objects[n / 2], n - n / 2);
	cr_expect_eq(d.dom_bytes[n], 0);
	cr_expect_eq(d.dom_objects[n], n);
	dominators_free(&d);
	free(off);
	free(targets);
}

/* Over a refgraph: roots that are its live nodes, and only live nodes and edges. */
Test(dominators, of_graph_live_only)
{
	struct ruby_layout l = {0};
	struct refgraph g = {0};
	struct rg_page page = {
	    .page = 0x1000, .start = 0x7f0000010040, .nslots = 5, .slot_size = 40, .first = 0};
	uint32_t off[6] = {0, 2, 3, 4, 4, 4}, targets[4] = {1, 2, 3, 4};
	uint32_t bytes[5] = {40, 80, 120, 160, 200};
	uint8_t state[5] = {RG_LIVE, RG_LIVE, RG_LIVE, 0, RG_LIVE | RG_OPAQUE};
	struct root r[3] = {{.value = 0x7f0000010040}, {.value = 0x15}, {.value = 0x7f00000100b8}};
	struct root_set roots = {.r = r, .n = 3};
	struct dominators d;

	l.page_size = 65536;
	g.l = &l;
	g.pages = &page;
	g.npages = 1;
	g.nnodes = 5;
	g.state = state;
	g.off = off;
	g.targets = targets;
	g.bytes = bytes;
	cr_assert_eq(u64map_put(&g.by_body, 0x7f0000010000, (void *) 1), 0);
	/* roots: node 0, a Fixnum, node 3 (not live: skipped) */
	cr_assert_eq(refgraph_node(&g, r[2].value), 3);
	cr_assert_eq(dominators_of_graph(&d, &g, &roots), 0);
	cr_expect_eq(d.idom[0], 5);
	cr_expect_eq(d.idom[1], 0);
	cr_expect_eq(d.idom[2], 0);
	cr_expect_eq(d.idom[3], RG_NONE); /* not live, though 1 refers to it */
	cr_expect_eq(d.idom[4], 2);
	cr_expect_eq(d.dom_objects[5], 4);
	cr_expect_eq(d.dom_bytes[0], 40 + 80 + 120 + 200);
	cr_expect_eq(d.dom_bytes[1], 80);
	cr_expect_eq(d.dom_bytes[2], 120 + 200);
	dominators_free(&d);
	u64map_free(&g.by_body, NULL);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/heap/unexplained.c: the unreached nodes of a small hand-made graph
 * put under their heads (what nothing unreached references), a cycle with
 * no head headed by its first node, the groups keyed by the heads' class
 * read from the slots (here in this process's own memory: the "target" is
 * ourselves).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "refgraph.h"
#include "ruby_versions.h"
#include "unexplained.h"

#define N 8
#define KLASS_A 0x7000000100ull
#define KLASS_B 0x7000000200ull

Test(unexplained, heads_cycles_and_reached_nodes)
{
	static uint64_t slots[N][5];
	static const uint32_t edges[][2] = {{0, 1}, {1, 2}, {2, 6}, {4, 5}, {5, 4}, {6, 3}};
	uint32_t off[N + 1], targets[8], parent[N], k = 0, v;
	uint8_t state[N];
	struct ruby_layout l;
	struct rg_page page;
	struct refgraph g;
	struct unexp_groups u;
	size_t j;

	cr_assert_eq(ruby_versions_layout("3.1.2", &l), 0);
	/* 0 a String heading 1 (Array) and 2 (Hash); 3 a String alone (6 holds it: reached);
	 * 4 and 5 Hashes of class B in a cycle; 6 reached; 7 not live */
	for (v = 0; v < N; v++) {
		slots[v][0] = v == 0 || v == 3 ? 0x05 : v == 1 ? 0x07 : 0x08;
		slots[v][1] = v == 4 || v == 5 ? KLASS_B : KLASS_A;
		state[v] = v == 7 ? 0 : RG_LIVE;
		parent[v] = v == 6 ? N : v == 3 ? 6 : RG_NONE; /* 6: held by a root, 3 by 6 */
		off[v] = k;
		for (j = 0; j < sizeof(edges) / sizeof(edges[0]); j++)
			if (edges[j][0] == v)
				targets[k++] = edges[j][1];
	}
	off[N] = k;
	state[1] |= RG_YOUNG;
	memset(&g, 0, sizeof(g));
	page = (struct rg_page){.start = (uint64_t) (uintptr_t) slots, .nslots = N, .slot_size = 40};
	g.pid = getpid();
	g.l = &l;
	g.pages = &page;
	g.npages = 1;
	g.nnodes = N;
	g.state = state;
	g.off = off;
	g.targets = targets;
	cr_assert_eq(unexplained_group(&g, parent, &u), 0);
	/* 3 is reached through 6: not among them */
	cr_expect_eq(u.objects, 5, "0, 1, 2 under head 0; 4, 5 under the cycle's first");
	cr_expect_eq(u.young, 1);
	cr_assert_eq(u.n, 2);
	cr_expect_eq(u.g[0].objects, 3);
	cr_expect_eq(u.g[0].heads, 1);
	cr_expect_eq(u.g[0].type, 0x05, "headed by a String");
	cr_expect_eq(u.g[0].key, KLASS_A);
	cr_expect_eq(u.g[0].young, 1);
	cr_expect_eq(u.g[1].objects, 2);
	cr_expect_eq(u.g[1].heads, 1, "a cycle: its first node heads it");
	cr_expect_eq(u.g[1].type, 0x08);
	cr_expect_eq(u.g[1].key, KLASS_B);
	unexplained_free(&u);
}

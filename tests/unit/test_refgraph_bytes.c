// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/heap/refgraph_bytes.c: a node's bytes as the census counts them, a
 * Hash's st_table head read later (here from our own memory) and added,
 * and the cap at UINT32_MAX.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "rbmemtrace.h"
#include "refgraph_impl.h"

#define T_HASH 0x08
#define FLU(n) (1ULL << (12 + (n)))

Test(refgraph_bytes, slot_owned_and_st_table)
{
	const struct ruby_layout l = test_layout_of("3.1.7");
	uint32_t bytes[4] = {7, 7, 7, 7};
	struct refgraph g = {.pid = getpid(), .l = &l, .bytes = bytes};
	struct rg_bytes b = {0};
	uint8_t head[64] = {5}; /* 2^5 entries, with bins: 888 bytes (test_slots.c) */
	uint64_t bins = 0x5000, w[5];

	memcpy(head + 24, &bins, 8);
	/* "x" * 100 on 3.1.7: memsize 141 */
	w[0] = RB_T_STRING | FLU(1), w[1] = 0x1000, w[2] = 100, w[3] = 0x5000, w[4] = 100;
	cr_assert_eq(rg_bytes_note(&b, &g, 0, w, 40), 0);
	cr_expect_eq(bytes[0], 141);
	/* a Hash on an st_table: its slot now, its table once the heads are read */
	w[0] = T_HASH | FLU(3), w[2] = (uint64_t) (uintptr_t) head, w[3] = w[4] = 0;
	cr_assert_eq(rg_bytes_note(&b, &g, 1, w, 40), 0);
	cr_expect_eq(bytes[1], 40);
	/* a head that cannot be read adds nothing */
	w[2] = 8;
	cr_assert_eq(rg_bytes_note(&b, &g, 2, w, 40), 0);
	/* a String claiming more than 4 GiB: capped */
	w[0] = RB_T_STRING | FLU(1), w[2] = 1ULL << 40, w[3] = 0x5000, w[4] = 1ULL << 40;
	cr_assert_eq(rg_bytes_note(&b, &g, 3, w, 40), 0);
	cr_expect_eq(bytes[3], UINT32_MAX);
	rg_bytes_flush(&b, &g);
	cr_expect_eq(bytes[1], 40 + 888);
	cr_expect_eq(bytes[2], 40);
	cr_expect_eq(g.reads, 2);
	cr_expect_eq(b.n, 0);
	rg_bytes_free(&b);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/stacks.c: the rank lookup of Ruby 3.1's succinct bit vector, immediate receivers. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "stacks.h"

/* A synthetic succinct table: a set bit at every even position. */
struct fake_table {
	uint8_t bytes[48 + 80 * 2];
};

static int read_fake(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct fake_table *t = ctx;

	if (off + len > sizeof(t->bytes))
		return -1;
	memcpy(buf, t->bytes + off, len);
	return 0;
}

static uint32_t ranks_upto(uint32_t pos)
{
	return pos / 2 + 1; /* bits at 0, 2, 4, ... */
}

Test(stacks, succ_index_rank)
{
	struct fake_table t = {};
	uint64_t imm[6] = {};
	uint32_t pos, rank, b, small;

	for (pos = 0; pos < 54; pos++)
		imm[pos / 9] |= (uint64_t) ranks_upto(pos) << (7 * (pos % 9));
	memcpy(t.bytes, imm, sizeof(imm));
	for (b = 0; b < 2; b++) {
		uint8_t *block = t.bytes + 48 + b * 80;
		uint32_t base = 54 + b * 512, block_rank = ranks_upto(base - 1);
		uint64_t small_ranks = 0, bits[8] = {};

		memcpy(block, &block_rank, 4);
		for (pos = 0; pos < 512; pos++)
			if ((base + pos) % 2 == 0)
				bits[pos / 64] |= 1ULL << (pos % 64);
		for (small = 1; small < 8; small++)
			small_ranks |= (uint64_t) (ranks_upto(base + small * 64 - 1) - block_rank)
				       << (9 * (small - 1));
		memcpy(block + 8, &small_ranks, 8);
		memcpy(block + 16, bits, sizeof(bits));
	}
	for (pos = 0; pos < 54 + 1024; pos++) {
		cr_assert_eq(succ_index_rank(pos, read_fake, &t, &rank), 0, "pos %u", pos);
		cr_assert_eq(rank, ranks_upto(pos), "pos %u: %u != %u", pos, rank, ranks_upto(pos));
	}
}

/* A frame's receiver may be an immediate: its class comes from its tag (special_consts.h). */
Test(stacks, immediate_kinds)
{
	cr_expect_eq(immediate_kind_of(2001), IMMEDIATE_INTEGER, "Fixnum 1000");
	cr_expect_eq(immediate_kind_of(1), IMMEDIATE_INTEGER, "Fixnum 0");
	cr_expect_eq(immediate_kind_of(0x8000000000000002ULL), IMMEDIATE_FLOAT, "a flonum");
	cr_expect_eq(immediate_kind_of((0x1234ULL << 8) | 0x0c), IMMEDIATE_SYMBOL, "static Symbol");
	cr_expect_eq(immediate_kind_of(0x08), IMMEDIATE_NIL);
	cr_expect_eq(immediate_kind_of(0x14), IMMEDIATE_TRUE);
	cr_expect_eq(immediate_kind_of(0x00), IMMEDIATE_FALSE);
	cr_expect_eq(immediate_kind_of(0x7f0012345678ULL), IMMEDIATE_KINDS, "a heap object");
	cr_expect_eq(immediate_kind_of(0x34), IMMEDIATE_KINDS, "Qundef is no receiver");
}

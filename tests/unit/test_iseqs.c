// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/iseqs.c: the rank lookup of Ruby 3.1's succinct bit vector (an iseq's line index). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "iseqs.h"

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

Test(iseqs, succ_index_rank)
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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/probe/iseqs.c: the rank lookup of Ruby 3.1's succinct bit vector (an
 * iseq's line index), and the caps on the line tables copied out of a target.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "caps.h"
#include "iseqs.h"
#include "probe_caps.h"
#include "rbmemtrace.h"
#include "ruby_versions.h"
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

/* An iseq of this process's own memory, as Ruby 3.4 lays it out: the symbolizer reads it. */
struct fake_iseq {
	uint64_t obj[4];
	uint8_t body[1024];
	uint8_t entries[4 * 12]; /* iseq_insn_info_entry: line_no at 0 */
	uint8_t succ[4096];
	uint64_t insns[16];
};

static void fake_iseq(struct fake_iseq *f, const struct ruby_layout *l, uint32_t iseq_size,
		      uint32_t entries)
{
	uint64_t v;
	uint32_t i;

	memset(f, 0, sizeof(*f));
	f->obj[0] = RB_T_IMEMO | ((uint64_t) l->imemo_iseq << RB_IMEMO_SHIFT);
	f->obj[l->iseq_body / 8] = (uint64_t) (uintptr_t) f->body;
	v = (uint64_t) (uintptr_t) f->insns;
	memcpy(f->body + l->body_iseq_encoded, &v, 8);
	memcpy(f->body + l->body_iseq_size, &iseq_size, 4);
	v = (uint64_t) (uintptr_t) f->entries;
	memcpy(f->body + l->body_insns_info_body, &v, 8);
	memcpy(f->body + l->body_insns_info_size, &entries, 4);
	v = (uint64_t) (uintptr_t) f->succ;
	memcpy(f->body + l->body_succ_index_table, &v, 8);
	for (i = 0; i < 4; i++) {
		int32_t line = 10 + (int32_t) i;

		memcpy(f->entries + i * l->insn_info_size + l->insn_info_line_no, &line, 4);
	}
}

/*
 * The sizes of a line table are the target's words: an iseq claiming 2^32
 * instructions asked for a 670 MiB index.  Past the caps, or the run's
 * budget, the iseq keeps no table, and that is counted.
 */
Test(iseqs, line_tables_past_their_caps_not_kept_and_counted)
{
	static struct fake_iseq f, g;
	struct ruby_layout l;
	struct symbolizer s;
	struct iseq_info *info;
	struct caps_hit h;

	cr_assert_eq(ruby_versions_layout("3.4.5", &l), 0);
	caps_reset();
	symbolizer_init(&s, getpid(), &l, NULL, NULL, NULL);

	fake_iseq(&f, &l, 8, 2);
	info = iseqs_get(&s, (uint64_t) (uintptr_t) f.obj);
	cr_assert_not_null(info, "an honest iseq is read");
	cr_assert_not_null(info->lines, "and keeps its line table");
	cr_expect_eq(info->lines[1], 11);
	cr_expect_gt(s.line_bytes, 0, "its bytes are counted against the budget");

	fake_iseq(&g, &l, 0xfffffff0u, 2);
	info = iseqs_get(&s, (uint64_t) (uintptr_t) g.obj);
	cr_assert_not_null(info);
	cr_expect_null(info->lines, "2^32 instructions: no index of 670 MiB");
	caps_read(getpid(), &h);
	cr_expect_eq(h.n[CAP_LINE_TABLE], 1);
	symbolizer_free(&s);

	/* the run's budget spent: the next table is not kept */
	symbolizer_init(&s, getpid(), &l, NULL, NULL, NULL);
	s.line_bytes = PROBE_MAX_LINE_BYTES - 4;
	fake_iseq(&f, &l, 8, 2);
	info = iseqs_get(&s, (uint64_t) (uintptr_t) f.obj);
	cr_assert_not_null(info);
	cr_expect_null(info->lines);
	caps_read(getpid(), &h);
	cr_expect_eq(h.n[CAP_LINE_TABLE], 2);
	symbolizer_free(&s);
	caps_reset();
}

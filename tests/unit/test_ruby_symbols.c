// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/ruby_symbols.c: finding the hidden Ruby symbol table from code, naming IDs. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "ruby_symbols.h"

// clang-format off
/* Debian's libruby-3.1.so.3.1.7: rb_id2str at 0x209580, in full. */
static const uint8_t id2str_code[] = {
	0x48, 0x89, 0xf8,		    /* mov %rdi,%rax */
	0x48, 0xc1, 0xe8, 0x04,		    /* shr $4,%rax */
	0x48, 0x81, 0xff, 0xa9, 0, 0, 0,    /* cmp $0xa9,%rdi */
	0x0f, 0x47, 0xf8,		    /* cmova %eax,%edi */
	0x31, 0xf6,			    /* xor %esi,%esi */
	0xe9, 0x78, 0xdd, 0xff, 0xff,	    /* jmp 0x207310 */
};

/* The start of the hidden function it jumps to (get_id_serial_entry), at 0x207310. */
static const uint8_t lookup_code[] = {
	0x41, 0x55, 0x41, 0x89, 0xf5, 0x41, 0x54, 0x55, 0x53, 0x89, 0xfb, 0x48, 0x83, 0xec, 0x18,
	0x48, 0x8b, 0x2d, 0xca, 0x92, 0x1a, 0x00,	  /* mov 0x3b05f0(%rip),%rbp: a GOT slot */
	0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0,	  /* mov %fs:0x28,%rax */
	0x48, 0x89, 0x44, 0x24, 0x08, 0x31, 0xc0, 0x4c, 0x8b, 0x65, 0x00, 0x4d, 0x85, 0xe4,
	0x0f, 0x84, 0x9d, 0x00, 0x00, 0x00,		  /* je */
	0x31, 0xed, 0x85, 0xff, 0x74, 0x67,
	0x39, 0x3d, 0x71, 0x9e, 0x1a, 0x00,		  /* cmp %edi,last_id(%rip) */
	0x72, 0x5f,
	0x48, 0x8b, 0x3d, 0x78, 0x9e, 0x1a, 0x00,	  /* mov ids(%rip),%rdi */
	0x89, 0xde, 0xc1, 0xee, 0x09, 0x48, 0x8b, 0x07,
};
// clang-format on

static const struct rip_ref *find_target(const struct rip_ref *refs, size_t n, uint64_t target)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (refs[i].target == target)
			return &refs[i];
	return NULL;
}

Test(ruby_symbols, scan_follows_the_tail_jump)
{
	struct rip_ref refs[16];
	const struct rip_ref *r;
	uint64_t cand[4];
	size_t n;

	n = rip_scan(id2str_code, sizeof(id2str_code), 0x209580, refs, 16);
	r = find_target(refs, n, 0x207310);
	cr_assert(r, "jmp to 0x207310 not found among %zu refs", n);
	cr_expect(rip_ref_is_branch(r));
	cr_expect_eq(r->opcode, 0xe9);
	cr_expect_eq(r->insn, 0x209593);
	cr_expect_eq(r->len, 5);
	/* No memory operand in rb_id2str itself: no rb_symbols_t candidate. */
	cr_expect_eq(ruby_symbols_candidates(refs, n, cand, 4), 0);
}

Test(ruby_symbols, scan_finds_last_id_and_ids)
{
	struct rip_ref refs[32];
	const struct rip_ref *got, *last, *ids;
	size_t n;

	n = rip_scan(lookup_code, sizeof(lookup_code), 0x207310, refs, 32);
	got = find_target(refs, n, 0x3b05f0);
	last = find_target(refs, n, 0x3b11c0);
	ids = find_target(refs, n, 0x3b11d0);
	cr_assert(got && last && ids);

	cr_expect_eq(got->insn, 0x20731f);
	cr_expect_eq(got->opcode, 0x8b);
	cr_expect(rip_ref_is_wide(got));
	cr_expect_eq(got->reg, 5); /* %rbp */

	cr_expect_eq(last->insn, 0x207349);
	cr_expect_eq(last->opcode, 0x39);
	cr_expect_eq(last->rex, 0);
	cr_expect(!rip_ref_is_wide(last));
	cr_expect_eq(last->len, 6);

	cr_expect_eq(ids->insn, 0x207351);
	cr_expect_eq(ids->len, 7);
	cr_expect_eq(ids->reg, 7); /* %rdi */

	/* %fs:0x28 uses a SIB byte, not RIP: it must not show up. */
	cr_expect(!find_target(refs, n, 0x28));
}

Test(ruby_symbols, candidates_pick_the_struct_base)
{
	struct rip_ref refs[32];
	uint64_t cand[4];
	size_t n;

	n = rip_scan(lookup_code, sizeof(lookup_code), 0x207310, refs, 32);
	cr_assert_eq(ruby_symbols_candidates(refs, n, cand, 4), 1);
	cr_expect_eq(cand[0], 0x3b11c0);
}

Test(ruby_symbols, candidates_prefer_32bit_last_id)
{
	/* A 64-bit read of X, a 32-bit compare of Y, loads of X+16 and Y+16. */
	const struct rip_ref refs[] = {
	    {.target = 0x1000, .opcode = 0x8b, .rex = 0x48},
	    {.target = 0x1010, .opcode = 0x8b, .rex = 0x48},
	    {.target = 0x2000, .opcode = 0x3b, .rex = 0x00},
	    {.target = 0x2010, .opcode = 0x8b, .rex = 0x48},
	    {.target = 0x2000, .opcode = 0x39, .rex = 0x00}, /* duplicate */
	    {.target = 0x3000, .opcode = 0x39, .rex = 0x00},
	    {.target = 0x3010, .opcode = 0x8b, .rex = 0x00}, /* 32-bit: not ids */
	    {.target = 0x4000, .opcode = 0x39, .rex = 0x00},
	    {.target = 0x4010, .opcode = 0xe9}, /* a branch: not ids */
	};
	uint64_t cand[8];

	cr_assert_eq(ruby_symbols_candidates(refs, sizeof(refs) / sizeof(refs[0]), cand, 8), 2);
	cr_expect_eq(cand[0], 0x2000);
	cr_expect_eq(cand[1], 0x1000);
	cr_expect_eq(ruby_symbols_candidates(refs, sizeof(refs) / sizeof(refs[0]), cand, 1), 1);
	cr_expect_eq(cand[0], 0x2000);
}

Test(ruby_symbols, scan_operand_forms)
{
	const uint8_t code[] = {
	    0x48, 0x3b, 0x05, 0x10, 0x00, 0x00, 0x00,		  /* cmp 0x10(%rip),%rax */
	    0x48, 0x83, 0x3d, 0xf0, 0xff, 0xff, 0xff, 0x00,	  /* cmpq $0,-0x10(%rip): imm8 */
	    0x4c, 0x8d, 0x2d, 0x00, 0x01, 0x00, 0x00,		  /* lea 0x100(%rip),%r13 */
	    0x0f, 0xb6, 0x05, 0x04, 0x00, 0x00, 0x00,		  /* movzbl 4(%rip),%eax */
	    0xc7, 0x05, 0x08, 0x00, 0x00, 0x00, 1,    0,    0, 0, /* movl $1,8(%rip): imm32 */
	    0xe8, 0xfb, 0xff, 0xff, 0xff,			  /* call to itself */
	    0x48, 0x8b, 0x45, 0x08,				  /* mov 8(%rbp),%rax: not RIP */
	    0x48, 0x8b, 0x05, 0x01, 0x02,			  /* truncated */
	};
	struct rip_ref refs[16];
	size_t n;

	n = rip_scan(code, sizeof(code), 0x1000, refs, 16);
	cr_assert_eq(n, 6);
	cr_expect_eq(refs[0].target, 0x1000 + 7 + 0x10);
	cr_expect_eq(refs[0].opcode, 0x3b);
	cr_expect(rip_ref_is_wide(&refs[0]));
	cr_expect_eq(refs[1].insn, 0x1007);
	cr_expect_eq(refs[1].len, 8);
	cr_expect_eq(refs[1].target, 0x1007 + 8 - 0x10);
	cr_expect_eq(refs[2].target, 0x100f + 7 + 0x100);
	cr_expect_eq(refs[2].reg, 13);
	cr_expect_eq(refs[3].opcode, 0xb6);
	cr_expect_eq(refs[3].len, 7);
	cr_expect_eq(refs[3].target, 0x1016 + 7 + 4);
	cr_expect_eq(refs[4].len, 10);
	cr_expect_eq(refs[4].target, 0x101d + 10 + 8);
	cr_expect(rip_ref_is_branch(&refs[5]));
	cr_expect_eq(refs[5].target, refs[5].insn);

	/* max is respected. */
	cr_expect_eq(rip_scan(code, sizeof(code), 0x1000, refs, 2), 2);
	cr_expect_eq(rip_scan(code, 0, 0x1000, refs, 16), 0);
}

Test(ruby_symbols, id_slots)
{
	struct ruby_id_slot s;

	/* An operator ID is its own serial. */
	cr_assert_eq(ruby_id_slot('+', 0xa9, &s), 0);
	cr_expect_eq(s.serial, 43);
	cr_expect_eq(s.array_index, 0);
	cr_expect_eq(s.element_index, 86);
	cr_assert_eq(ruby_id_slot(0xa9, 0xa9, &s), 0);
	cr_expect_eq(s.serial, 0xa9);

	/* idInitialize = tInitialize (195) << 4 | ID_LOCAL | ID_STATIC_SYM. */
	cr_assert_eq(ruby_id_slot(0xc31, 0xa9, &s), 0);
	cr_expect_eq(s.serial, 195);
	cr_expect_eq(s.element_index, 390);

	/* The scope bits do not matter; the next table starts at 512. */
	cr_assert_eq(ruby_id_slot((511ULL << 4) | 0x0e, 0xa9, &s), 0);
	cr_expect_eq(s.array_index, 0);
	cr_expect_eq(s.element_index, 1022);
	cr_assert_eq(ruby_id_slot((512ULL << 4) | 0x01, 0xa9, &s), 0);
	cr_expect_eq(s.array_index, 1);
	cr_expect_eq(s.element_index, 0);
	cr_assert_eq(ruby_id_slot((100000ULL << 4) | 0x01, 0xa9, &s), 0);
	cr_expect_eq(s.array_index, 195);
	cr_expect_eq(s.element_index, (100000 % 512) * 2);

	/* 0xaa..0xaf: above tLAST_OP_ID, so shifted (serial 0xa). */
	cr_assert_eq(ruby_id_slot(0xaa, 0xa9, &s), 0);
	cr_expect_eq(s.serial, 0xa);
	/* ...but 3.4 has one more operator: 0xaa is its tLAST_OP_ID, its own serial. */
	cr_assert_eq(ruby_id_slot(0xaa, 0xaa, &s), 0);
	cr_expect_eq(s.serial, 0xaa);

	cr_expect_eq(ruby_id_slot(0, 0xa9, &s), -EINVAL);
	cr_expect_eq(ruby_id_slot(0x0f, 0xa9, &s), 0); /* serial 15 (an op ID, no name) */
	cr_expect_eq(ruby_id_slot(0xb, 0xa9, &s), 0);
}

Test(ruby_symbols, op_chars)
{
	cr_expect_eq(ruby_op_id_char('+'), '+');
	cr_expect_eq(ruby_op_id_char('<'), '<');
	cr_expect_eq(ruby_op_id_char('!'), '!');
	cr_expect_eq(ruby_op_id_char('~'), '~');
	cr_expect_eq(ruby_op_id_char('`'), '`');
	cr_expect_eq(ruby_op_id_char(' '), 0);
	cr_expect_eq(ruby_op_id_char('p'), 0); /* alphanumerics are not operator IDs */
	cr_expect_eq(ruby_op_id_char('0'), 0);
	cr_expect_eq(ruby_op_id_char('_'), 0);
	cr_expect_eq(ruby_op_id_char(0x7f), 0);
	cr_expect_eq(ruby_op_id_char(134), 0); /* idPow: "**", only in the table */
	cr_expect_eq(ruby_op_id_char(0xc31), 0);
}

Test(ruby_symbols, name_needs_init)
{
	struct ruby_symbols rs;
	char buf[8];

	memset(&rs, 0, sizeof(rs));
	cr_expect_eq(ruby_id_name(&rs, '+', buf, sizeof(buf)), -EINVAL);
}

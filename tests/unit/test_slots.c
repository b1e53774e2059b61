// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/heap/slots.c (and slots.h): a heap slot's state, age, kind, class and owned bytes. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "helpers.h"
#include "rbmemtrace.h"
#include "slots.h"

#define T_ARRAY 0x07
#define T_HASH 0x08
#define T_STRUCT 0x09
#define T_BIGNUM 0x0a
#define T_DATA 0x0c
#define FLU(n) (1ULL << (12 + (n)))

Test(slots, classify)
{
	bool unjudged;

	cr_expect_eq(slot_classify(0, false, true, false, &unjudged), SLOT_FREE);
	cr_expect_eq(slot_classify(0, false, false, true, &unjudged), SLOT_FREE);
	cr_expect_eq(slot_classify(RB_T_ZOMBIE, false, true, false, &unjudged), SLOT_ZOMBIE);
	cr_expect_eq(slot_classify(RB_T_MOVED, true, false, false, &unjudged), SLOT_MOVED);
	/* Swept page: alive as far as the GC knows, marked or not. */
	cr_expect_eq(slot_classify(RB_T_STRING, false, false, false, &unjudged), SLOT_LIVE);
	cr_expect(!unjudged);
	cr_expect_eq(slot_classify(RB_T_STRING, true, false, false, &unjudged), SLOT_LIVE);
	/* Unswept page after marking: the mark decides. */
	cr_expect_eq(slot_classify(RB_T_STRING, true, true, false, &unjudged), SLOT_LIVE);
	cr_expect_eq(slot_classify(RB_T_STRING, false, true, false, &unjudged), SLOT_GARBAGE);
	cr_expect(!unjudged);
	cr_expect_eq(slot_classify(RB_T_IMEMO | (6 << 12), false, true, false, &unjudged),
		     SLOT_GARBAGE);
	/* Marks not final: counted live, and said so. */
	cr_expect_eq(slot_classify(RB_T_STRING, false, true, true, &unjudged), SLOT_LIVE);
	cr_expect(unjudged);
	cr_expect_eq(slot_classify(RB_T_STRING, true, true, true, &unjudged), SLOT_LIVE);
	cr_expect(!unjudged);
	cr_expect_str_eq(slot_state_name(SLOT_GARBAGE), "garbage");
	cr_expect_str_eq(slot_state_name(99), "?");
}

Test(slots, age_kind_klass)
{
	const struct ruby_layout l = test_layout_of("3.1.7"), *hl = &l;
	uint64_t words[5] = {RB_T_STRING | (1 << 5), 0x7f0000001000, 0, 0, 0};

	cr_expect_eq(slot_age(hl, RB_T_STRING), 0);
	cr_expect_eq(slot_age(hl, RB_T_STRING | (1 << 5)), 1);
	cr_expect_eq(slot_age(hl, RB_T_STRING | (1 << 6)), 2);
	cr_expect_eq(slot_age(hl, RB_T_STRING | (3 << 5) | FLU(1)), 3);
	cr_expect_eq(slot_kind(RB_T_STRING | FLU(1)), RB_T_STRING);
	cr_expect_eq(slot_kind(RB_T_IMEMO | (11 << 12) | (1 << 5)), RBM_KIND(RB_T_IMEMO, 11));
	cr_expect_eq(slot_klass(words), 0x7f0000001000);
	words[0] = RB_T_IMEMO | (11 << 12); /* a callcache keeps a receiver class there */
	cr_expect_eq(slot_klass(words), 0);
}

/* 3.3+: two age bits per bit granule, 32 granules a word (RVALUE_AGE_BITMAP). */
Test(slots, age_in_page_bits)
{
	uint64_t word = 3ULL << 62 | 2ULL << 2 | 1ULL;

	cr_expect_eq(slot_age_in_bits(word, 0), 1);
	cr_expect_eq(slot_age_in_bits(word, 1), 2);
	cr_expect_eq(slot_age_in_bits(word, 2), 0);
	cr_expect_eq(slot_age_in_bits(word, 31), 3);
	/* Granule 33 is the second word's bit pair 1: the caller passes that word. */
	cr_expect_eq(slot_age_in_bits(word, 33), 2);
}

/* Owned bytes, checked against ObjectSpace.memsize_of(obj) - 40 on 3.1.7. */
Test(slots, owned_bytes)
{
	const struct ruby_layout l = test_layout_of("3.1.7"), *hl = &l;
	uint64_t w[5], st;

	/* OWNED(flags, word 2, word 3, word 4): slot words after flags and klass */
#define OWNED(f, a, b, c)                                                                          \
	(w[0] = (f), w[1] = 0x1000, w[2] = (a), w[3] = (b), w[4] = (c),                            \
	 slot_owned_bytes(hl, w, &st))
	/* "x" * 100: memsize 141 */
	cr_expect_eq(OWNED(RB_T_STRING | FLU(1), 100, 0x5000, 100), 101);
	cr_expect_eq(st, 0);
	cr_expect_eq(OWNED(RB_T_STRING, 0, 0, 0), 0);				    /* embedded */
	cr_expect_eq(OWNED(RB_T_STRING | FLU(1) | FLU(2), 100, 0x5000, 0x9000), 0); /* shared */
	cr_expect_eq(OWNED(RB_T_STRING | FLU(1) | FLU(18), 5, 0x5000, 5), 0);	    /* NOFREE */
	/* Array.new(10, 1): memsize 120 */
	cr_expect_eq(OWNED(T_ARRAY, 10, 10, 0x5000), 80);
	cr_expect_eq(OWNED(T_ARRAY | FLU(1), 0, 0, 0), 0);	      /* embedded */
	cr_expect_eq(OWNED(T_ARRAY | FLU(2), 10, 0x9000, 0x5000), 0); /* shared */
	cr_expect_eq(OWNED(T_ARRAY | FLU(5), 12, 3, 0x5000), 96);     /* root: len */
	/* {a: 1}: memsize 168 */
	cr_expect_eq(OWNED(T_HASH, 0x5000, 0, 0), 128);
	cr_expect_eq(OWNED(T_HASH, 0, 0, 0), 0); /* empty: no ar_table yet */
	cr_expect_eq(OWNED(T_HASH | FLU(3), 0x5000, 0, 0), 0);
	cr_expect_eq(st, 0x5000);
	/* five ivars: memsize 80 */
	cr_expect_eq(OWNED(RB_T_OBJECT, 5 | (0xdeadULL << 32), 0x5000, 0x6000), 40);
	cr_expect_eq(OWNED(RB_T_OBJECT | FLU(1), 1, 2, 3), 0);
	/* 2**1000: 32 digits of 4 bytes (its len, read live), memsize 168; Struct.new(:a, :b, :c,
	 * :d).new: memsize 72 (ptr at 24) */
	cr_expect_eq(OWNED(T_BIGNUM, 32, 0x5000, 0), 128);
	cr_expect_eq(OWNED(T_BIGNUM | FLU(2), 16, 0x5000, 0), 0);
	cr_expect_eq(OWNED(T_STRUCT, 4, 0x5000, 0), 32);
	cr_expect_eq(OWNED(T_STRUCT | FLU(1), 4, 0x5000, 0), 0);
	cr_expect_eq(OWNED(RB_T_CLASS, 0x3000, 0x4000, 0), 112); /* ext at 24 */
	cr_expect_eq(OWNED(T_DATA, 0x3000, 0x4000, 0x5000), 0);
#undef OWNED
}

static uint64_t st_bytes(unsigned int entry_power, uint64_t bins)
{
	const struct ruby_layout l = test_layout_of("3.1.7");
	uint8_t head[56] = {entry_power};

	memcpy(head + 24, &bins, 8);
	return slot_st_bytes(&l, head);
}

Test(slots, st_table_bytes)
{
	/* memsize_of minus the 40-byte slot, 3.1.7: 9 and 17 pairs 888, 40 pairs 1720, 300 14392 */
	cr_expect_eq(st_bytes(5, 0x5000), 888);
	cr_expect_eq(st_bytes(6, 0x5000), 1720);
	cr_expect_eq(st_bytes(9, 0x5000), 14392);
	cr_expect_eq(st_bytes(3, 0), 56 + 8 * 24); /* small tables have no bins */
	cr_expect_eq(st_bytes(200, 0x5000), 0);	   /* garbage read from a moving target */
}

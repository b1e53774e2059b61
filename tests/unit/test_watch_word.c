// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/heap/watch_word.c: the word a watchpoint takes for each form of a
 * container, on a Ruby whose Hash keeps its table apart (3.1) and one that
 * keeps it in the slot (3.4), and the forms refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include "helpers.h"
#include "refs.h"
#include "watch_word.h"

#define ADDR 0x7f0000001000ULL

Test(watch_word, arrays_embedded_and_on_the_heap)
{
	const struct ruby_layout l = test_layout_of("3.1.7");
	uint64_t w[5] = {RB_T_ARRAY | l.rarray_embed_flag | (3ULL << l.rarray_embed_len_shift)};
	struct watch_word ww;

	cr_assert_eq(watch_word_of(&l, RB_T_ARRAY, ADDR, w, 40, &ww), 0);
	cr_expect_eq(ww.form, WATCH_ARRAY_EMBEDDED);
	cr_expect_eq(ww.addr, ADDR);
	cr_expect_eq(watch_count(&ww, w[0]), 3);
	w[0] = RB_T_ARRAY;
	w[l.rarray_heap_len / 8] = 1234;
	cr_assert_eq(watch_word_of(&l, RB_T_ARRAY, ADDR, w, 40, &ww), 0);
	cr_expect_eq(ww.form, WATCH_ARRAY_HEAP);
	cr_expect_eq(ww.addr, ADDR + l.rarray_heap_len);
	cr_expect_eq(watch_count(&ww, w[l.rarray_heap_len / 8]), 1234);
	w[0] |= l.ary_shared;
	cr_expect_eq(watch_word_of(&l, RB_T_ARRAY, ADDR, w, 40, &ww), -EINVAL, "shared");
}

Test(watch_word, hashes_ar_then_st)
{
	const struct ruby_layout l = test_layout_of("3.1.7");
	uint64_t w[5] = {RB_T_HASH | (5ULL << (l.hash_ar_bound_shift - 4)) |
			 (5ULL << l.hash_ar_bound_shift)};
	struct watch_word ww;

	cr_assert_eq(watch_word_of(&l, RB_T_HASH, ADDR, w, 40, &ww), 0);
	cr_expect_eq(ww.form, WATCH_HASH_AR);
	cr_expect_eq(ww.addr, ADDR, "the flags");
	cr_expect_eq(watch_count(&ww, w[0]), 5);
	cr_expect_eq(watch_count(&ww, w[0] | 0xfff), 5, "other flag bits are not the count");
	cr_expect_eq(w[0] & ww.flags_mask, ww.flags_want, "its form, as armed");
	cr_expect_neq((w[0] | l.hash_st_flag) & ww.flags_mask, ww.flags_want, "an st_table's is not");
	cr_expect_neq(0 & ww.flags_mask, ww.flags_want, "a freed slot's (T_NONE) is not");
	/* its ninth entry: an st_table, apart from the slot before 3.3 */
	w[0] = RB_T_HASH | l.hash_st_flag;
	w[l.hash_tbl / 8] = 0x5000;
	cr_assert_eq(watch_word_of(&l, RB_T_HASH, ADDR, w, 40, &ww), 0);
	cr_expect_eq(ww.form, WATCH_HASH_ST);
	cr_expect_eq(ww.addr, 0x5000 + l.st_bins - 8, "num_entries, before bins");
	w[l.hash_tbl / 8] = 0;
	cr_expect_eq(watch_word_of(&l, RB_T_HASH, ADDR, w, 40, &ww), -EINVAL, "no table");
}

Test(watch_word, a_table_in_the_slot)
{
	const struct ruby_layout l = test_layout_of("3.4.5");
	uint64_t w[20] = {RB_T_HASH | l.hash_st_flag};
	struct watch_word ww;

	cr_assert(l.hash_tbl_inline);
	cr_assert_eq(watch_word_of(&l, RB_T_HASH, ADDR, w, 160, &ww), 0);
	cr_expect_eq(ww.form, WATCH_HASH_ST);
	cr_expect_eq(ww.addr, ADDR + l.hash_tbl + l.st_bins - 8);
	/* the word is in the slot: a small Hash or another object there later is not this table */
	cr_expect_eq(w[0] & ww.flags_mask, ww.flags_want, "its form, as armed");
	cr_expect_neq(RB_T_HASH & ww.flags_mask, ww.flags_want, "an ar_table Hash's is not");
	cr_expect_neq((RB_T_STRING | l.hash_st_flag) & ww.flags_mask, ww.flags_want, "a String's is not");
	cr_expect_eq(watch_word_of(&l, RB_T_HASH, ADDR, w, 40, &ww), -EINVAL, "past its slot");
	cr_expect_eq(watch_word_of(&l, RB_T_STRUCT, ADDR, w, 160, &ww), -EINVAL);
	cr_expect_eq(watch_word_of(&l, RB_T_HASH, ADDR + 4, w, 160, &ww), -EINVAL);
}

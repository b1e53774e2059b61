// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/probe/watch_uprobe.c: the rule by which the fallback's BPF program
 * reads a container's count at each call finds the count the breakpoints'
 * word holds (heap/watch_word.c), in every form, on a Ruby whose Hash keeps
 * its table apart (3.1) and one that keeps it in the slot (3.4).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>
#include "helpers.h"
#include "rbmemtrace.h"
#include "refs.h"
#include "watch_uprobe.h"
#include "watch_word.h"

#define ADDR 0x7f0000001000ULL
#define TABLE 0x7f0000009000ULL

/* The target's memory: the slot at ADDR, a table apart at TABLE. */
struct mem {
	uint64_t slot[20], table[8];
};

static uint64_t word_at(const struct mem *m, uint64_t at)
{
	if (at >= ADDR && at < ADDR + sizeof(m->slot))
		return m->slot[(at - ADDR) / 8];
	cr_assert(at >= TABLE && at < TABLE + sizeof(m->table), "a read at 0x%llx",
		  (unsigned long long) at);
	return m->table[(at - TABLE) / 8];
}

/* What on_container_call's call_count reads, step by step. */
static uint64_t bpf_count(const struct call_watch *cw, const struct mem *m)
{
	uint64_t flags = m->slot[0], at;

	if ((flags & cw->form_flag) == cw->in_flags)
		return (flags & cw->mask) >> cw->shift;
	at = ADDR + cw->off;
	if (cw->deref)
		at = word_at(m, at) + cw->deref_off;
	return word_at(m, at);
}

/* The breakpoint's word for the same memory, and the count it holds. */
static uint64_t word_count(const struct ruby_layout *l, uint32_t type, const struct mem *m)
{
	struct watch_word ww;

	cr_assert_eq(watch_word_of(l, type, ADDR, m->slot, sizeof(m->slot), &ww), 0);
	return watch_count(&ww, word_at(m, ww.addr));
}

static void check_forms(const char *version)
{
	const struct ruby_layout l = test_layout_of(version);
	struct call_watch h = {0}, a = {0};
	struct mem m = {0};

	cr_assert_eq(watch_call_rule(&l, RB_T_HASH, &h), 0, "%s", version);
	cr_assert_eq(watch_call_rule(&l, RB_T_ARRAY, &a), 0, "%s", version);
	/* an ar_table of 6, other flag bits set */
	m.slot[0] = RB_T_HASH | 0x1000 | (6ULL << (l.hash_ar_bound_shift - 4)) |
		    (7ULL << l.hash_ar_bound_shift);
	cr_expect_eq(bpf_count(&h, &m), 6, "%s: ar_table", version);
	cr_expect_eq(bpf_count(&h, &m), word_count(&l, RB_T_HASH, &m));
	/* its ninth entry: an st_table, in the slot from 3.3, apart before */
	m.slot[0] = RB_T_HASH | l.hash_st_flag;
	if (l.hash_tbl_inline) {
		m.slot[(l.hash_tbl + l.st_bins - 8) / 8] = 9;
	} else {
		m.slot[l.hash_tbl / 8] = TABLE;
		m.table[(l.st_bins - 8) / 8] = 9;
	}
	cr_expect_eq(bpf_count(&h, &m), 9, "%s: st_table", version);
	cr_expect_eq(bpf_count(&h, &m), word_count(&l, RB_T_HASH, &m));
	/* an embedded Array of 3, then one on the heap of 1234 */
	memset(&m, 0, sizeof(m));
	m.slot[0] = RB_T_ARRAY | l.rarray_embed_flag | (3ULL << l.rarray_embed_len_shift);
	cr_expect_eq(bpf_count(&a, &m), 3, "%s: embedded", version);
	cr_expect_eq(bpf_count(&a, &m), word_count(&l, RB_T_ARRAY, &m));
	m.slot[0] = RB_T_ARRAY;
	m.slot[l.rarray_heap_len / 8] = 1234;
	cr_expect_eq(bpf_count(&a, &m), 1234, "%s: heap", version);
	cr_expect_eq(bpf_count(&a, &m), word_count(&l, RB_T_ARRAY, &m));
}

Test(watch_uprobe, the_count_read_at_a_call_is_the_watched_word_s_3_1)
{
	check_forms("3.1.7");
}

Test(watch_uprobe, the_count_read_at_a_call_is_the_watched_word_s_3_4)
{
	check_forms("3.4.5");
}

Test(watch_uprobe, other_types_have_no_rule)
{
	const struct ruby_layout l = test_layout_of("3.4.5");
	struct call_watch cw = {0};

	cr_expect_eq(watch_call_rule(&l, RB_T_STRUCT, &cw), -EINVAL);
	cr_expect_eq(watch_call_rule(&l, RB_T_OBJECT, &cw), -EINVAL);
}

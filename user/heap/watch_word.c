// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* watch_word.h: where a container's count of entries lives, by its form. */
#include <errno.h>
#include "refs.h"
#include "watch_word.h"

static int array_word(const struct ruby_layout *l, uint64_t addr, const uint64_t *words,
		      uint32_t slot_size, struct watch_word *out)
{
	uint64_t flags = words[0];

	uint64_t form = RB_T_MASK | l->rarray_embed_flag | l->ary_shared;

	if (flags & l->rarray_embed_flag) {
		*out = (struct watch_word){
		    WATCH_ARRAY_EMBEDDED,      addr, l->rarray_embed_len_mask,
		    l->rarray_embed_len_shift, form, RB_T_ARRAY | l->rarray_embed_flag};
		return 0;
	}
	/* a shared Array's length is its own, but it grows by copying out first */
	if ((flags & l->ary_shared) || l->rarray_heap_len % 8 || l->rarray_heap_len + 8 > slot_size)
		return -EINVAL;
	*out = (struct watch_word){
	    WATCH_ARRAY_HEAP, addr + l->rarray_heap_len, ~(uint64_t) 0, 0, form, RB_T_ARRAY};
	return 0;
}

static int hash_word(const struct ruby_layout *l, uint64_t addr, const uint64_t *words,
		     uint32_t slot_size, struct watch_word *out)
{
	uint64_t flags = words[0], head, form = RB_T_MASK | l->hash_st_flag;

	if (!(flags & l->hash_st_flag)) {
		/* RHASH_AR_TABLE_SIZE: the 4 flag bits below the bound's (3.1-3.4) */
		if (l->hash_ar_bound_shift < 4)
			return -EINVAL;
		*out = (struct watch_word){WATCH_HASH_AR,
					   addr,
					   (uint64_t) 0xf << (l->hash_ar_bound_shift - 4),
					   l->hash_ar_bound_shift - 4,
					   form,
					   RB_T_HASH};
		return 0;
	}
	if (l->st_bins < 8 || l->hash_tbl % 8)
		return -EINVAL;
	if (l->hash_tbl_inline) {
		/* 3.3+: the st_table lies in the slot after struct RHash */
		if (l->hash_tbl + l->st_bins > slot_size)
			return -EINVAL;
		head = addr + l->hash_tbl;
	} else {
		if (l->hash_tbl + 8 > slot_size || !(head = words[l->hash_tbl / 8]) || head % 8)
			return -EINVAL;
	}
	/* num_entries is the word before bins */
	*out = (struct watch_word){WATCH_HASH_ST, head + l->st_bins - 8,      ~(uint64_t) 0, 0,
				   form,	  RB_T_HASH | l->hash_st_flag};
	return 0;
}

int watch_word_of(const struct ruby_layout *l, uint32_t type, uint64_t addr, const uint64_t *words,
		  uint32_t slot_size, struct watch_word *out)
{
	*out = (struct watch_word){0};
	if (addr % 8 || slot_size < 16)
		return -EINVAL;
	if (type == RB_T_ARRAY)
		return array_word(l, addr, words, slot_size, out);
	if (type == RB_T_HASH)
		return hash_word(l, addr, words, slot_size, out);
	return -EINVAL;
}

const char *watch_form_name(enum watch_form f)
{
	switch (f) {
	case WATCH_ARRAY_EMBEDDED:
		return "embedded Array length";
	case WATCH_ARRAY_HEAP:
		return "Array length";
	case WATCH_HASH_AR:
		return "ar_table size";
	case WATCH_HASH_ST:
		return "st_table num_entries";
	default:
		return "none";
	}
}

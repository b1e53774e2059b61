// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <linux/types.h>
#include "rbmemtrace.h"
#include "slots.h"

#define RB_T_ARRAY 0x07
#define RB_T_HASH 0x08
#define RB_T_STRUCT 0x09
#define RB_T_BIGNUM 0x0a

const char *slot_state_name(enum slot_state st)
{
	static const char *const names[] = {"free", "live", "garbage", "zombie", "moved", "unknown"};

	return (unsigned int)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* The word at byte offset off of the slot. */
static inline uint64_t word_at(const uint64_t *words, uint32_t off)
{
	return words[off / 8];
}

uint64_t slot_owned_bytes(const struct heap_layout *hl, const uint64_t *words, uint64_t *need_st)
{
	uint64_t flags = words[0];

	*need_st = 0;
	switch (flags & RB_T_MASK) {
	case RB_T_STRING:
		if ((flags & (hl->str_noembed | hl->str_shared | hl->str_nofree)) == hl->str_noembed)
			return word_at(words, hl->str_capa) + 1;
		return 0;
	case RB_T_ARRAY:
		if (flags & (hl->ary_embed | hl->ary_shared))
			return 0;
		if (flags & hl->ary_shared_root)
			return word_at(words, hl->ary_len) * 8;
		return word_at(words, hl->ary_capa) * 8;
	case RB_T_HASH:
		if (!(flags & hl->hash_st_flag))
			return word_at(words, hl->hash_tbl) ? hl->ar_table_size : 0;
		*need_st = word_at(words, hl->hash_tbl);
		return 0;
	case RB_T_OBJECT:
		if (flags & hl->obj_embed)
			return 0;
		return (uint64_t)(uint32_t)word_at(words, hl->obj_numiv) * 8;
	case RB_T_BIGNUM:
		if (flags & hl->bignum_embed)
			return 0;
		return word_at(words, hl->bignum_len) * hl->bdigit_size;
	case RB_T_STRUCT:
		if (flags & hl->struct_embed_len_mask)
			return 0;
		return word_at(words, hl->struct_len) * 8;
	case RB_T_CLASS:
	case RB_T_MODULE:
		return word_at(words, hl->class_ext) ? hl->classext_size : 0;
	}
	return 0;
}

uint64_t slot_st_bytes(const struct heap_layout *hl, const uint8_t *head)
{
	unsigned int entry_power = head[0], bin_power, size_ind;
	uint64_t bins, bytes;

	/* Read from a running target: a table mid-rebuild or freed must not count 2^200. */
	if (entry_power > 40)
		return 0;
	memcpy(&bins, head + hl->st_bins, sizeof(bins));
	bytes = hl->st_size + ((uint64_t)1 << entry_power) * hl->st_entry_size;
	if (bins && entry_power > hl->st_max_power_no_bins) {
		/* st.c's features[]: bin_power = entry_power + 1, bins of 1, 2, 4 or 8 bytes. */
		bin_power = entry_power + 1;
		size_ind = bin_power <= 8 ? 0 : bin_power <= 16 ? 1 : bin_power <= 32 ? 2 : 3;
		bytes += ((uint64_t)1 << bin_power << size_ind) / 8 * 8;
	}
	return bytes;
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One heap slot, judged from words read out of the target: its state (free,
 * live, garbage...), its age and the bytes it owns.  Pure functions, so the
 * rules can be tested without a Ruby process.
 *
 * State.  Ruby frees an object only when its page is swept.  After marking,
 * every page is flagged before_sweep and lazily swept later, a few pages per
 * allocation, so an idle process can sit with unswept pages full of dead
 * objects: on such a page an object whose mark bit is clear is GARBAGE (dead,
 * not yet freed), and ObjectSpace.count_objects still counts it.  On a swept
 * page (before_sweep clear) every object survived the last GC or was
 * allocated since: LIVE as far as the GC knows.  While (incremental) marking
 * is in progress the mark bits are not final: an unmarked object on an
 * unswept page cannot be judged, so it is counted LIVE and reported as
 * unjudged rather than guessed.  (Marking starts only after sweeping has
 * finished, so in practice no page is unswept then.)
 *
 * Bytes owned, besides the slot itself, as ObjectSpace.memsize_of counts them
 * (gc.c obj_memsize_of):
 *   String  not embedded, not shared, not NOFREE: capa + 1 (the terminator of
 *           one-byte encodings; UTF-16/32 strings have a 2/4-byte one, which
 *           the flags do not tell: undercounted by 1-3 bytes).
 *   Array   not embedded, not shared: capa * 8 (a shared root: len * 8,
 *           because its capa word holds a reference count), as rb_ary_memsize.
 *   Hash    an ar_table (up to 8 pairs): 128; an st_table: 56 + its bins +
 *           2^entry_power * 24 entries, read from the target (st_memsize).
 *           3.3+: both tables lie in the slot (a larger one): an ar_table adds
 *           nothing, an st_table its bins and entries (st_memsize - 56).
 *   Object  ivars outside the slot: numiv * 8.  3.3+ keeps the capacity in the
 *           object's shape, which is not read: a T_OBJECT whose ivars left the
 *           slot counts its slot only (its class's later instances are sized
 *           to hold their ivars embedded, so few are).
 *   Bignum  digits outside the slot: len * 8.  Struct: members outside: len * 8.
 *   Class/Module: sizeof(rb_classext_t) only (3.3+: it is in the slot: 0); the method, constant,
 * ivar and call-cache tables it points to are not read: a lower bound. Generic ivars (FL_EXIVAR,
 * any type) are not counted. Data/TypedData, File, Regexp, Match, imemo, iclass: the slot only.
 * What a T_DATA owns is known only to its dsize() callback in the target; it cannot be computed
 * from outside.
 */
#ifndef RBM_HEAP_SLOTS_H
#define RBM_HEAP_SLOTS_H
#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "ruby_layout.h"
#include "rbmemtrace.h"

#define RB_T_ARRAY 0x07
#define RB_T_HASH 0x08
#define RB_T_STRUCT 0x09
#define RB_T_BIGNUM 0x0a

enum slot_state {
	SLOT_FREE,    /* T_NONE: an empty slot */
	SLOT_LIVE,    /* an object the GC has not found dead */
	SLOT_GARBAGE, /* dead, on a page not yet swept */
	SLOT_ZOMBIE,  /* dead, waiting for its finalizer or deferred free */
	SLOT_MOVED,   /* a T_MOVED forwarding slot of GC.compact */
	SLOT_UNKNOWN, /* not a slot of any page in the snapshot */
};

const char *slot_state_name(enum slot_state st);

/*
 * The state of the slot whose first word is flags.  marked: its mark bit;
 * before_sweep: its page's flag; marking: the GC is marking (the mark bits
 * are not final).  *unjudged is set when the answer LIVE is a guess.
 * (Inline, like the three below: the census calls them for every slot.)
 */
static inline enum slot_state slot_classify(uint64_t flags, bool marked, bool before_sweep,
					    bool marking, bool *unjudged)
{
	*unjudged = false;
	switch (flags & RB_T_MASK) {
	case RB_T_NONE:
		return SLOT_FREE;
	case RB_T_ZOMBIE:
		return SLOT_ZOMBIE;
	case RB_T_MOVED:
		return SLOT_MOVED;
	}
	/* A swept page holds only survivors and newer objects; a mark is proof of life. */
	if (!before_sweep || marked)
		return SLOT_LIVE;
	if (marking) {
		*unjudged = true;
		return SLOT_LIVE;
	}
	return SLOT_GARBAGE;
}

/* GCs survived, 0..old_age, from the flags (series that keep age in the page: later). */
static inline unsigned int slot_age(const struct ruby_layout *hl, uint64_t flags)
{
	return (unsigned int) ((flags & hl->fl_age_mask) >> hl->fl_age_shift);
}

/* 3.3+: the age of the slot at bit granule `bit`, from the page's age bitmap word holding it. */
static inline unsigned int slot_age_in_bits(uint64_t age_word, uint64_t bit)
{
	return (unsigned int) (age_word >> (bit % 32 * 2)) & 3;
}

/* The tracker's kind: the builtin type, plus the imemo subtype in bits 8..11. */
static inline uint32_t slot_kind(uint64_t flags)
{
	uint32_t type = flags & RB_T_MASK;

	if (type == RB_T_IMEMO)
		return RBM_KIND(type, (flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK);
	return type;
}

/* The tracker's klass: RBasic.klass, or 0 for imemos (their klass word is not a class). */
static inline uint64_t slot_klass(const uint64_t *words)
{
	return (words[0] & RB_T_MASK) == RB_T_IMEMO ? 0 : words[1];
}

/* The slot's word at byte offset off. */
static inline uint64_t slot_word_at(const uint64_t *words, uint32_t off)
{
	return words[off / 8];
}

/* st_memsize() of an st_table whose first hl->st_size bytes are head; 0 if implausible. */
uint64_t slot_st_bytes(const struct ruby_layout *hl, const uint8_t *head);

/*
 * Heap bytes the object owns besides its slot (see above), from its slot
 * words (at least max_slot_size / 8 of them).  A Hash on an st_table needs
 * the table's head: *need_st receives its address and the caller passes the
 * first st_size bytes to slot_st_bytes; otherwise *need_st is 0.  Inline: the
 * census calls it for every live slot.
 */
static inline uint64_t slot_owned_bytes(const struct ruby_layout *hl, const uint64_t *words,
					uint64_t *need_st)
{
	uint64_t flags = words[0], st_bytes;

	*need_st = 0;
	switch (flags & RB_T_MASK) {
	case RB_T_STRING:
		if ((flags & (hl->rstring_noembed | hl->str_shared | hl->str_nofree)) ==
		    hl->rstring_noembed)
			return slot_word_at(words, hl->str_capa) + 1;
		return 0;
	case RB_T_ARRAY:
		if (flags & (hl->rarray_embed_flag | hl->ary_shared))
			return 0;
		if (flags & hl->ary_shared_root)
			return slot_word_at(words, hl->rarray_heap_len) * 8;
		return slot_word_at(words, hl->ary_capa) * 8;
	case RB_T_HASH:
		if (hl->hash_tbl_inline) {
			/* 3.3+: the table's head is in the slot, only bins and entries are not */
			if (!(flags & hl->hash_st_flag))
				return 0;
			st_bytes = slot_st_bytes(hl, (const uint8_t *) words + hl->hash_tbl);
			return st_bytes > hl->st_size ? st_bytes - hl->st_size : 0;
		}
		if (!(flags & hl->hash_st_flag))
			return slot_word_at(words, hl->hash_tbl) ? hl->ar_table_size : 0;
		*need_st = slot_word_at(words, hl->hash_tbl);
		return 0;
	case RB_T_OBJECT:
		if ((flags & hl->obj_embed) || !hl->obj_numiv)
			return 0;
		return (uint64_t) (uint32_t) slot_word_at(words, hl->obj_numiv) * 8;
	case RB_T_BIGNUM:
		if (flags & hl->bignum_embed)
			return 0;
		return slot_word_at(words, hl->bignum_len) * hl->bdigit_size;
	case RB_T_STRUCT:
		if (flags & hl->struct_embed_len_mask)
			return 0;
		return slot_word_at(words, hl->struct_len) * 8;
	case RB_T_CLASS:
	case RB_T_MODULE:
		if (hl->classext_embedded)
			return 0;
		return slot_word_at(words, hl->rclass_ext) ? hl->classext_size : 0;
	}
	return 0;
}

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal to refs_decode.c and refs_resume.c: the helpers both halves of a decoder use. */
#ifndef RBM_REFS_IMPL_H
#define RBM_REFS_IMPL_H
#include "caps.h"
#include "refs.h"
#include "heap_caps.h"

#define ST_DELETED (~(uint64_t) 0) /* st.c RESERVED_HASH_VAL: a deleted entry's hash */

/*
 * Asks the driver for len bytes at addr (every decoder's read goes through
 * here): refused, and counted, once the walk's read budget is spent.
 */
void refs_need(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
	       uint8_t step, uint64_t aux);
/* refs_need, with wit's words read on both sides of the piece (wit->n may be 0). */
void refs_need_checked(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
		       uint8_t step, uint64_t aux, const struct refs_witness *wit);
/* A table or array read in part: counted as unread, and as a cap reached. */
void refs_cut(struct refs_meta *m);

/* A reference, passed on when v is a heap object. */
void refs_ref(const struct refs_sink *s, uint64_t v, uint8_t kind, uint32_t index, uint64_t a,
	      uint64_t b);
/* A reference from an internal field, named by a static string. */
void refs_field(const struct refs_sink *s, uint64_t v, const char *name);
uint64_t refs_word_at(const void *buf, uint32_t off);
uint32_t refs_u32_at(const void *buf, uint32_t off);
/* The slot's word at byte offset off, or 0 past the slot. */
uint64_t refs_slot_word(const uint64_t *words, uint32_t slot_size, uint32_t off);
/* Asks for n VALUEs at ptr, in reads of at most REFS_MAX_READ. */
void refs_need_values(struct refs_meta *m, uint64_t ptr, uint64_t n, uint8_t holds, uint64_t arg,
		      const struct refs_sink *s);
/* The st_table at tbl; owner: the word that points to it (its witness), or 0. */
void refs_st_table_at(struct refs_meta *m, uint64_t tbl, uint64_t owner, uint64_t aux,
		      const struct refs_sink *s);
/*
 * An st_table's live entries, from its head (entries, start, bound), read at
 * head_addr; owner: the word that points to the head, or 0.
 */
void refs_st_entries(struct refs_meta *m, const uint8_t *head, uint64_t head_addr, uint64_t owner,
		     uint64_t aux, const struct refs_sink *s);
void refs_id_table_at(struct refs_meta *m, uint64_t tbl, uint8_t holds, const struct refs_sink *s);
void refs_ar_pairs(const uint8_t *pairs, uint32_t n, const struct refs_sink *s);
/* What rb_classext_t holds (ext: its bytes, wherever they are). */
void refs_classext_refs(struct refs_meta *m, uint64_t flags, const uint8_t *ext, uint32_t len,
			const struct refs_sink *s);

#endif

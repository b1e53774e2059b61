/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal to refs_decode.c and refs_resume.c: the helpers both halves of a decoder use. */
#ifndef RBM_REFS_IMPL_H
#define RBM_REFS_IMPL_H
#include "caps.h"
#include "refs.h"
#include "heap_caps.h"

#define ST_DELETED (~(uint64_t) 0) /* st.c RESERVED_HASH_VAL: a deleted entry's hash */
#define RB31_QUNDEF 0x34	   /* 3.1's Qundef: an ivar slot not set (3.3+ count by shape) */

/* An st_table's aux arg: its entries are the object's size (a Hash's, an object's ivars). */
#define ST_OWN_SIZE 1

/*
 * Asks the driver for len bytes at addr (every decoder's read goes through
 * here): refused, and counted, once the walk's read budget is spent.
 */
void refs_need(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
	       uint8_t step, uint64_t aux);
/* refs_need, with wit's words read on both sides of the piece (wit->n may be 0). */
void refs_need_checked(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
		       uint8_t step, uint64_t aux, const struct refs_witness *wit);
/*
 * The next chunk of a table of esize-byte entries: [span.next, ...), at
 * most the meta's chunk bytes; wit (may be NULL or empty) witnesses it.
 * Nothing when the table is read; a chunk the budget refuses is said.
 */
void refs_next_chunk(struct refs_meta *m, const struct refs_sink *s, struct refs_span span,
		     uint32_t esize, uint8_t step, uint64_t aux, const struct refs_witness *wit);
/* A table of the object read in part (read of total entries, why): counted and said. */
void refs_part(struct refs_meta *m, const struct refs_sink *s, uint8_t holds, uint64_t read,
	       uint64_t total, enum refs_cut_why why);
/* The entries the object says it holds, to the driver. */
void refs_size(const struct refs_sink *s, uint64_t n);

/* A reference, passed on when v is a heap object. */
void refs_ref(const struct refs_sink *s, uint64_t v, uint8_t kind, uint32_t index, uint64_t a,
	      uint64_t b);
/* A reference from an internal field, named by a static string. */
void refs_field(const struct refs_sink *s, uint64_t v, const char *name);
uint64_t refs_word_at(const void *buf, uint32_t off);
uint32_t refs_u32_at(const void *buf, uint32_t off);
/* The slot's word at byte offset off, or 0 past the slot. */
uint64_t refs_slot_word(const uint64_t *words, uint32_t slot_size, uint32_t off);
/*
 * Asks for n VALUEs at ptr, a chunk at a time; owner: the word that points
 * to them (their witness), or 0.
 */
void refs_need_values(struct refs_meta *m, uint64_t ptr, uint64_t n, uint64_t owner, uint8_t holds,
		      uint64_t arg, const struct refs_sink *s);
/* The same with aux whole (REFS_AUX, and the tries so far in its top byte). */
void refs_need_values_aux(struct refs_meta *m, uint64_t ptr, uint64_t n, uint64_t owner,
			  uint64_t aux, const struct refs_sink *s);

/* The st_table at tbl; owner: the word that points to it (its witness), or 0. */
void refs_st_table_at(struct refs_meta *m, uint64_t tbl, uint64_t owner, uint64_t aux,
		      const struct refs_sink *s);
/*
 * An st_table's live entries, from its head (entries, start, bound), read at
 * head_addr; owner: the word that points to the head, or 0.
 */
void refs_st_entries(struct refs_meta *m, const uint8_t *head, uint64_t head_addr, uint64_t owner,
		     uint64_t aux, const struct refs_sink *s);
/* An rb_id_table at tbl; aux: what its values are (and the tries so far). */
void refs_id_table_at(struct refs_meta *m, uint64_t tbl, uint64_t aux, const struct refs_sink *s);
/* Its items, from its head read at tbl: a chunk at a time, witnessed by the items pointer. */
void refs_id_items(struct refs_meta *m, const uint8_t *head, uint64_t tbl, uint64_t aux,
		   const struct refs_sink *s);
void refs_ar_pairs(const uint8_t *pairs, uint32_t n, const struct refs_sink *s);
/* What rb_classext_t holds (ext: its bytes, wherever they are). */
void refs_classext_refs(struct refs_meta *m, uint64_t flags, const uint8_t *ext, uint32_t len,
			const struct refs_sink *s);

/* refs_marked.c: fibers, queues, generic ivars (what C mark functions mark) */
bool refs_marked_known(const struct ruby_layout *l, enum data_kind kind);
void refs_decode_marked(struct refs_meta *m, enum data_kind kind, uint64_t data, uint64_t type,
			const struct refs_sink *s);
void refs_decode_geniv(struct refs_meta *m, uint64_t addr, const uint64_t *words,
		       const struct refs_sink *s);
/* Resumes a step of refs_marked.c; false: not one of its steps. */
bool refs_resume_marked(struct refs_meta *m, uint8_t step, uint64_t aux, uint64_t from,
			const uint8_t *buf, uint32_t len, const struct refs_sink *s);

#endif

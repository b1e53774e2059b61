// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The edge decoders of refs.h, one per object type, as gc_mark_children
 * marks them in 3.1-3.4: what lies in the slot is referenced at once, what
 * lies behind a pointer is asked for (need) and handled in refs_resume.
 */
#include <string.h>
#include "refs_impl.h"

void refs_ref(const struct refs_sink *s, uint64_t v, uint8_t kind, uint32_t index, uint64_t a,
	      uint64_t b)
{
	struct ref_label l = {kind, index, a, b};

	if (refs_heap_value(v))
		s->ref(s->arg, v, &l);
}

void refs_field(const struct refs_sink *s, uint64_t v, const char *name)
{
	refs_ref(s, v, REF_FIELD, 0, (uint64_t) (uintptr_t) name, 0);
}

uint64_t refs_word_at(const void *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, (const char *) buf + off, sizeof(v));
	return v;
}

uint32_t refs_u32_at(const void *buf, uint32_t off)
{
	uint32_t v;

	memcpy(&v, (const char *) buf + off, sizeof(v));
	return v;
}

/* False if the budget refused it (a chunk's table is then said by its caller). */
static bool need(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
		 uint8_t step, uint64_t aux, const struct refs_witness *wit,
		 const struct refs_span *span)
{
	if (m->budgeted) {
		if (len > m->budget) {
			if (!span)
				m->gaps.n[GAP_UNREAD]++;
			caps_count(m->pid, CAP_WALK_BYTES);
			return false;
		}
		m->budget -= len;
	}
	s->need(s->arg, addr, len, step, aux, wit, span);
	return true;
}

void refs_need(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
	       uint8_t step, uint64_t aux)
{
	need(m, s, addr, len, step, aux, NULL, NULL);
}

void refs_need_checked(struct refs_meta *m, const struct refs_sink *s, uint64_t addr, uint32_t len,
		       uint8_t step, uint64_t aux, const struct refs_witness *wit)
{
	need(m, s, addr, len, step, aux, wit->n ? wit : NULL, NULL);
}

void refs_next_chunk(struct refs_meta *m, const struct refs_sink *s, struct refs_span span,
		     uint32_t esize, uint8_t step, uint64_t aux, const struct refs_witness *wit)
{
	uint64_t per = esize && m->chunk >= esize ? m->chunk / esize : 1, k, addr;

	if (span.next >= span.end || !esize)
		return;
	k = span.end - span.next < per ? span.end - span.next : per;
	addr = span.base + span.next * esize;
	span.next += k;
	if (!need(m, s, addr, (uint32_t) (k * esize), step, aux, wit && wit->n ? wit : NULL,
		  &span))
		refs_part(m, s, aux & 0xff, span.read, span.total, CUT_BUDGET);
}

/* The slot's word at byte offset off, or 0 past the slot. */
uint64_t refs_slot_word(const uint64_t *words, uint32_t slot_size, uint32_t off)
{
	return off + 8 <= slot_size ? words[off / 8] : 0;
}

/*
 * Asks for n VALUEs at ptr, a chunk at a time (each chunk's resume asks for
 * the next); the owner's word, when known, witnesses every chunk: an array
 * reallocated between two chunks is said read in part, not read stale.
 */
void refs_need_values(struct refs_meta *m, uint64_t ptr, uint64_t n, uint64_t owner, uint8_t holds,
		      uint64_t arg, const struct refs_sink *s)
{
	refs_need_values_aux(m, ptr, n, owner, REFS_AUX(holds, arg), s);
}

void refs_need_values_aux(struct refs_meta *m, uint64_t ptr, uint64_t n, uint64_t owner,
			  uint64_t aux, const struct refs_sink *s)
{
	struct refs_span span = {.base = ptr, .end = n, .total = n};
	struct refs_witness wit = {.n = owner ? 1 : 0, .addr = {owner}, .want = {ptr}};

	if (!n)
		return;
	if (!ptr || n > RUBY_MAX_ST_ENTRIES) {
		refs_part(m, s, aux & 0xff, 0, n, CUT_BOUNDS);
		return;
	}
	refs_next_chunk(m, s, span, 8, STEP_VALUES, aux, &wit);
}

/* ---- ivars ---- */

void refs_st_table_at(struct refs_meta *m, uint64_t tbl, uint64_t owner, uint64_t aux,
		      const struct refs_sink *s)
{
	struct refs_witness wit = {.n = owner ? 1 : 0, .addr = {owner}, .want = {tbl}};

	if (tbl)
		refs_need_checked(m, s, tbl, m->l->st_size, STEP_ST_HEAD, aux, &wit);
}

/* Where a shape's ivars are: in the slot (inline, at most inline_max), or at ptr. */
struct ivars_at {
	const uint64_t *inline_vals;
	uint32_t inline_max;
	uint64_t ptr, owner; /* owner: the word that points to ptr, or 0 */
	bool own;	     /* their count is the object's size (a T_OBJECT's, not a class's) */
};

/* 3.3+: the ivars of a shape; a too-complex shape keeps them in an st_table at ptr. */
static void refs_shape_ivars(struct refs_meta *m, uint32_t shape_id, const struct ivars_at *at,
			     const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t st_aux = REFS_AUX(HOLDS_IVARS_BY_ID, at->own ? ST_OWN_SIZE : 0);
	const struct shape_info *si;
	uint32_t i, n;

	if (shape_id == l->shape_too_complex_id) {
		refs_st_table_at(m, at->ptr, at->owner, st_aux, s);
		return;
	}
	si = refs_shape(m, shape_id);
	if (!si) {
		m->gaps.n[GAP_UNREAD]++;
		return;
	}
	if (si->type == l->shape_type_too_complex) {
		refs_st_table_at(m, at->ptr, at->owner, st_aux, s);
		return;
	}
	n = si->next_iv_index;
	if (at->own)
		refs_size(s, n);
	if (!at->inline_vals) {
		refs_need_values(m, at->ptr, n, at->owner, HOLDS_IVARS, shape_id, s);
		return;
	}
	for (i = 0; i < n && i < at->inline_max; i++)
		refs_ref(s, at->inline_vals[i], REF_IVAR_INDEX, i, shape_id, 0);
	if (n > at->inline_max) /* a shape with more ivars than its slot holds */
		refs_part(m, s, HOLDS_IVARS, at->inline_max, n, CUT_BOUNDS);
}

static void decode_object(struct refs_meta *m, uint64_t addr, const uint64_t *words,
			  uint32_t slot_size, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = words[0], klass = words[1], numiv;
	uint32_t i, start = l->obj_embed_start;

	if (l->shape_size) {
		uint32_t shape_id = (uint32_t) (flags >> l->shape_id_shift);
		struct ivars_at at = {.own = true};

		/* too complex: the st_table is at as.heap.ivptr whatever the embed flag says */
		if ((flags & l->obj_embed) && shape_id != l->shape_too_complex_id) {
			at.inline_vals = words + start / 8;
			at.inline_max = start < slot_size ? (slot_size - start) / 8 : 0;
		} else {
			at.ptr = refs_slot_word(words, slot_size, l->obj_ivptr);
			at.owner = addr + l->obj_ivptr;
		}
		refs_shape_ivars(m, shape_id, &at, s);
		return;
	}
	/* 3.1: as.ary[ROBJECT_EMBED_LEN_MAX], or as.heap.{numiv, ivptr}; named by the class */
	if (flags & l->obj_embed) {
		for (i = 0, numiv = 0; i < l->obj_embed_max && start + 8 * (i + 1) <= slot_size;
		     i++) {
			numiv += words[start / 8 + i] != RB31_QUNDEF;
			refs_ref(s, words[start / 8 + i], REF_IVAR_INDEX, i, klass, 0);
		}
		refs_size(s, numiv);
		return;
	}
	/* numiv is the room for ivars: the ivars set are counted as they are read */
	numiv = (uint32_t) refs_slot_word(words, slot_size, l->obj_numiv);
	refs_size(s, numiv);
	refs_need_values(m, refs_slot_word(words, slot_size, l->obj_ivptr), numiv,
			 addr + l->obj_ivptr, HOLDS_IVARS, klass, s);
}

/* ---- classes and modules ---- */

void refs_id_table_at(struct refs_meta *m, uint64_t tbl, uint64_t aux, const struct refs_sink *s)
{
	if (tbl)
		refs_need(m, s, tbl, m->l->id_table_items + 8, STEP_ID_HEAD, aux);
}

/*
 * struct rb_id_table is {int capa, num, used; item_t *items}: num follows
 * capa.  Items are read a chunk at a time, each witnessed by the items
 * pointer (a table grown meanwhile has new items).
 */
void refs_id_items(struct refs_meta *m, const uint8_t *head, uint64_t tbl, uint64_t aux,
		   const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t capa = refs_u32_at(head, l->id_table_capa);
	uint32_t num = refs_u32_at(head, l->id_table_capa + 4);
	uint64_t items = refs_word_at(head, l->id_table_items);
	struct refs_span span = {.base = items, .end = capa, .total = num};
	struct refs_witness wit = {.n = 1, .addr = {tbl + l->id_table_items}, .want = {items}};
	uint8_t holds = aux & 0xff;

	if (holds == HOLDS_CONSTS)
		refs_size(s, num);
	if (!num && (!items || !capa))
		return;
	if (!items || capa > RUBY_MAX_ID_CAPA || num > capa) {
		refs_part(m, s, holds, 0, num, CUT_BOUNDS);
		return;
	}
	refs_next_chunk(m, s, span, l->id_item_size, STEP_ID_ITEMS, aux, &wit);
}

/* What rb_classext_t holds (ext: its bytes, wherever they are). */
void refs_classext_refs(struct refs_meta *m, uint64_t flags, const uint8_t *ext, uint32_t len,
			const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;

	if (l->classext_const_tbl + 8 <= len)
		refs_id_table_at(m, refs_word_at(ext, l->classext_const_tbl),
				 REFS_AUX(HOLDS_CONSTS, 0), s);
	if (l->classext_m_tbl && l->classext_m_tbl + 8 <= len)
		refs_id_table_at(m, refs_word_at(ext, l->classext_m_tbl),
				 REFS_AUX(HOLDS_METHODS, 0), s);
	if (!l->shape_size) {
		if (l->classext_iv_tbl + 8 <= len)
			refs_st_table_at(m, refs_word_at(ext, l->classext_iv_tbl), 0,
					 REFS_AUX(HOLDS_IVARS_BY_ID, 0), s);
	} else if (l->classext_iv_ptr + 8 <= len) {
		struct ivars_at at = {.ptr = refs_word_at(ext, l->classext_iv_ptr)};

		refs_shape_ivars(m, (uint32_t) (flags >> l->shape_id_shift), &at, s);
	}
	if (l->classext_attached_object && l->classext_attached_object + 8 <= len &&
	    (flags & l->fl_singleton))
		refs_field(s, refs_word_at(ext, l->classext_attached_object), "(attached object)");
}

static void decode_class(struct refs_meta *m, uint64_t addr, const uint64_t *words,
			 uint32_t slot_size, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = words[0], ext;

	refs_ref(s, refs_slot_word(words, slot_size, l->rclass_super), REF_SUPER, 0, 0, 0);
	if ((flags & RB_T_MASK) == RB_T_ICLASS)
		return; /* its module is its klass; its tables are the module's */
	if (l->rclass_m_tbl)
		refs_id_table_at(m, refs_slot_word(words, slot_size, l->rclass_m_tbl),
				 REFS_AUX(HOLDS_METHODS, 0), s);
	if (l->classext_embedded) {
		if (l->rclass_ext < slot_size)
			refs_classext_refs(m, flags, (const uint8_t *) words + l->rclass_ext,
					   slot_size - l->rclass_ext, s);
		return;
	}
	ext = refs_slot_word(words, slot_size, l->rclass_ext);
	if (ext)
		refs_need(m, s, ext, l->classext_size, STEP_CLASSEXT, flags);
	(void) addr;
}

/* ---- arrays, hashes, structs, strings ---- */

static void decode_array(struct refs_meta *m, uint64_t addr, const uint64_t *words,
			 uint32_t slot_size, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = words[0], len, i;

	if (flags & l->rarray_embed_flag) {
		len = (flags & l->rarray_embed_len_mask) >> l->rarray_embed_len_shift;
		refs_size(s, len);
		for (i = 0; i < len && l->rarray_embed_start + 8 * (i + 1) <= slot_size; i++)
			refs_ref(s, words[l->rarray_embed_start / 8 + i], REF_ELEM, (uint32_t) i, 0,
				 0);
		return;
	}
	len = refs_slot_word(words, slot_size, l->rarray_heap_len);
	refs_size(s, len);
	if (flags & l->ary_shared) {
		refs_ref(s, refs_slot_word(words, slot_size, l->ary_aux_shared), REF_SHARED, 0, 0,
			 0);
		return;
	}
	refs_need_values(m, refs_slot_word(words, slot_size, l->rarray_heap_ptr), len,
			 addr + l->rarray_heap_ptr, HOLDS_ELEMS, 0, s);
}

/*
 * An st_table's live entries, from its head (entry_power, num_entries,
 * entries, start, bound), a chunk at a time.  Three words witness every
 * chunk: the head's first (its sizes and rebuilds_num), which st.c's
 * rebuild_table changes whenever it moves the entries, even in place; its
 * entries pointer, which differs in a new table built at a freed head's
 * address; and the owner's word (a Hash's table), which Hash#rehash swaps.
 * An insertion changes none of them (it appends past the bound read), a
 * deletion marks its entry: chunks read apart stay one table.  The head's
 * bounds are checked first (the target's bytes are hostile): start <= bound
 * <= the entries allocated (1 << entry_power), num_entries <= bound - start;
 * a head that fails them is read again a few times (it may have been read
 * half rewritten), then said.
 */
void refs_st_entries(struct refs_meta *m, const uint8_t *head, uint64_t head_addr, uint64_t owner,
		     uint64_t aux, const struct refs_sink *s)
{
	struct refs_witness wit = {
	    .n = 2,
	    .addr = {head_addr, head_addr + m->l->st_entries},
	    .want = {refs_word_at(head, 0), refs_word_at(head, m->l->st_entries)},
	};
	const struct ruby_layout *l = m->l;
	uint64_t entries = refs_word_at(head, l->st_entries),
		 start = refs_word_at(head, l->st_entries_start);
	uint64_t bound = refs_word_at(head, l->st_entries_bound);
	uint64_t num = refs_word_at(head, l->st_bins - 8); /* num_entries precedes bins */
	struct refs_span span = {.base = entries, .next = start, .end = bound, .total = num};
	uint8_t holds = aux & 0xff, power = head[0];

	if ((aux >> 8) & ST_OWN_SIZE)
		refs_size(s, num);
	if (!num && (!entries || bound <= start))
		return;
	if (!entries || power > 40 || bound > (1ull << power) || start > bound ||
	    num > bound - start || bound - start > RUBY_MAX_ST_ENTRIES) {
		/* a head read while the target rewrote it (st.c copies a rebuilt one over it) */
		if (aux >> REFS_TRIES_SHIFT < REFS_MAX_TRIES - 1) {
			m->stale_reads++;
			refs_st_table_at(m, head_addr, owner, aux + (1ull << REFS_TRIES_SHIFT), s);
			return;
		}
		refs_part(m, s, holds, 0, num, CUT_BOUNDS);
		return;
	}
	if (owner) {
		wit.n = 3;
		wit.addr[2] = owner;
		wit.want[2] = head_addr;
	}
	refs_next_chunk(m, s, span, l->st_entry_size, STEP_ST_ENTRIES, aux, &wit);
}

void refs_ar_pairs(const uint8_t *pairs, uint32_t n, const struct refs_sink *s)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		refs_ref(s, refs_word_at(pairs, i * 16), REF_HASH_KEY, i, 0, 0);
		refs_ref(s, refs_word_at(pairs, i * 16 + 8), REF_HASH_VALUE, i, 0, 0);
	}
}

static void decode_hash(struct refs_meta *m, uint64_t addr, const uint64_t *words,
			uint32_t slot_size, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = words[0], tbl;
	uint32_t bound = (uint32_t) ((flags & l->hash_ar_bound_mask) >> l->hash_ar_bound_shift);
	uint32_t pairs;

	refs_ref(s, refs_slot_word(words, slot_size, l->hash_ifnone), REF_HASH_DEFAULT, 0,
		 flags & l->hash_proc_default, 0);
	if (bound > 8)
		bound = 8;
	/* RHASH_AR_TABLE_SIZE: the 4 flag bits below the bound's (3.1-3.4) */
	if (!(flags & l->hash_st_flag) && l->hash_ar_bound_shift >= 4)
		refs_size(s, (flags >> (l->hash_ar_bound_shift - 4)) & 0xf);
	if (l->hash_tbl_inline) {
		/* 3.3+: the table lies in the slot after struct RHash */
		if (flags & l->hash_st_flag) {
			if (l->hash_tbl + l->st_size <= slot_size)
				refs_st_entries(m, (const uint8_t *) words + l->hash_tbl,
						addr + l->hash_tbl, 0,
						REFS_AUX(HOLDS_HASH, ST_OWN_SIZE), s);
			return;
		}
		pairs = l->hash_tbl + l->ar_table_pairs;
		if (pairs + bound * 16 <= slot_size)
			refs_ar_pairs((const uint8_t *) words + pairs, bound, s);
		return;
	}
	tbl = refs_slot_word(words, slot_size, l->hash_tbl);
	if (!tbl)
		return;
	if (flags & l->hash_st_flag)
		/* Hash#rehash swaps the table: the slot's word witnesses the head */
		refs_st_table_at(m, tbl, addr + l->hash_tbl, REFS_AUX(HOLDS_HASH, ST_OWN_SIZE), s);
	else if (bound)
		refs_need(m, s, tbl + l->ar_table_pairs, bound * 16, STEP_AR_TABLE, bound);
}

static void decode_struct(struct refs_meta *m, uint64_t addr, const uint64_t *words,
			  uint32_t slot_size, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = words[0], len, i;

	if (flags & l->struct_embed_len_mask) {
		len = (flags & l->struct_embed_len_mask) >> l->struct_embed_shift;
		refs_size(s, len);
		for (i = 0; i < len && l->struct_embed_start + 8 * (i + 1) <= slot_size; i++)
			refs_ref(s, words[l->struct_embed_start / 8 + i], REF_MEMBER, (uint32_t) i,
				 words[1], 0);
		return;
	}
	len = refs_slot_word(words, slot_size, l->struct_len);
	refs_size(s, len);
	refs_need_values(m, refs_slot_word(words, slot_size, l->struct_ptr), len,
			 addr + l->struct_ptr, HOLDS_MEMBERS, words[1], s);
}

static void decode_string(struct refs_meta *m, const uint64_t *words, uint32_t slot_size,
			  const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = words[0];

	if ((flags & l->rstring_noembed) && (flags & l->str_shared))
		refs_ref(s, refs_slot_word(words, slot_size, l->str_aux_shared), REF_SHARED, 0, 0,
			 0);
}

/* ---- T_DATA ---- */

static void decode_data(struct refs_meta *m, uint64_t addr, const uint64_t *words,
			uint32_t slot_size, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t typed = refs_slot_word(words, slot_size, l->tdata_typed_flag), data;
	uint64_t type = refs_slot_word(words, slot_size, l->tdata_type);
	struct data_type_info *ti;

	/* RTypedData.typed_flag is 1 (3.3+: | TYPED_DATA_EMBEDDED); RData has dfree there */
	if ((typed & ~(uint64_t) (1 | l->tdata_embedded)) || !(typed & 1)) {
		if (refs_slot_word(words, slot_size, l->data_dmark))
			m->gaps.n[GAP_OPAQUE_DATA]++;
		return;
	}
	ti = refs_data_type(m, type);
	data = (typed & l->tdata_embedded) ? addr + m->tdata_embedded_at
					   : refs_slot_word(words, slot_size, l->tdata_data);
	if (!data)
		return;
	switch (ti->kind) {
	case DATA_PROC:
	case DATA_BINDING:
		refs_need(m, s, data, l->block_type + 4, STEP_BLOCK, 0);
		break;
	case DATA_PIN_LIST:
		refs_need(m, s, data, l->pin_list_array + 8, STEP_PIN_LIST, 0);
		break;
	case DATA_DECL:
		if (ti->struct_len)
			refs_need(m, s, data, ti->struct_len, STEP_DATA_FIELDS, type);
		break;
	case DATA_THREAD:
	case DATA_FIBER:
	case DATA_QUEUE:
		refs_decode_marked(m, ti->kind, data, type, s);
		break;
	case DATA_OPAQUE:
		m->gaps.n[GAP_OPAQUE_DATA]++;
		ti->objects++;
		break;
	default:
		break; /* holds nothing, or only weakly */
	}
}

/* ---- imemo ---- */

static void decode_env(struct refs_meta *m, const uint64_t *words, uint32_t slot_size,
		       const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t iseq = refs_slot_word(words, slot_size, l->env_iseq);
	uint64_t env = refs_slot_word(words, slot_size, l->env_env);
	uint64_t ep = refs_slot_word(words, slot_size, l->env_ep);
	uint32_t size = (uint32_t) refs_slot_word(words, slot_size, l->env_size);

	refs_ref(s, iseq, REF_CODE, 0, 0, 0);
	refs_need_values(m, env, size, 0, HOLDS_LOCALS, iseq, s);
	/* ep[-1] is the outer ep (tagged), ep[0] the flags: an env without LOCAL has an outer one
	 */
	if (ep)
		refs_need(m, s, ep - 8, 16, STEP_ENV_SPECVAL, 0);
}

static void decode_imemo(struct refs_meta *m, const uint64_t *words, uint32_t slot_size,
			 const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t type = (uint32_t) (words[0] >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK;
	uint64_t def;
	uint32_t len;

	if (type == l->imemo_env) {
		decode_env(m, words, slot_size, s);
	} else if (type == l->imemo_ment) {
		refs_field(s, refs_slot_word(words, slot_size, l->me_owner), "(owner)");
		refs_field(s, refs_slot_word(words, slot_size, l->me_defined_class),
			   "(defined class)");
		def = refs_slot_word(words, slot_size, l->me_def);
		len = l->def_iseq > l->def_iseq_cref ? l->def_iseq : l->def_iseq_cref;
		if (l->def_bmethod_proc > len)
			len = l->def_bmethod_proc;
		if (def)
			refs_need(m, s, def, len + 8, STEP_METHOD_DEF, 0);
	} else if (type == l->imemo_cref) {
		refs_field(s, refs_slot_word(words, slot_size, l->cref_klass), "(cref class)");
		refs_field(s, refs_slot_word(words, slot_size, l->cref_next), "(cref next)");
	} else if (type == l->imemo_ifunc) {
		refs_field(s, refs_slot_word(words, slot_size, l->ifunc_data), "(C block data)");
	} else if (type == l->imemo_memo) {
		refs_field(s, refs_slot_word(words, slot_size, l->memo_v1), "(memo)");
		refs_field(s, refs_slot_word(words, slot_size, l->memo_v2), "(memo)");
	}
	/* iseqs (literals), call caches and the rest hold no object a program keeps */
}

void refs_decode(struct refs_meta *m, uint64_t addr, const uint64_t *words, uint32_t slot_size,
		 const struct refs_sink *s)
{
	uint32_t type = words[0] & RB_T_MASK;

	if (slot_size < 16 || type == RB_T_NONE || type == RB_T_ZOMBIE || type == RB_T_MOVED)
		return;
	if (type != RB_T_IMEMO)
		refs_ref(s, words[1], REF_CLASS, 0, 0, 0);
	if (words[0] & m->l->fl_exivar)
		refs_decode_geniv(m, addr, words, s);
	switch (type) {
	case RB_T_OBJECT:
		decode_object(m, addr, words, slot_size, s);
		break;
	case RB_T_CLASS:
	case RB_T_MODULE:
	case RB_T_ICLASS:
		decode_class(m, addr, words, slot_size, s);
		break;
	case RB_T_ARRAY:
		decode_array(m, addr, words, slot_size, s);
		break;
	case RB_T_HASH:
		decode_hash(m, addr, words, slot_size, s);
		break;
	case RB_T_STRUCT:
		decode_struct(m, addr, words, slot_size, s);
		break;
	case RB_T_STRING:
		decode_string(m, words, slot_size, s);
		break;
	case RB_T_DATA:
		decode_data(m, addr, words, slot_size, s);
		break;
	case RB_T_IMEMO:
		decode_imemo(m, words, slot_size, s);
		break;
	default:
		break;
	}
}

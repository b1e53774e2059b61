// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* refs.h's continuations: what a decoder does with the memory it asked for. */
#include <string.h>
#include "refs_impl.h"

/* ---- tables read in part, and sizes ---- */

void refs_part(struct refs_meta *m, const struct refs_sink *s, uint8_t holds, uint64_t read,
	       uint64_t total, enum refs_cut_why why)
{
	struct refs_part p = {holds, (uint8_t) why, read < total ? read : total, total};

	m->gaps.n[GAP_UNREAD]++;
	if (why == CUT_BOUNDS)
		caps_count(m->pid, CAP_TABLE_READ);
	if (s->part)
		s->part(s->arg, &p);
}

void refs_size(const struct refs_sink *s, uint64_t n)
{
	if (s->size)
		s->size(s->arg, n);
}

/* ---- resuming with what was read ---- */

/* The index of a chunk's first entry in its table (0 for a piece that is no chunk). */
static uint32_t first_index(const struct refs_span *span, uint64_t from, uint32_t esize)
{
	return span && esize && from >= span->base ? (uint32_t) ((from - span->base) / esize) : 0;
}

/* Values of a chunk: how many were read. */
static uint64_t resume_values(const uint8_t *buf, uint32_t len, uint64_t aux, uint64_t from,
			      const struct refs_span *span, const struct refs_sink *s)
{
	uint8_t holds = aux & 0xff;
	uint64_t arg = aux >> 8 & ((1ull << 48) - 1);
	uint32_t i, n = len / 8, at = first_index(span, from, 8);
	uint64_t locals = span ? span->total : n;

	for (i = 0; i < n; i++) {
		uint64_t v = refs_word_at(buf, i * 8);

		switch (holds) {
		case HOLDS_ELEMS:
			refs_ref(s, v, REF_ELEM, at + i, 0, 0);
			break;
		case HOLDS_IVARS:
		case HOLDS_GENIVS:
			refs_ref(s, v, REF_IVAR_INDEX, at + i, arg, 0);
			break;
		case HOLDS_MEMBERS:
			refs_ref(s, v, REF_MEMBER, at + i, arg, 0);
			break;
		case HOLDS_LOCALS:
			refs_ref(s, v, REF_LOCAL, at + i, arg, locals);
			break;
		case HOLDS_STACK:
			refs_ref(s, v, REF_FIELD, at + i, (uint64_t) (uintptr_t) "(fiber's stack)", 0);
			break;
		default:
			break;
		}
	}
	return n;
}

/* Entries of an st_table's chunk: how many live ones were read. */
static uint64_t resume_st_entries(struct refs_meta *m, const uint8_t *buf, uint32_t len,
				  uint64_t aux, uint64_t from, const struct refs_span *span,
				  const struct refs_sink *s)
{
	uint32_t size = m->l->st_entry_size, i, n = size ? len / size : 0;
	uint32_t at = first_index(span, from, size);
	uint8_t holds = aux & 0xff;
	uint64_t live = 0;

	for (i = 0; i < n; i++) {
		const uint8_t *e = buf + (size_t) i * size;
		uint64_t key = refs_word_at(e, 8), rec = refs_word_at(e, 16);

		if (refs_word_at(e, 0) == ST_DELETED)
			continue;
		live++;
		if (holds == HOLDS_IVARS_BY_ID) {
			refs_ref(s, rec, REF_IVAR_ID, 0, key, 0);
			continue;
		}
		refs_ref(s, key, REF_HASH_KEY, at + i, 0, 0);
		refs_ref(s, rec, REF_HASH_VALUE, at + i, 0, 0);
	}
	return live;
}

/* Items of an rb_id_table's chunk: how many were read. */
static uint64_t resume_id_items(struct refs_meta *m, const uint8_t *buf, uint32_t len, uint64_t aux,
				const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t i, n = len / l->id_item_size;
	uint8_t holds = aux & 0xff;
	uint64_t got = 0;

	for (i = 0; i < n; i++) {
		const uint8_t *item = buf + (size_t) i * l->id_item_size;
		uint32_t key = refs_u32_at(item, 0);
		uint64_t v = refs_word_at(item, l->id_item_value);

		if (!key || !v)
			continue;
		got++;
		if (holds == HOLDS_CONSTS)
			refs_need(m, s, v, l->const_entry_value + 8, STEP_CONST_ENTRY, key);
		else if (holds == HOLDS_METHODS)
			refs_ref(s, v, REF_METHOD, 0, key, 0);
		else if (holds == HOLDS_FIBER_LOCALS)
			refs_ref(s, v, REF_THREAD_LOCAL, 0, key, 0);
	}
	return got;
}

/* A chunk read (got entries of it): the table's next chunk, witnessed as this one was. */
static void next_chunk(struct refs_meta *m, const struct refs_span *span, uint64_t got,
		       uint32_t esize, uint8_t step, uint64_t aux, const struct refs_witness *wit,
		       const struct refs_sink *s)
{
	struct refs_span next;

	if (!span)
		return;
	next = *span;
	next.read += got;
	next.chunks++;
	refs_next_chunk(m, s, next, esize, step, aux, wit);
}

/* The piece of a chunked table could not be read (why): the table is said read in part. */
static void chunk_lost(struct refs_meta *m, uint8_t step, uint64_t aux,
		       const struct refs_span *span, enum refs_cut_why why,
		       const struct refs_sink *s)
{
	if (span)
		refs_part(m, s, aux & 0xff, span->read, span->total, why);
	else if (step == STEP_ST_HEAD || step == STEP_ID_HEAD)
		refs_part(m, s, aux & 0xff, 0, 0, why); /* a table's head: its size unknown */
	else
		m->gaps.n[GAP_UNREAD]++;
}

static void resume_block(struct refs_meta *m, const uint8_t *buf, uint32_t len,
			 const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t type;
	uint64_t ep;

	if (len < l->block_type + 4)
		return;
	type = refs_u32_at(buf, l->block_type);
	if (type != l->block_type_iseq && type != l->block_type_ifunc) {
		/* a Symbol's or a Proc's block: the union's first word */
		refs_ref(s, refs_word_at(buf, 0), REF_CODE, 0, 0, 0);
		return;
	}
	refs_ref(s, refs_word_at(buf, l->block_self), REF_BLOCK_SELF, 0, 0, 0);
	refs_ref(s, refs_word_at(buf, l->block_code), REF_CODE, 0, 0, 0);
	ep = refs_word_at(buf, l->block_ep);
	/* VM_ENV_DATA_INDEX_ENV: a captured block's ep escaped to the heap; ep[1] is its env */
	if (ep && !(ep & 7))
		refs_need(m, s, ep + 8, 8, STEP_EP_ENV, 0);
}

static void resume_method_def(struct refs_meta *m, const uint8_t *buf, uint32_t len,
			      const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t type = refs_u32_at(buf, 0) & 0xf;

	if (type == l->method_type_iseq && l->def_iseq_cref + 8 <= len) {
		refs_ref(s, refs_word_at(buf, l->def_iseq), REF_CODE, 0, 0, 0);
		refs_field(s, refs_word_at(buf, l->def_iseq_cref), "(cref)");
	} else if (type == l->method_type_bmethod && l->def_bmethod_proc + 8 <= len) {
		refs_ref(s, refs_word_at(buf, l->def_bmethod_proc), REF_CODE, 0, 0, 0);
	} else if (type == l->method_type_alias && l->def_alias_me + 8 <= len) {
		refs_field(s, refs_word_at(buf, l->def_alias_me), "(aliased method)");
	}
}

/*
 * An Array whose elements moved while they were read (it grew: realloc, or
 * mremap past glibc's mmap threshold, unmaps the old buffer): its slot is
 * read again, up to its heap ptr, and its elements from where they are now.
 */
static void array_again(struct refs_meta *m, uint64_t ptr_word, uint64_t aux,
			const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t slot = ptr_word - l->rarray_heap_ptr, tries = (aux >> REFS_TRIES_SHIFT) + 1;

	refs_need(m, s, slot, l->rarray_heap_ptr + 8, STEP_ARRAY_HEAP, tries << REFS_TRIES_SHIFT);
}

/* The slot read again (array_again): its elements, unless it is another object now. */
static void array_heap(struct refs_meta *m, uint64_t slot, const uint8_t *buf, uint32_t len,
		       uint64_t aux, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t flags = refs_word_at(buf, 0);

	if (len < l->rarray_heap_ptr + 8 || (flags & RB_T_MASK) != RB_T_ARRAY ||
	    (flags & l->rarray_embed_flag) || (flags & l->ary_shared)) {
		refs_part(m, s, HOLDS_ELEMS, 0, 0, CUT_CHANGED);
		return;
	}
	refs_need_values_aux(m, refs_word_at(buf, l->rarray_heap_ptr),
			     refs_word_at(buf, l->rarray_heap_len), slot + l->rarray_heap_ptr,
			     (aux >> REFS_TRIES_SHIFT << REFS_TRIES_SHIFT) | HOLDS_ELEMS, s);
}

/*
 * What a piece's witness says changed while it was read: the bytes may be
 * freed memory, so they are dropped and the piece is read again from what
 * the witness points to now, a few times at most (a table rebuilt without
 * end is counted unread).
 */
static void resume_stale(struct refs_meta *m, uint8_t step, uint64_t aux,
			 const struct refs_witness *wit, const struct refs_span *span,
			 const struct refs_sink *s)
{
	uint64_t head_aux = aux + (1ull << REFS_TRIES_SHIFT);

	/*
	 * A table that changed after some of its chunks were read is read
	 * again whole from its head (what its first chunks held is walked
	 * twice: edges again, no harm), a few times; then the chunks read
	 * stand and the rest is said.
	 */
	if (aux >> REFS_TRIES_SHIFT >= REFS_MAX_TRIES - 1 || !wit->read) {
		chunk_lost(m, step, aux, span, wit->read ? CUT_CHANGED : CUT_UNREADABLE, s);
		return;
	}
	if (step == STEP_ST_HEAD || step == STEP_ST_ENTRIES || step == STEP_ID_ITEMS)
		m->stale_reads++; /* read again below */
	switch (step) {
	case STEP_ST_HEAD:
		/* the owner holds another table now (Hash#rehash): that one */
		refs_st_table_at(m, wit->after[0], wit->addr[0], head_aux, s);
		break;
	case STEP_ST_ENTRIES:
		/*
		 * Rebuilt (grown, compacted) or swapped: the head again, where the
		 * owner points now (witness 2), or where it was (no owner).
		 */
		if (wit->n > 2)
			refs_st_table_at(m, wit->after[2], wit->addr[2], head_aux, s);
		else
			refs_st_table_at(m, wit->addr[0], 0, head_aux, s);
		break;
	case STEP_ID_ITEMS:
		/* an id table grown: its head again (the witness is its items pointer) */
		refs_id_table_at(m, wit->addr[0] - m->l->id_table_items, head_aux, s);
		break;
	case STEP_VALUES:
		/* an Array's elements moved (the witness is its heap ptr): its slot again */
		if ((aux & 0xff) == HOLDS_ELEMS && wit->n == 1) {
			m->stale_reads++;
			array_again(m, wit->addr[0], aux, s);
			break;
		}
		chunk_lost(m, step, aux, span, CUT_CHANGED, s);
		break;
	default:
		/* values whose owner points elsewhere now: no head to read them again from */
		chunk_lost(m, step, aux, span, CUT_CHANGED, s);
		break;
	}
}

/* Over ~60 lines: one switch over the steps a read resumes, each case a few lines. */
void refs_resume(struct refs_meta *m, uint64_t addr, uint8_t step, uint64_t aux, uint64_t from,
		 const void *buf, uint32_t len, bool ok, const struct refs_witness *wit,
		 const struct refs_span *span, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	const struct data_type_info *ti;
	uint64_t prev, got;
	uint32_t i;

	(void) addr;
	if (wit && !refs_witness_holds(wit)) {
		resume_stale(m, step, aux, wit, span, s);
		return;
	}
	if (!ok) {
		chunk_lost(m, step, aux, span, CUT_UNREADABLE, s);
		return;
	}
	switch (step) {
	case STEP_VALUES:
		got = resume_values(buf, len, aux, from, span, s);
		/* 3.1's heap ivars: the ivars set, once all are read (numiv is their room) */
		if ((aux & 0xff) == HOLDS_IVARS && !l->shape_size) {
			for (i = 0, got = 0; i < len / 8; i++)
				got += refs_word_at(buf, i * 8) != RB31_QUNDEF;
			if (span && span->next >= span->end)
				refs_size(s, span->read + got);
		}
		next_chunk(m, span, got, 8, step, aux, wit, s);
		break;
	case STEP_AR_TABLE:
		refs_ar_pairs(buf, len / 16, s);
		break;
	case STEP_ST_HEAD:
		if (len >= l->st_size)
			refs_st_entries(m, buf, from, wit ? wit->addr[0] : 0, aux, s);
		break;
	case STEP_ST_ENTRIES:
		got = resume_st_entries(m, buf, len, aux, from, span, s);
		next_chunk(m, span, got, l->st_entry_size, step, aux, wit, s);
		break;
	case STEP_CLASSEXT:
		refs_classext_refs(m, aux, buf, len, s);
		break;
	case STEP_ID_HEAD:
		if (len >= l->id_table_items + 8)
			refs_id_items(m, buf, from, aux, s);
		break;
	case STEP_ID_ITEMS:
		got = resume_id_items(m, buf, len, aux, s);
		next_chunk(m, span, got, l->id_item_size, step, aux, wit, s);
		break;
	case STEP_CONST_ENTRY:
		refs_ref(s, refs_word_at(buf, l->const_entry_value), REF_CONST, 0, aux, 0);
		break;
	case STEP_BLOCK:
		resume_block(m, buf, len, s);
		break;
	case STEP_EP_ENV:
		refs_ref(s, refs_word_at(buf, 0), aux ? REF_OUTER_ENV : REF_BLOCK_ENV, 0, 0, 0);
		break;
	case STEP_ENV_SPECVAL:
		prev = refs_word_at(buf, 0) & ~(uint64_t) 3;
		if (!(refs_word_at(buf, 8) & l->env_flag_local) && prev && !(prev & 7))
			refs_need(m, s, prev + 8, 8, STEP_EP_ENV, 1);
		break;
	case STEP_METHOD_DEF:
		resume_method_def(m, buf, len, s);
		break;
	case STEP_THREAD:
		refs_ref(s, refs_word_at(buf, l->thread_value), REF_FIELD, 0,
			 (uint64_t) (uintptr_t) "(thread value)", 0);
		if (refs_u32_at(buf, l->thread_invoke_type) == l->thread_invoke_type_proc)
			refs_ref(s, refs_word_at(buf, l->thread_invoke_proc), REF_CODE, 0, 0, 0);
		break;
	case STEP_ARRAY_HEAP:
		array_heap(m, from, buf, len, aux, s);
		break;
	case STEP_PIN_LIST:
		refs_field(s, refs_word_at(buf, l->pin_list_next), "(next list)");
		refs_need_values(m, refs_word_at(buf, l->pin_list_array),
				 refs_word_at(buf, l->pin_list_len), 0, HOLDS_ELEMS, 0, s);
		break;
	case STEP_DATA_FIELDS:
		ti = refs_data_type(m, aux);
		for (i = 0; i < ti->noffsets; i++)
			if (ti->offsets[i] + 8 <= len)
				refs_ref(s, refs_word_at(buf, (uint32_t) ti->offsets[i]),
					 REF_DATA_FIELD, (uint32_t) ti->offsets[i], aux, 0);
		break;
	default:
		refs_resume_marked(m, step, aux, from, buf, len, s);
		break;
	}
}

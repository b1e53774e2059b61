// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What Ruby's C mark functions mark that `why` reads as data: a Thread's
 * value and block (its stack is a root: vm_roots.c), a Fiber's
 * stack (cont.c fiber_mark: its saved ec's VM stack, frames' selves,
 * fiber locals, its first block), a Queue's or SizedQueue's array
 * (thread_sync.c queue_mark), and the generic ivars of objects that are
 * not T_OBJECT (variable.c rb_mark_generic_ivar).  Each is checked per
 * object as it is read: a fiber's saved ec points back at the fiber, a
 * queue's que is a hidden Array; what fails is counted with the opaque
 * T_DATA of its type, never followed.
 */
#include "refs_impl.h"

#define FIBER_FRAMES_MAX (1u << 20) /* bytes of control frames read at most */

/* ---- generic ivars ---- */

void refs_decode_geniv(struct refs_meta *m, uint64_t addr, const uint64_t *words,
		       const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t tbl = (uint64_t) (uintptr_t) u64map_get(&m->genivs, addr);
	const struct shape_info *si;
	uint32_t shape_id, type = words[0] & RB_T_MASK;

	/* a T_OBJECT's and a class's ivars are their own */
	if (!l->fl_exivar || type == RB_T_OBJECT || type == RB_T_CLASS || type == RB_T_MODULE ||
	    type == RB_T_ICLASS || type == RB_T_IMEMO)
		return;
	if (!tbl) {
		m->genivs_missing++;
		return;
	}
	m->genivs_walked++;
	if (!l->shape_size) {
		/* 3.1: {uint32_t numiv; VALUE ivptr[]}, indexed as the class's ivars */
		refs_need(m, s, tbl, 8, STEP_GENIV_HEAD, words[1]);
		return;
	}
	shape_id = (uint32_t) (words[0] >> l->shape_id_shift);
	si = shape_id == l->shape_too_complex_id ? NULL : refs_shape(m, shape_id);
	if (shape_id == l->shape_too_complex_id || (si && si->type == l->shape_type_too_complex)) {
		refs_need(m, s, tbl, 8, STEP_GENIV_COMPLEX, 0); /* as.complex.table */
		return;
	}
	if (!si) {
		m->gaps.n[GAP_UNREAD]++;
		return;
	}
	refs_need_values(m, tbl + l->geniv_ivptr, si->next_iv_index, 0, HOLDS_GENIVS, shape_id, s);
}

/* ---- fibers and queues ---- */

static uint32_t fiber_len(const struct ruby_layout *l)
{
	uint32_t ec = l->ec_cfp > l->ec_fiber_ptr ? l->ec_cfp : l->ec_fiber_ptr;
	uint32_t len;

	if (l->ec_local_storage > ec)
		ec = l->ec_local_storage;
	if (l->ec_vm_stack_size > ec)
		ec = l->ec_vm_stack_size;
	len = l->fiber_saved_ec + ec + 8;
	return l->fiber_first_proc + 8 > len ? l->fiber_first_proc + 8 : len;
}

/* Whether a data kind this file reads is known for this Ruby; else it stays opaque. */
bool refs_marked_known(const struct ruby_layout *l, enum data_kind kind)
{
	if (kind == DATA_FIBER)
		return l->fiber_saved_ec && l->ec_fiber_ptr && l->cfp_size;
	if (kind == DATA_QUEUE)
		return l->queue_que != 0;
	return false;
}

void refs_decode_marked(struct refs_meta *m, enum data_kind kind, uint64_t data, uint64_t type,
			const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t len;

	if (kind == DATA_THREAD) {
		len = l->thread_value > l->thread_invoke_type ? l->thread_value
							      : l->thread_invoke_type;
		if (l->thread_invoke_proc > len)
			len = l->thread_invoke_proc;
		refs_need(m, s, data, len + 8, STEP_THREAD, 0);
	} else if (kind == DATA_FIBER) {
		refs_need(m, s, data, fiber_len(l), STEP_FIBER, type);
	} else if (kind == DATA_QUEUE) {
		refs_need(m, s, data, l->queue_que + 8, STEP_QUEUE, type);
	}
}

/* A fiber or queue that failed its check: opaque, as if its mark function were unknown. */
static void unproved(struct refs_meta *m, uint64_t type)
{
	struct data_type_info *ti = refs_data_type(m, type);

	m->gaps.n[GAP_OPAQUE_DATA]++;
	ti->objects++;
}

static void resume_fiber(struct refs_meta *m, uint64_t fiber, const uint8_t *buf, uint32_t len,
			 uint64_t type, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint32_t ec = l->fiber_saved_ec;
	uint64_t stack, size, cfp, end;

	if (len < fiber_len(l) || refs_word_at(buf, ec + l->ec_fiber_ptr) != fiber) {
		m->fibers_unproved++;
		unproved(m, type);
		return;
	}
	if (l->fiber_first_proc)
		refs_field(s, refs_word_at(buf, l->fiber_first_proc), "(fiber's block)");
	refs_id_table_at(m, refs_word_at(buf, ec + l->ec_local_storage),
			 REFS_AUX(HOLDS_FIBER_LOCALS, 0), s);
	stack = refs_word_at(buf, ec + l->ec_vm_stack);
	size = refs_word_at(buf, ec + l->ec_vm_stack_size);
	cfp = refs_word_at(buf, ec + l->ec_cfp);
	end = stack + size * 8;
	/* not started, or terminated: no stack */
	if (!stack || (stack & 7) || size > (1u << 24) || cfp < stack || cfp >= end)
		return;
	m->fibers_walked++;
	if (end - cfp > FIBER_FRAMES_MAX)
		end = cfp + FIBER_FRAMES_MAX;
	end -= (end - cfp) % l->cfp_size;
	if (end > cfp)
		refs_need(m, s, cfp, (uint32_t) (end - cfp), STEP_FIBER_FRAMES, stack);
}

/* The control frames from ec->cfp up: the values below the top frame's sp, each frame's self. */
static void resume_fiber_frames(struct refs_meta *m, uint64_t cfp, const uint8_t *buf, uint32_t len,
				uint64_t stack, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t sp = refs_word_at(buf, l->cfp_sp);
	uint32_t i;

	if (sp >= stack && sp <= cfp && !(sp & 7))
		refs_need_values(m, stack, (sp - stack) / 8, 0, HOLDS_STACK, 0, s);
	for (i = 0; i + l->cfp_size <= len; i += l->cfp_size)
		refs_field(s, refs_word_at(buf, i + l->cfp_self), "(a fiber frame's self)");
}

bool refs_resume_marked(struct refs_meta *m, uint8_t step, uint64_t aux, uint64_t from,
			const uint8_t *buf, uint32_t len, const struct refs_sink *s)
{
	const struct ruby_layout *l = m->l;
	uint64_t v;

	switch (step) {
	case STEP_GENIV_HEAD:
		v = refs_u32_at(buf, 0);
		if (len >= 4 && v < (1u << 16))
			refs_need_values(m, from + l->geniv_ivptr, v, 0, HOLDS_GENIVS, aux, s);
		return true;
	case STEP_GENIV_COMPLEX:
		refs_st_table_at(m, refs_word_at(buf, 0), from, REFS_AUX(HOLDS_IVARS_BY_ID, 0), s);
		return true;
	case STEP_FIBER:
		resume_fiber(m, from, buf, len, aux, s);
		return true;
	case STEP_FIBER_FRAMES:
		resume_fiber_frames(m, from, buf, len, aux, s);
		return true;
	case STEP_QUEUE:
		v = len >= l->queue_que + 8 ? refs_word_at(buf, l->queue_que) : 0;
		if (refs_heap_value(v))
			refs_need(m, s, v, 16, STEP_QUEUE_ARRAY, aux);
		return true;
	case STEP_QUEUE_ARRAY:
		/* que is ary_buf_new()'s hidden Array: klass 0 */
		if (len >= 16 && (refs_word_at(buf, 0) & RB_T_MASK) == RB_T_ARRAY &&
		    !refs_word_at(buf, 8))
			refs_field(s, from, "(queue)");
		else
			unproved(m, aux);
		return true;
	default:
		return false;
	}
}

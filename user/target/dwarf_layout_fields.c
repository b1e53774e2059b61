// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every numeric field of struct ruby_offsets and struct heap_layout, by name:
 * the generator prints entries from these lists, and the tests compare
 * layouts with them (test_dwarf_layout.c checks, through the fixture's
 * DWARF, that no field of either structure is missing here).
 */
#include <string.h>
#include "dwarf_layout.h"

#define RO(f, hex)                                                                                 \
	{                                                                                          \
#f, offsetof(struct ruby_offsets, f), sizeof(((struct ruby_offsets *) 0)->f), hex  \
	}
#define HL(f, hex)                                                                                 \
	{                                                                                          \
#f, offsetof(struct heap_layout, f), sizeof(((struct heap_layout *) 0)->f), hex    \
	}

const struct layout_field ruby_offsets_fields[] = {
    RO(supported, 0),
    RO(rclass_ext, 0),
    RO(classext_embedded, 0),
    RO(classext_iv_tbl, 0),
    RO(classext_allocator, 0),
    RO(classext_classpath, 0),
    RO(classext_attached_object, 0),
    RO(fl_singleton, 1),
    RO(st_entries_start, 0),
    RO(st_entries_bound, 0),
    RO(st_entries, 0),
    RO(st_entry_size, 0),
    RO(rstring_noembed, 1),
    RO(rstring_embed_len_mask, 1),
    RO(rstring_embed_len_shift, 0),
    RO(rstring_embed_start, 0),
    RO(rstring_heap_len, 0),
    RO(rstring_heap_ptr, 0),
    RO(rstring_len, 0),
    RO(rarray_embed_flag, 1),
    RO(rarray_embed_len_mask, 1),
    RO(rarray_embed_len_shift, 0),
    RO(rarray_embed_start, 0),
    RO(rarray_heap_len, 0),
    RO(rarray_heap_ptr, 0),
    RO(ec_vm_stack, 0),
    RO(ec_vm_stack_size, 0),
    RO(ec_cfp, 0),
    RO(cfp_size, 0),
    RO(cfp_pc, 0),
    RO(cfp_iseq, 0),
    RO(cfp_ep, 0),
    RO(cfp_self, 0),
    RO(iseq_body, 0),
    RO(body_iseq_encoded, 0),
    RO(body_iseq_size, 0),
    RO(body_location_pathobj, 0),
    RO(body_location_label, 0),
    RO(body_first_lineno, 0),
    RO(body_first_lineno_size, 0),
    RO(body_insns_info_body, 0),
    RO(body_insns_info_size, 0),
    RO(body_succ_index_table, 0),
    RO(insn_info_size, 0),
    RO(insn_info_line_no, 0),
    RO(imemo_iseq, 0),
    RO(cme_def, 0),
    RO(cme_owner, 0),
    RO(def_original_id, 0),
    RO(imemo_ment, 0),
    RO(rclass_super, 0),
    RO(classext_m_tbl, 0),
    RO(rclass_m_tbl, 0),
    RO(me_def, 0),
    RO(me_owner, 0),
    RO(def_iseq, 0),
    RO(method_type_iseq, 0),
    RO(body_type, 0),
    RO(body_local_iseq, 0),
    RO(iseq_type_method, 0),
    RO(iseq_type_block, 0),
    RO(id_table_capa, 0),
    RO(id_table_items, 0),
    RO(id_item_size, 0),
    RO(id_item_value, 0),
    RO(id_last_op, 1),
    RO(id_next, 0),
    RO(id_initialize, 1),
    RO(vm_objspace, 0),
    RO(objspace_compact_count, 0),
    RO(objspace_total_allocated, 0),
    RO(objspace_total_freed, 0),
    RO(objspace_gc_count, 0),
    RO(objspace_pools, 0),
    RO(pool_count, 0),
    RO(pool_size, 0),
    RO(pool_total_allocated, 0),
    RO(pool_total_freed, 0),
};
const size_t ruby_offsets_nfields = sizeof(ruby_offsets_fields) / sizeof(ruby_offsets_fields[0]);

const struct layout_field heap_layout_fields[] = {
    HL(supported, 0),
    HL(os_flags, 0),
    HL(os_flags_mode_mask, 1),
    HL(os_flags_incremental, 1),
    HL(os_flags_compacting, 1),
    HL(os_flags_during_gc, 1),
    HL(os_sorted, 0),
    HL(os_allocated_pages, 0),
    HL(sorted_darray_data, 0),
    HL(os_gc_count, 0),
    HL(os_total_allocated, 0),
    HL(os_total_freed, 0),
    HL(os_pools, 0),
    HL(pool_count, 0),
    HL(pool_size, 0),
    HL(pool_slot_size, 0),
    HL(pool_total_allocated, 0),
    HL(pool_total_freed, 0),
    HL(page_read_size, 0),
    HL(page_slot_size, 0),
    HL(page_total_slots, 0),
    HL(page_flags, 0),
    HL(page_before_sweep, 1),
    HL(page_start, 0),
    HL(page_wb_unprotected_bits, 0),
    HL(page_mark_bits, 0),
    HL(page_age_bits, 0),
    HL(bitmap_words, 0),
    HL(page_size, 0),
    HL(bit_granule, 0),
    HL(max_slots, 0),
    HL(slot_size, 0),
    HL(max_slot_size, 0),
    HL(fl_age_mask, 1),
    HL(fl_age_shift, 0),
    HL(old_age, 0),
    HL(fl_exivar, 1),
    HL(str_noembed, 1),
    HL(str_shared, 1),
    HL(str_nofree, 1),
    HL(str_capa, 0),
    HL(ary_embed, 1),
    HL(ary_shared, 1),
    HL(ary_shared_root, 1),
    HL(ary_len, 0),
    HL(ary_capa, 0),
    HL(obj_embed, 1),
    HL(obj_numiv, 0),
    HL(hash_st_flag, 1),
    HL(hash_tbl, 0),
    HL(hash_tbl_inline, 0),
    HL(ar_table_size, 0),
    HL(st_size, 0),
    HL(st_bins, 0),
    HL(st_entry_size, 0),
    HL(st_max_power_no_bins, 0),
    HL(bignum_embed, 1),
    HL(bignum_len, 0),
    HL(bdigit_size, 0),
    HL(struct_embed_len_mask, 1),
    HL(struct_len, 0),
    HL(class_ext, 0),
    HL(classext_size, 0),
};
const size_t heap_layout_nfields = sizeof(heap_layout_fields) / sizeof(heap_layout_fields[0]);

uint64_t layout_field_get(const void *obj, const struct layout_field *f)
{
	const char *p = (const char *) obj + f->offset;
	uint32_t v32;
	uint64_t v64;

	if (f->size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "ruby_layout.h"

#define F(f, hex)                                                                                  \
	{                                                                                          \
#f, offsetof(struct ruby_layout, f), sizeof(((struct ruby_layout *) 0)->f), hex    \
	}

/* In the structure's order; test_ruby_layout.c checks none is missing. */
const struct layout_field ruby_layout_fields[] = {
    F(rclass_ext, 0),
    F(classext_embedded, 0),
    F(classext_size, 0),
    F(classext_iv_tbl, 0),
    F(classext_allocator, 0),
    F(classext_classpath, 0),
    F(classext_attached_object, 0),
    F(fl_singleton, 1),
    F(rclass_super, 0),
    F(classext_m_tbl, 0),
    F(rclass_m_tbl, 0),
    F(st_entries_start, 0),
    F(st_entries_bound, 0),
    F(st_entries, 0),
    F(st_entry_size, 0),
    F(st_size, 0),
    F(st_bins, 0),
    F(st_max_power_no_bins, 0),
    F(rstring_noembed, 1),
    F(rstring_embed_len_mask, 1),
    F(rstring_embed_len_shift, 0),
    F(rstring_embed_start, 0),
    F(rstring_heap_len, 0),
    F(rstring_heap_ptr, 0),
    F(rstring_len, 0),
    F(str_capa, 0),
    F(str_shared, 1),
    F(str_nofree, 1),
    F(rarray_embed_flag, 1),
    F(rarray_embed_len_mask, 1),
    F(rarray_embed_len_shift, 0),
    F(rarray_embed_start, 0),
    F(rarray_heap_len, 0),
    F(rarray_heap_ptr, 0),
    F(ary_capa, 0),
    F(ary_shared, 1),
    F(ary_shared_root, 1),
    F(obj_embed, 1),
    F(obj_numiv, 0),
    F(hash_st_flag, 1),
    F(hash_tbl, 0),
    F(hash_tbl_inline, 0),
    F(ar_table_size, 0),
    F(bignum_embed, 1),
    F(bignum_len, 0),
    F(bdigit_size, 0),
    F(struct_embed_len_mask, 1),
    F(struct_len, 0),
    F(ractor_main_thread, 0),
    F(thread_self, 0),
    F(thread_ec, 0),
    F(ec_vm_stack, 0),
    F(ec_vm_stack_size, 0),
    F(ec_cfp, 0),
    F(ec_thread_ptr, 0),
    F(cfp_size, 0),
    F(cfp_pc, 0),
    F(cfp_iseq, 0),
    F(cfp_ep, 0),
    F(cfp_self, 0),
    F(iseq_body, 0),
    F(body_iseq_encoded, 0),
    F(body_iseq_size, 0),
    F(body_location_pathobj, 0),
    F(body_location_label, 0),
    F(body_first_lineno, 0),
    F(body_first_lineno_size, 0),
    F(body_insns_info_body, 0),
    F(body_insns_info_size, 0),
    F(body_succ_index_table, 0),
    F(insn_info_size, 0),
    F(insn_info_line_no, 0),
    F(imemo_iseq, 0),
    F(cme_def, 0),
    F(cme_owner, 0),
    F(def_original_id, 0),
    F(imemo_ment, 0),
    F(me_def, 0),
    F(me_owner, 0),
    F(def_iseq, 0),
    F(method_type_iseq, 0),
    F(body_type, 0),
    F(body_local_iseq, 0),
    F(iseq_type_method, 0),
    F(iseq_type_block, 0),
    F(id_table_capa, 0),
    F(id_table_items, 0),
    F(id_item_size, 0),
    F(id_item_value, 0),
    F(id_last_op, 1),
    F(id_next, 0),
    F(id_initialize, 1),
    F(vm_objspace, 0),
    F(objspace_flags, 0),
    F(objspace_flags_mode_mask, 1),
    F(objspace_flags_incremental, 1),
    F(objspace_flags_compacting, 1),
    F(objspace_flags_during_gc, 1),
    F(objspace_gc_count, 0),
    F(objspace_compact_count, 0),
    F(objspace_total_allocated, 0),
    F(objspace_total_freed, 0),
    F(objspace_total_moved, 0),
    F(objspace_pools, 0),
    F(pool_count, 0),
    F(pool_size, 0),
    F(pool_slot_size, 0),
    F(pool_total_allocated, 0),
    F(pool_total_freed, 0),
    F(objspace_sorted, 0),
    F(objspace_allocated_pages, 0),
    F(sorted_darray_data, 0),
    F(page_read_size, 0),
    F(page_slot_size, 0),
    F(page_total_slots, 0),
    F(page_flags, 0),
    F(page_before_sweep, 1),
    F(page_start, 0),
    F(page_wb_unprotected_bits, 0),
    F(page_mark_bits, 0),
    F(page_age_bits, 0),
    F(bitmap_words, 0),
    F(page_size, 0),
    F(bit_granule, 0),
    F(max_slots, 0),
    F(slot_size, 0),
    F(max_slot_size, 0),
    F(fl_age_mask, 1),
    F(fl_age_shift, 0),
    F(old_age, 0),
    F(fl_exivar, 1),
    F(refs_unknown, 0),
    F(obj_ivptr, 0),
    F(obj_embed_start, 0),
    F(obj_embed_max, 0),
    F(classext_iv_index_tbl, 0),
    F(iv_index_entry_index, 0),
    F(classext_iv_ptr, 0),
    F(classext_const_tbl, 0),
    F(const_entry_value, 0),
    F(shape_size, 0),
    F(shape_edge_name, 0),
    F(shape_next_iv_index, 0),
    F(shape_type, 0),
    F(shape_parent_id, 0),
    F(shape_id_shift, 0),
    F(shape_type_ivar, 0),
    F(shape_type_too_complex, 0),
    F(shape_too_complex_id, 0),
    F(shape_tree_list, 0),
    F(ary_aux_shared, 0),
    F(str_aux_shared, 0),
    F(hash_ifnone, 0),
    F(hash_proc_default, 1),
    F(hash_ar_bound_mask, 1),
    F(hash_ar_bound_shift, 0),
    F(ar_table_pairs, 0),
    F(struct_embed_shift, 0),
    F(struct_ptr, 0),
    F(struct_embed_start, 0),
    F(data_dmark, 0),
    F(data_data, 0),
    F(tdata_type, 0),
    F(tdata_typed_flag, 0),
    F(tdata_data, 0),
    F(tdata_embedded, 1),
    F(tdata_size, 0),
    F(datatype_name, 0),
    F(datatype_dmark, 0),
    F(datatype_flags, 0),
    F(typed_decl_marking, 1),
    F(block_self, 0),
    F(block_ep, 0),
    F(block_code, 0),
    F(block_type, 0),
    F(block_type_iseq, 0),
    F(block_type_ifunc, 0),
    F(imemo_env, 0),
    F(env_iseq, 0),
    F(env_ep, 0),
    F(env_env, 0),
    F(env_size, 0),
    F(env_data_size, 0),
    F(env_flag_local, 1),
    F(body_local_table, 0),
    F(body_local_table_size, 0),
    F(imemo_cref, 0),
    F(cref_klass, 0),
    F(cref_next, 0),
    F(imemo_ifunc, 0),
    F(ifunc_data, 0),
    F(imemo_memo, 0),
    F(memo_v1, 0),
    F(memo_v2, 0),
    F(me_defined_class, 0),
    F(def_bmethod_proc, 0),
    F(def_alias_me, 0),
    F(def_iseq_cref, 0),
    F(method_type_bmethod, 0),
    F(method_type_alias, 0),
    F(vm_mark_object_ary, 0),
    F(vm_special_exceptions, 0),
    F(vm_top_self, 0),
    F(vm_load_path, 0),
    F(vm_expanded_load_path, 0),
    F(vm_loaded_features, 0),
    F(pin_list_array, 0),
    F(pin_list_len, 0),
    F(pin_list_next, 0),
    F(vm_global_list, 0),
    F(objspace_global_list, 0),
    F(ractor_threads_set, 0),
    F(thread_value, 0),
    F(thread_invoke_proc, 0),
    F(thread_invoke_type, 0),
    F(thread_invoke_type_proc, 0),
    F(ec_local_storage, 0),
    F(ec_storage, 0),
    F(ec_errinfo, 0),
    F(cfp_sp, 0),
    F(gentry_var, 0),
    F(gvar_data, 0),
    F(gvar_marker, 0),
    F(endproc_data, 0),
    F(endproc_next, 0),
};
const size_t ruby_layout_nfields = sizeof(ruby_layout_fields) / sizeof(ruby_layout_fields[0]);

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

void layout_field_set(void *obj, const struct layout_field *f, uint64_t v)
{
	char *p = (char *) obj + f->offset;
	uint32_t v32 = (uint32_t) v;

	if (f->size == 4)
		memcpy(p, &v32, 4);
	else
		memcpy(p, &v, 8);
}

const struct layout_field *layout_field_named(const char *name)
{
	size_t i;

	for (i = 0; i < ruby_layout_nfields; i++)
		if (!strcmp(ruby_layout_fields[i].name, name))
			return &ruby_layout_fields[i];
	return NULL;
}

bool ruby_layout_ages_may_lag(const struct ruby_layout *l, uint32_t flags)
{
	uint32_t mode = flags & l->objspace_flags_mode_mask; /* the mode is bits 0-1 */

	return mode == 1 || (flags & l->objspace_flags_incremental) ||
	       (mode == 0 && (flags & l->objspace_flags_during_gc));
}

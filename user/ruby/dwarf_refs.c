// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The refs fields of struct ruby_layout from DWARF: what `why` reads to
 * follow references (ivars, constants, hashes, blocks, envs, threads,
 * globals, at_exit lists).  Read softly: a build whose DWARF lacks one of
 * them keeps its layout for every other mode; refs_unknown says how many
 * are missing and the refs proof group refuses `why` on it.
 *
 * Which way a series stores ivars is read from what exists: rb_shape_t
 * (3.2+) or rb_classext_t.iv_index_tbl (3.1).  Fields of the other way
 * stay 0, as ruby_layout.h documents.
 */
#include <string.h>
#include "dwarf_reader.h"

static const char *const cus_gc[] = {"gc.c", NULL};
static const char *const cus_hash[] = {"hash.c", "gc.c", NULL};
static const char *const cus_vm[] = {"vm.c", "gc.c", NULL};
static const char *const cus_variable[] = {"variable.c", NULL};
static const char *const cus_shape[] = {"shape.c", "gc.c", NULL};
/* eval_jump.c is #included by eval.c */
static const char *const cus_cont[] = {"cont.c", NULL};
static const char *const cus_thread[] = {"thread.c", NULL};
static const char *const cus_eval[] = {"eval.c", "eval_jump.c", NULL};

/* A constant that may not exist in this series: absent when not found. */
static int64_t opt_const(struct rd *r, const char *name, int64_t absent)
{
	int64_t v;

	return rd_constant(r, name, &v) ? v : absent;
}

static void read_ivars(struct rd *r, struct ruby_layout *o)
{
	uint64_t size;

	o->obj_ivptr = rd_need_off(r, "struct RObject", "as.heap.ivptr");
	o->obj_embed_start = rd_need_off(r, "struct RObject", "as.ary");
	o->classext_const_tbl = rd_need_off(r, "rb_classext_t", "const_tbl");
	rd_use(r, cus_vm);
	o->const_entry_value = rd_need_off(r, "rb_const_entry_t", "value");
	rd_use(r, cus_shape);
	if (dwarf_type_size(r->dt, "rb_shape_t", &size) == 0) {
		/* 3.2+: ivars by the object's shape, the class's in classext.iv_ptr */
		o->shape_size = (uint32_t) size;
		o->shape_edge_name = rd_need_off(r, "rb_shape_t", "edge_name");
		o->shape_next_iv_index = rd_need_off(r, "rb_shape_t", "next_iv_index");
		o->shape_type = rd_need_off(r, "rb_shape_t", "type");
		o->shape_parent_id = rd_need_off(r, "rb_shape_t", "parent_id");
		o->shape_tree_list = rd_need_off(r, "rb_shape_tree_t", "shape_list");
		o->shape_id_shift = (uint32_t) rd_need_const(r, "SHAPE_FLAG_SHIFT");
		o->shape_type_ivar = (uint32_t) rd_need_const(r, "SHAPE_IVAR");
		o->shape_type_too_complex = (uint32_t) rd_need_const(r, "SHAPE_OBJ_TOO_COMPLEX");
		o->shape_too_complex_id = (uint32_t) rd_need_const(r, "OBJ_TOO_COMPLEX_SHAPE_ID");
		o->classext_iv_ptr = rd_need_off(r, "rb_classext_t", "iv_ptr");
		o->obj_embed_max = 0;
	} else {
		/* 3.1: the class's iv_index_tbl names the slots of as.heap.ivptr or as.ary */
		o->shape_size = 0;
		o->classext_iv_index_tbl = rd_need_off(r, "rb_classext_t", "iv_index_tbl");
		o->iv_index_entry_index = rd_need_off(r, "struct rb_iv_index_tbl_entry", "index");
		o->obj_embed_max = (uint32_t) rd_need_const(r, "ROBJECT_EMBED_LEN_MAX");
	}
	rd_use(r, cus_gc);
}

static void read_containers(struct rd *r, struct ruby_layout *o)
{
	o->ary_aux_shared = rd_need_off(r, "struct RArray", "as.heap.aux.shared_root");
	o->str_aux_shared = rd_need_off(r, "struct RString", "as.heap.aux.shared");
	o->hash_ifnone = rd_need_off(r, "struct RHash", "ifnone");
	rd_use(r, cus_hash);
	o->hash_proc_default = (uint64_t) rd_need_const(r, "RHASH_PROC_DEFAULT");
	o->hash_ar_bound_mask = (uint64_t) rd_need_const(r, "RHASH_AR_TABLE_BOUND_MASK");
	o->hash_ar_bound_shift = (uint32_t) rd_need_const(r, "RHASH_AR_TABLE_BOUND_SHIFT");
	o->ar_table_pairs = rd_need_off(r, "ar_table", "pairs");
	rd_use(r, cus_gc);
	o->struct_embed_shift = (uint32_t) rd_need_const(r, "RSTRUCT_EMBED_LEN_SHIFT");
	o->struct_ptr = rd_need_off(r, "struct RStruct", "as.heap.ptr");
	o->struct_embed_start = rd_need_off(r, "struct RStruct", "as.ary");
}

static void read_data(struct rd *r, struct ruby_layout *o)
{
	o->data_dmark = rd_need_off(r, "struct RData", "dmark");
	o->data_data = rd_need_off(r, "struct RData", "data");
	o->tdata_type = rd_need_off(r, "struct RTypedData", "type");
	o->tdata_typed_flag = rd_need_off(r, "struct RTypedData", "typed_flag");
	o->tdata_data = rd_need_off(r, "struct RTypedData", "data");
	o->tdata_size = rd_need_size(r, "struct RTypedData");
	o->tdata_embedded = (uint32_t) opt_const(r, "TYPED_DATA_EMBEDDED", 0);
	o->datatype_name = rd_need_off(r, "rb_data_type_t", "wrap_struct_name");
	o->datatype_dmark = rd_need_off(r, "rb_data_type_t", "function.dmark");
	o->datatype_flags = rd_need_off(r, "rb_data_type_t", "flags");
	o->typed_decl_marking = (uint64_t) opt_const(r, "RUBY_TYPED_DECL_MARKING", 0);
}

static void read_vm_objects(struct rd *r, struct ruby_layout *o)
{
	const char *body = "struct rb_iseq_constant_body";
	struct dwarf_field f;

	rd_use(r, cus_vm);
	/* rb_proc_t and rb_binding_t begin with their struct rb_block */
	if (!rd_member(r, "rb_proc_t", "block", &f) || f.offset ||
	    !rd_member(r, "rb_binding_t", "block", &f) || f.offset)
		rd_miss(r, "rb_proc_t.block and rb_binding_t.block at 0");
	o->block_self = rd_need_off(r, "struct rb_block", "as.captured.self");
	o->block_ep = rd_need_off(r, "struct rb_block", "as.captured.ep");
	o->block_code = rd_need_off(r, "struct rb_block", "as.captured.code");
	o->block_type = rd_need_off(r, "struct rb_block", "type");
	o->block_type_iseq = (uint32_t) rd_need_const(r, "block_type_iseq");
	o->block_type_ifunc = (uint32_t) rd_need_const(r, "block_type_ifunc");
	o->imemo_env = (uint32_t) rd_need_const(r, "imemo_env");
	o->env_iseq = rd_need_off(r, "rb_env_t", "iseq");
	o->env_ep = rd_need_off(r, "rb_env_t", "ep");
	o->env_env = rd_need_off(r, "rb_env_t", "env");
	o->env_size = rd_need_off(r, "rb_env_t", "env_size");
	o->env_data_size = (uint32_t) rd_need_const(r, "VM_ENV_DATA_SIZE");
	o->env_flag_local = (uint32_t) rd_need_const(r, "VM_ENV_FLAG_LOCAL");
	o->body_local_table = rd_need_off(r, body, "local_table");
	o->body_local_table_size = rd_need_off(r, body, "local_table_size");
	o->imemo_cref = (uint32_t) rd_need_const(r, "imemo_cref");
	o->cref_klass = rd_need_off(r, "rb_cref_t", "klass_or_self");
	o->cref_next = rd_need_off(r, "rb_cref_t", "next");
	o->imemo_ifunc = (uint32_t) rd_need_const(r, "imemo_ifunc");
	o->ifunc_data = rd_need_off(r, "struct vm_ifunc", "data");
	o->imemo_memo = (uint32_t) rd_need_const(r, "imemo_memo");
	o->memo_v1 = rd_need_off(r, "struct MEMO", "v1");
	o->memo_v2 = rd_need_off(r, "struct MEMO", "v2");
	o->me_defined_class = rd_need_off(r, "rb_method_entry_t", "defined_class");
	o->def_bmethod_proc = rd_need_off(r, "rb_method_definition_t", "body.bmethod.proc");
	o->def_alias_me = rd_need_off(r, "rb_method_definition_t", "body.alias.original_me");
	o->def_iseq_cref = rd_need_off(r, "rb_method_definition_t", "body.iseq.cref");
	o->method_type_bmethod = (uint32_t) rd_need_const(r, "VM_METHOD_TYPE_BMETHOD");
	o->method_type_alias = (uint32_t) rd_need_const(r, "VM_METHOD_TYPE_ALIAS");
	rd_use(r, cus_gc);
}

static void read_roots(struct rd *r, struct ruby_layout *o)
{
	rd_use(r, cus_vm);
	o->vm_mark_object_ary = rd_need_off(r, "rb_vm_t", "mark_object_ary");
	o->vm_special_exceptions = rd_need_off(r, "rb_vm_t", "special_exceptions");
	o->vm_top_self = rd_need_off(r, "rb_vm_t", "top_self");
	o->vm_load_path = rd_need_off(r, "rb_vm_t", "load_path");
	o->vm_expanded_load_path = rd_need_off(r, "rb_vm_t", "expanded_load_path");
	o->vm_loaded_features = rd_need_off(r, "rb_vm_t", "loaded_features");
	/* 3.4: rb_gc_register_mark_object's objects in a list of pinned arrays, a T_DATA */
	o->pin_list_array = rd_opt_off(r, "struct pin_array_list", "array", 0);
	if (o->pin_list_array) {
		o->pin_list_len = rd_need_off(r, "struct pin_array_list", "len");
		o->pin_list_next = rd_need_off(r, "struct pin_array_list", "next");
	}
	/* 3.4 keeps rb_gc_register_address's list in the VM, before in the objspace */
	o->vm_global_list = rd_opt_off(r, "rb_vm_t", "global_object_list", 0);
	o->ractor_threads_set = rd_need_off(r, "rb_ractor_t", "threads.set");
	o->thread_value = rd_need_off(r, "rb_thread_t", "value");
	o->thread_invoke_proc = rd_need_off(r, "rb_thread_t", "invoke_arg.proc.proc");
	o->thread_invoke_type = rd_need_off(r, "rb_thread_t", "invoke_type");
	o->thread_invoke_type_proc = (uint32_t) rd_need_const(r, "thread_invoke_type_proc");
	o->ec_local_storage = rd_need_off(r, "rb_execution_context_t", "local_storage");
	o->ec_storage = rd_opt_off(r, "rb_execution_context_t", "storage", 0);
	o->ec_errinfo = rd_need_off(r, "rb_execution_context_t", "errinfo");
	o->cfp_sp = rd_need_off(r, "rb_control_frame_t", "sp");
	rd_use(r, cus_gc);
	o->objspace_global_list = rd_opt_off(r, "rb_objspace_t", "global_list", 0);
	if (!o->vm_global_list && !o->objspace_global_list)
		rd_miss(r, "global_list (in rb_objspace_t or rb_vm_t)");
	rd_use(r, cus_variable);
	o->gentry_var = rd_need_off(r, "struct rb_global_entry", "var");
	o->gvar_data = rd_need_off(r, "struct rb_global_variable", "data");
	o->gvar_marker = rd_need_off(r, "struct rb_global_variable", "marker");
	rd_use(r, cus_eval);
	o->endproc_data = rd_need_off(r, "struct end_proc_data", "data");
	o->endproc_next = rd_need_off(r, "struct end_proc_data", "next");
	rd_use(r, cus_gc);
}

/* Fibers (cont.c), queues (thread.c includes thread_sync.c), generic ivars: optional. */
static void read_marked_by_c(struct rd *r, struct ruby_layout *o)
{
	uint32_t cont;

	rd_use(r, cus_cont);
	cont = rd_opt_off(r, "rb_fiber_t", "cont", 1);
	o->fiber_saved_ec = cont ? 0 : rd_opt_off(r, "rb_context_t", "saved_ec", 0);
	o->fiber_first_proc = o->fiber_saved_ec ? rd_opt_off(r, "rb_fiber_t", "first_proc", 0) : 0;
	o->ec_fiber_ptr = rd_opt_off(r, "rb_execution_context_t", "fiber_ptr", 0);
	o->ec_machine_start = rd_opt_off(r, "rb_execution_context_t", "machine.stack_start", 0);
	o->ec_machine_end = rd_opt_off(r, "rb_execution_context_t", "machine.stack_end", 0);
	o->ec_machine_regs = rd_opt_off(r, "rb_execution_context_t", "machine.regs", 0);
	rd_use(r, cus_thread);
	o->queue_que = rd_opt_off(r, "struct rb_queue", "que", 0);
	rd_use(r, cus_variable);
	o->geniv_ivptr = rd_opt_off(r, "struct gen_ivtbl", "as.shape.ivptr", 0);
	if (!o->geniv_ivptr)
		o->geniv_ivptr = rd_opt_off(r, "struct gen_ivtbl", "ivptr", 0);
	rd_use(r, cus_gc);
}

void dwarf_read_refs(struct rd *r, struct ruby_layout *o)
{
	bool was_soft = r->soft;

	r->soft = true;
	r->soft_missing = 0;
	read_ivars(r, o);
	read_containers(r, o);
	read_data(r, o);
	read_vm_objects(r, o);
	read_roots(r, o);
	read_marked_by_c(r, o);
	o->refs_unknown = (uint32_t) r->soft_missing;
	r->soft = was_soft;
}

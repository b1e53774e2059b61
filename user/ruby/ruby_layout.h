/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What rbmemtrace must know of a Ruby build's internals to read it from
 * outside: every offset, size, flag bit and constant, in one structure.
 * Where a layout comes from, in order (ruby_target.c):
 *   1. the libruby's own DWARF, or its debug file found by build-id or
 *      .gnu_debuglink, locally or through debuginfod (dwarf_layout.c);
 *   2. the built-in table (ruby_versions.c): one entry per series, plus the
 *      fields a patch release moved;
 * then the offsets that exported functions read are decoded from the
 * target's own code and cross-checked (layout_decode.c), and the whole
 * layout is proved against the live process before any figure is computed
 * (layout_proof.c).
 *
 * Conventions: a field documented "0: ..." is 0 where the thing does not
 * exist in that series (0 is never its real offset there).
 *
 * Shape of the heap in every series so far: objspace->heap_pages.sorted is
 * an array of pointers to struct heap_page (malloc'ed, holding the
 * bitmaps); each page's objects live in a page_size-aligned "body" whose
 * first word points back to the struct heap_page, then total_slots slots of
 * slot_size bytes from page->start.  Mark bits are indexed by
 * (addr & (page_size - 1)) / bit_granule.
 */
#ifndef RBM_RUBY_LAYOUT_H
#define RBM_RUBY_LAYOUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Over ~20 fields: it is a table, one offset, size, flag or constant per
 * field, each named (ruby_layout.c), generated for 3.3 and 3.4, and proved
 * at attach; grouping them would only add a level to every read.
 */
struct ruby_layout {
	const char *series;   /* "3.1": the series this layout is of */
	const char *verified; /* patch releases checked against a live process */
	const char *source;   /* where the numbers come from */

	/* struct RClass and rb_classext_t */
	uint32_t rclass_ext; /* classext_embedded ? where it lies : the pointer to it */
	uint32_t
	    classext_embedded;	/* 3.3+: rb_classext_t is inside the slot, at klass + rclass_ext */
	uint32_t classext_size; /* malloc'ed per class/module; 0: inside the slot (3.3+) */
	uint32_t classext_iv_tbl; /* st_table * of ivars; 0: none (3.2+: shapes, iv_ptr) */
	uint32_t classext_allocator;
	uint32_t classext_classpath;	   /* 3.3+: classext.classpath; 0: the __classpath__ ivar */
	uint32_t classext_attached_object; /* 3.3+; 0: the __attached__ ivar (3.1) */
	uint64_t fl_singleton;
	uint32_t rclass_super;
	uint32_t classext_m_tbl; /* 0: m_tbl is in RClass (3.3+) */
	uint32_t rclass_m_tbl;	 /* 3.3+: RClass.m_tbl; 0: in rb_classext_t */

	/* st_table */
	uint32_t st_entries_start;
	uint32_t st_entries_bound;
	uint32_t st_entries;
	uint32_t st_entry_size;	       /* sizeof(st_table_entry): {hash, key, record} */
	uint32_t st_size;	       /* sizeof(st_table) */
	uint32_t st_bins;	       /* st_table.bins (entry_power is byte 0) */
	uint32_t st_max_power_no_bins; /* MAX_POWER2_FOR_TABLES_WITHOUT_BINS */

	/* struct RString */
	uint64_t rstring_noembed; /* RSTRING_NOEMBED */
	uint64_t rstring_embed_len_mask;
	uint32_t rstring_embed_len_shift;
	uint32_t rstring_embed_start;
	uint32_t rstring_heap_len;
	uint32_t rstring_heap_ptr;
	uint32_t rstring_len; /* 3.2+: RString.len, embedded or not; 0: embedded length in flags */
	uint32_t str_capa;    /* as.heap.aux.capa */
	uint64_t str_shared;  /* STR_SHARED */
	uint64_t str_nofree;  /* STR_NOFREE */

	/* struct RArray */
	uint64_t rarray_embed_flag; /* RARRAY_EMBED_FLAG */
	uint64_t rarray_embed_len_mask;
	uint32_t rarray_embed_len_shift;
	uint32_t rarray_embed_start;
	uint32_t rarray_heap_len;
	uint32_t rarray_heap_ptr;
	uint32_t ary_capa;	  /* as.heap.aux.capa */
	uint64_t ary_shared;	  /* ELTS_SHARED */
	uint64_t ary_shared_root; /* RARRAY_SHARED_ROOT_FLAG: capa holds a refcount */

	/* Other objects' heap memory, as ObjectSpace.memsize_of counts it */
	uint64_t obj_embed;    /* ROBJECT_EMBED */
	uint32_t obj_numiv;    /* as.heap.numiv (u32); 0: none (3.2+: the shape's capacity) */
	uint64_t hash_st_flag; /* RHASH_ST_TABLE_FLAG */
	uint32_t hash_tbl; /* as.st / as.ar: a pointer; with hash_tbl_inline, the table itself */
	uint32_t hash_tbl_inline; /* 3.3+: the ar/st table lies in the slot after struct RHash */
	uint32_t ar_table_size;	  /* sizeof(ar_table) */
	uint64_t bignum_embed;	  /* BIGNUM_EMBED_FLAG */
	uint32_t bignum_len;	  /* as.heap.len (digits) */
	uint32_t bdigit_size;
	uint64_t struct_embed_len_mask; /* RSTRUCT_EMBED_LEN_MASK: 0 means on the heap */
	uint32_t struct_len;		/* as.heap.len */

	/* Threads and stacks: rb_vm_t, rb_ractor_t, rb_thread_t, rb_execution_context_t */
	uint32_t ractor_main_thread; /* rb_ractor_t.threads.main */
	uint32_t thread_self;	     /* rb_thread_t.self */
	uint32_t thread_ec;	     /* rb_thread_t.ec */
	uint32_t ec_vm_stack;
	uint32_t ec_vm_stack_size;
	uint32_t ec_cfp;
	uint32_t ec_thread_ptr;
	uint32_t cfp_size;
	uint32_t cfp_pc;
	uint32_t cfp_iseq;
	uint32_t cfp_ep;
	uint32_t cfp_self;

	/* rb_iseq_t and rb_iseq_constant_body, for frame names and lines */
	uint32_t iseq_body;
	uint32_t body_iseq_encoded;
	uint32_t body_iseq_size; /* u32: instructions, in words, at iseq_encoded */
	uint32_t body_location_pathobj;
	uint32_t body_location_label;
	uint32_t body_first_lineno;
	uint32_t body_first_lineno_size; /* 8: a Fixnum VALUE (3.1); 4: a C int (3.2+) */
	uint32_t body_insns_info_body;
	uint32_t body_insns_info_size;
	uint32_t body_succ_index_table;
	uint32_t insn_info_size;    /* sizeof(struct iseq_insn_info_entry) */
	uint32_t insn_info_line_no; /* offset of line_no in it */
	uint32_t imemo_iseq;	    /* imemo type of an iseq */

	/* rb_callable_method_entry_t and rb_method_definition_t, for C frames */
	uint32_t cme_def;
	uint32_t cme_owner;
	uint32_t def_original_id;
	uint32_t imemo_ment;

	/* Method owners, for Foo#bar labels: rb_method_entry_t in a class's m_tbl */
	uint32_t me_def;
	uint32_t me_owner;
	uint32_t def_iseq; /* def->body.iseq.iseqptr; def->type is its low 4 bits */
	uint32_t method_type_iseq;
	uint32_t body_type;
	uint32_t body_local_iseq;
	uint32_t iseq_type_method;
	uint32_t iseq_type_block;
	/* struct rb_id_table (id_table.c, private): {capa, num, used, items} */
	uint32_t id_table_capa;
	uint32_t id_table_items;
	uint32_t id_item_size; /* {key, collision, value} */
	uint32_t id_item_value;
	/* IDs (id.h): operators up to tLAST_OP_ID; serials from tNEXT_ID; a known name */
	uint32_t id_last_op;
	uint32_t id_next;
	uint32_t id_initialize;

	/* rb_vm_t -> rb_objspace_t: the GC's state and counters */
	uint32_t vm_objspace;
	uint32_t objspace_flags;	     /* the flags bitfield word (u32) */
	uint32_t objspace_flags_mode_mask;   /* flags.mode: 0 none, 1 marking, 2 sweeping */
	uint32_t objspace_flags_incremental; /* flags.during_incremental_marking */
	uint32_t objspace_flags_compacting;  /* flags.during_compacting */
	uint32_t objspace_flags_during_gc; /* flags.during_gc: in gc_start, or a mark/sweep step */
	uint32_t objspace_gc_count;	   /* profile.count = GC.count: bumped as each GC starts */
	uint32_t objspace_compact_count;   /* profile.compact_count */
	uint32_t objspace_total_allocated; /* 0: per pool only (3.2+), see pool_* */
	uint32_t objspace_total_freed;	   /* profile.total_freed_objects; 0: per pool only */
	uint32_t objspace_total_moved;	   /* rcompactor.total_moved (:total_moved_objects); 0: unknown */
	/*
	 * Size pools (3.1-3.3: objspace.size_pools[], 3.4: objspace.heaps[]):
	 * GC.stat's totals are the sums of each pool's counters from 3.2 on.
	 */
	uint32_t objspace_pools;
	uint32_t pool_count;
	uint32_t pool_size;
	uint32_t pool_slot_size;       /* short */
	uint32_t pool_total_allocated; /* 0: no per-pool counter (3.1) */
	uint32_t pool_total_freed;     /* 0: no per-pool counter (3.1) */

	/* The page table: objspace.heap_pages */
	uint32_t objspace_sorted; /* heap_pages.sorted (struct heap_page **) */
	uint32_t
	    objspace_allocated_pages; /* heap_pages.allocated_pages (size_t): 3.4, cumulative */
	/*
	 * 3.4: heap_pages.sorted is an rb_darray: a pointer to {size_t size,
	 * capa; struct heap_page *data[]}, size being the page count; this is
	 * the offset of data.  0: a plain array of allocated_pages pointers.
	 */
	uint32_t sorted_darray_data;

	/* struct heap_page: the fields of the page's bookkeeping the census reads */
	uint32_t page_read_size;	   /* bytes from the start that cover all fields below */
	uint32_t page_slot_size;	   /* short */
	uint32_t page_total_slots;	   /* short */
	uint32_t page_flags;		   /* u32 bitfield word */
	uint32_t page_before_sweep;	   /* bit in it: the page is still to be swept */
	uint32_t page_start;		   /* RVALUE *start: the first slot */
	uint32_t page_wb_unprotected_bits; /* bits_t wb_unprotected_bits[bitmap_words] */
	uint32_t page_mark_bits;	   /* bits_t mark_bits[bitmap_words] */
	uint32_t page_age_bits;		   /* 0: age lives in the object flags (<= 3.2); else 2 bits
					    * per bit_granule, bitmap_words * 2 words */
	uint32_t bitmap_words;		   /* HEAP_PAGE_BITMAP_LIMIT */

	/* heap_page_body */
	uint32_t page_size;	/* HEAP_PAGE_SIZE: bodies are aligned to it */
	uint32_t bit_granule;	/* bytes per mark bit: sizeof(RVALUE) / BASE_SLOT_SIZE */
	uint32_t max_slots;	/* HEAP_PAGE_OBJ_LIMIT: bound on page->total_slots */
	uint32_t slot_size;	/* RVALUE size (smallest slot) */
	uint32_t max_slot_size; /* largest size pool's slot (== slot_size without RVARGC) */

	/* Object flags (RBasic.flags) */
	uint64_t fl_age_mask; /* FL_PROMOTED0|1, when age is in the flags; 0 (3.2+): in the page */
	uint32_t fl_age_shift;
	uint32_t old_age;   /* RVALUE_OLD_AGE */
	uint32_t fl_exivar; /* generic ivars elsewhere: not counted */

	/*
	 * References, for `why` (proof group "refs"): what Ruby's GC marks, read
	 * the way gc_mark_children and rb_gc_mark_roots read it.  Several of
	 * these are at offset 0 in every series (noted "0 is real"); the fields
	 * of one way of storing a thing (3.1's iv_index_tbl, 3.3+'s shapes) are
	 * meaningful only where shape_size says that way is the series'.
	 */
	uint32_t refs_unknown; /* refs fields a DWARF read could not find; 0: all known */
	/* T_OBJECT ivars: 3.1 as.heap {numiv, ivptr} or as.ary[obj_embed_max]; 3.3+ by shape */
	uint32_t obj_ivptr;
	uint32_t obj_embed_start;
	uint32_t obj_embed_max;		/* ROBJECT_EMBED_LEN_MAX (3.1); 0: the shape says (3.3+) */
	uint32_t classext_iv_index_tbl; /* 3.1: st_table ID -> iv_index entry (0 is real) */
	uint32_t iv_index_entry_index;	/* 3.1: rb_iv_index_tbl_entry.index, u32 (0 is real) */
	uint32_t classext_iv_ptr;	/* 3.3+: VALUE *iv_ptr, by the class's shape (0 is real) */
	uint32_t classext_const_tbl;	/* rb_id_table of rb_const_entry_t * */
	uint32_t const_entry_value;
	/* Shapes (3.3+): rb_shape_tree_ptr->shape_list[flags >> shape_id_shift] */
	uint32_t shape_size; /* sizeof(rb_shape_t); 0: no shapes (3.1) */
	uint32_t shape_edge_name;
	uint32_t shape_next_iv_index;	 /* u32 */
	uint32_t shape_type;		 /* u8 */
	uint32_t shape_parent_id;	 /* u32 */
	uint32_t shape_id_shift;	 /* SHAPE_FLAG_SHIFT */
	uint32_t shape_type_ivar;	 /* SHAPE_IVAR */
	uint32_t shape_type_too_complex; /* SHAPE_OBJ_TOO_COMPLEX: ivars in an st_table */
	uint32_t shape_too_complex_id;	 /* OBJ_TOO_COMPLEX_SHAPE_ID */
	uint32_t shape_tree_list;	 /* rb_shape_tree_t.shape_list (0 is real) */
	/* Arrays, strings, hashes, structs */
	uint32_t ary_aux_shared;     /* as.heap.aux.shared_root: a shared array's root */
	uint32_t str_aux_shared;     /* as.heap.aux.shared */
	uint32_t hash_ifnone;	     /* the default value or proc */
	uint64_t hash_proc_default;  /* RHASH_PROC_DEFAULT */
	uint64_t hash_ar_bound_mask; /* RHASH_AR_TABLE_BOUND_MASK */
	uint32_t hash_ar_bound_shift;
	uint32_t ar_table_pairs;     /* {key, value}[8] in the ar_table (0 is real in 3.1) */
	uint32_t struct_embed_shift; /* RSTRUCT_EMBED_LEN_SHIFT */
	uint32_t struct_ptr;	     /* as.heap.ptr */
	uint32_t struct_embed_start; /* as.ary */
	/* T_DATA: RData, RTypedData and rb_data_type_t */
	uint32_t data_dmark;
	uint32_t data_data;
	uint32_t tdata_type;
	uint32_t tdata_typed_flag;
	uint32_t tdata_data;
	uint32_t tdata_embedded; /* TYPED_DATA_EMBEDDED in typed_flag; 0: none (3.1) */
	uint32_t tdata_size;	 /* sizeof(struct RTypedData): where embedded data starts */
	uint32_t datatype_name;	 /* wrap_struct_name (0 is real) */
	uint32_t datatype_dmark; /* function.dmark: with decl_marking, the offsets list */
	uint32_t datatype_flags;
	uint64_t typed_decl_marking; /* RUBY_TYPED_DECL_MARKING; 0: none (3.1) */
	/* Blocks: rb_proc_t (and rb_binding_t) start with struct rb_block */
	uint32_t block_self; /* as.captured.self (0 is real) */
	uint32_t block_ep;   /* as.captured.ep */
	uint32_t block_code; /* as.captured.code */
	uint32_t block_type; /* enum rb_block_type, u32 */
	uint32_t block_type_iseq;
	uint32_t block_type_ifunc;
	/* imemo: env, cref, ifunc, memo; method entries and definitions */
	uint32_t imemo_env; /* (0 is real) */
	uint32_t env_iseq;
	uint32_t env_ep;
	uint32_t env_env;
	uint32_t env_size;	 /* u32 */
	uint32_t env_data_size;	 /* VM_ENV_DATA_SIZE */
	uint32_t env_flag_local; /* VM_ENV_FLAG_LOCAL in ep[0]: no outer env */
	uint32_t body_local_table;
	uint32_t body_local_table_size; /* int */
	uint32_t imemo_cref;
	uint32_t cref_klass;
	uint32_t cref_next;
	uint32_t imemo_ifunc;
	uint32_t ifunc_data;
	uint32_t imemo_memo;
	uint32_t memo_v1;
	uint32_t memo_v2;
	uint32_t me_defined_class;
	uint32_t def_bmethod_proc;
	uint32_t def_alias_me;
	uint32_t def_iseq_cref;
	uint32_t method_type_bmethod;
	uint32_t method_type_alias;
	/* Roots: rb_vm_t, the objspace's registered addresses, threads, globals, at_exit */
	uint32_t vm_mark_object_ary;
	uint32_t vm_special_exceptions; /* VALUE[5] */
	uint32_t vm_top_self;
	uint32_t vm_load_path;
	uint32_t vm_expanded_load_path;
	uint32_t vm_loaded_features;
	/* 3.4: mark_object_ary is a pin_array_list (T_DATA) {next, len, array}; 0: an Array */
	uint32_t pin_list_array;
	uint32_t pin_list_len;
	uint32_t pin_list_next;	       /* (0 is real) */
	uint32_t vm_global_list;       /* 3.4: vm->global_object_list; 0: in the objspace */
	uint32_t objspace_global_list; /* <= 3.3: objspace->global_list; 0: in the vm */
	uint32_t ractor_threads_set;   /* ccan list of rb_thread_t, linked by lt_node (at 0) */
	uint32_t thread_value;
	uint32_t thread_invoke_proc; /* invoke_arg.proc.proc */
	uint32_t thread_invoke_type; /* u32 */
	uint32_t thread_invoke_type_proc;
	uint32_t ec_local_storage; /* rb_id_table: Thread#[] (fiber locals) */
	uint32_t ec_storage;	   /* 3.2+: Fiber[] storage; 0: none (3.1) */
	uint32_t ec_errinfo;
	uint32_t cfp_sp;
	uint32_t gentry_var; /* rb_global_entry.var (0 is real) */
	uint32_t gvar_data;
	uint32_t gvar_marker;
	uint32_t endproc_data; /* struct end_proc_data {func, data, next} */
	uint32_t endproc_next;
	/*
	 * What the GC marks through fibers, queues and generic ivars (0: not
	 * known, not walked: counted among what is not walked).  Each is
	 * checked per object as it is read (refs_decode.c): a fiber's saved
	 * ec points back at the fiber, a queue's que is a hidden Array, a
	 * generic ivar table's key carries FL_EXIVAR.
	 */
	uint32_t fiber_saved_ec;   /* rb_fiber_t.cont.saved_ec */
	uint32_t fiber_first_proc; /* rb_fiber_t.first_proc */
	uint32_t ec_fiber_ptr;	   /* rb_execution_context_t.fiber_ptr */
	uint32_t queue_que;	   /* struct rb_queue.que (a SizedQueue's struct starts with one) */
	uint32_t geniv_ivptr;	   /* struct gen_ivtbl's values (3.1 ivptr, 3.3+ as.shape.ivptr) */
	/* ec->machine: a thread's machine stack and registers saved (jmp_buf), read conservatively */
	uint32_t ec_machine_start; /* machine.stack_start (the stack's top: it grows down) */
	uint32_t ec_machine_end;   /* machine.stack_end, as saved when the thread last let the GVL go */
	uint32_t ec_machine_regs;  /* machine.regs (a jmp_buf of callee-saved registers) */
};

/*
 * Whether objspace flags (the word at objspace_flags) say the GC that
 * GC.count already counts may not have aged every surviving object yet: it
 * marks (or its incremental marking waits for its next step), or it has
 * started and not marked yet.  gc_start sets during_gc, bumps the count,
 * then sets the mode to marking: in between, during_gc with mode none
 * (live: a pass there found objects of 3 GCs at age 2).  Once the mode is
 * sweeping, ages are final; during_gc with mode none after a sweep only
 * makes this cautious.
 */
bool ruby_layout_ages_may_lag(const struct ruby_layout *l, uint32_t flags);

/* Every numeric field of struct ruby_layout, by name: for the generator, -v and the tests. */
struct layout_field {
	const char *name;
	size_t offset;
	size_t size; /* 4 or 8 */
	int hex;     /* printed in hex: a flag mask */
};
extern const struct layout_field ruby_layout_fields[];
extern const size_t ruby_layout_nfields;
uint64_t layout_field_get(const void *obj, const struct layout_field *f);
void layout_field_set(void *obj, const struct layout_field *f, uint64_t v);
/* The field named name, or NULL. */
const struct layout_field *layout_field_named(const char *name);

#endif

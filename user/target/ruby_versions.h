/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-version knowledge of Ruby's internals, in one place.  Adding a Ruby
 * version is one table entry in ruby_versions.c plus its tests.  Entries
 * other than 3.1's are generated from DWARF (scripts/gen-ruby-tables.sh);
 * dwarf_layout.c fills the same structure from a libruby's own DWARF.
 *
 * Conventions: an offset of 0 in a field documented "0: ..." means the
 * thing does not exist in that series (0 is never its real offset there).
 */
#ifndef RBM_RUBY_VERSIONS_H
#define RBM_RUBY_VERSIONS_H
#include <linux/types.h>
#include <stdint.h>
#include "rbmemtrace.h"

struct ruby_offsets {
	const char *series;   /* "3.1": patch releases of a series share these layouts */
	const char *verified; /* patch releases checked against a live process */
	const char *source;   /* where the numbers come from */

	/*
	 * Checked by hand against a live process (3.1): taken before the
	 * target's own DWARF.  Generated entries (3.3, 3.4) are for stripped
	 * builds, after DWARF; only entries with this set come from
	 * ruby_offsets_for().
	 */
	uint32_t supported;

	/* struct RClass and rb_classext_t */
	uint32_t rclass_ext;	     /* classext_embedded ? where it lies : the pointer to it */
	uint32_t classext_embedded;  /* 3.3+: rb_classext_t is inside the slot, at klass + rclass_ext */
	uint32_t classext_iv_tbl;    /* st_table * of ivars; 0: none (3.2+: shapes, iv_ptr) */
	uint32_t classext_allocator;
	uint32_t classext_classpath; /* 3.3+: classext.classpath; 0: the __classpath__ ivar */
	uint32_t classext_attached_object; /* 3.3+; 0: the __attached__ ivar (3.1) */
	uint64_t fl_singleton;

	/* st_table, as used for class ivars */
	uint32_t st_entries_start;
	uint32_t st_entries_bound;
	uint32_t st_entries;
	uint32_t st_entry_size; /* {hash, key, record} */

	/* struct RString */
	uint64_t rstring_noembed;
	uint64_t rstring_embed_len_mask;
	uint32_t rstring_embed_len_shift;
	uint32_t rstring_embed_start;
	uint32_t rstring_heap_len;
	uint32_t rstring_heap_ptr;
	uint32_t rstring_len; /* 3.2+: RString.len, embedded or not; 0: embedded length in flags */

	/* struct RArray */
	uint64_t rarray_embed_flag;
	uint64_t rarray_embed_len_mask;
	uint32_t rarray_embed_len_shift;
	uint32_t rarray_embed_start;
	uint32_t rarray_heap_len;
	uint32_t rarray_heap_ptr;

	/* Stack walking: rb_execution_context_t and rb_control_frame_t */
	uint32_t ec_vm_stack;
	uint32_t ec_vm_stack_size;
	uint32_t ec_cfp;
	uint32_t cfp_size;
	uint32_t cfp_pc;
	uint32_t cfp_iseq;
	uint32_t cfp_ep;
	uint32_t cfp_self;

	/* rb_iseq_t and rb_iseq_constant_body, for frame names and lines */
	uint32_t iseq_body;
	uint32_t body_iseq_encoded;
	uint32_t body_iseq_size;	/* u32: instructions, in words, at iseq_encoded */
	uint32_t body_location_pathobj;
	uint32_t body_location_label;
	uint32_t body_first_lineno;
	uint32_t body_first_lineno_size; /* 8: a Fixnum VALUE (3.1); 4: a C int (3.2+) */
	uint32_t body_insns_info_body;
	uint32_t body_insns_info_size;
	uint32_t body_succ_index_table;
	uint32_t insn_info_size;    /* sizeof(struct iseq_insn_info_entry) */
	uint32_t insn_info_line_no; /* offset of line_no in it */
	uint32_t imemo_iseq;        /* imemo type of an iseq */

	/* rb_callable_method_entry_t and rb_method_definition_t, for C frames */
	uint32_t cme_def;
	uint32_t cme_owner;
	uint32_t def_original_id;
	uint32_t imemo_ment;

	/* Method owners, for Foo#bar labels: rb_method_entry_t in a class's m_tbl */
	uint32_t rclass_super;
	uint32_t classext_m_tbl; /* 0: m_tbl is in RClass (3.3+) */
	uint32_t rclass_m_tbl;	 /* 3.3+: RClass.m_tbl; 0: in rb_classext_t */
	uint32_t me_def;
	uint32_t me_owner;
	uint32_t def_iseq;	   /* def->body.iseq.iseqptr; def->type is its low 4 bits */
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

	/* rb_vm_t -> rb_objspace_t, for GC.compact detection */
	uint32_t vm_objspace;
	uint32_t objspace_compact_count; /* 0: unknown for this version */
	/* GC.stat's total_allocated_objects and total_freed_objects, for sampling */
	uint32_t objspace_total_allocated; /* 0: per pool only (3.2+), see pool_* */
	uint32_t objspace_total_freed;	   /* 0: per pool only (3.2+) */
	/* GC.count (profile.count): bumped as each GC starts; what ages objects */
	uint32_t objspace_gc_count;
	/*
	 * Size pools (3.1-3.3: objspace.size_pools[], 3.4: objspace.heaps[]):
	 * GC.stat's totals are the sums of each pool's counters from 3.2 on.
	 */
	uint32_t objspace_pools;
	uint32_t pool_count;
	uint32_t pool_size;
	uint32_t pool_total_allocated; /* 0: no per-pool counter (3.1) */
	uint32_t pool_total_freed;     /* 0: no per-pool counter (3.1) */
};

/*
 * Where a series' objects are born: the exported functions that allocate
 * themselves (newobj_of inlined), each probed on return.  Functions that
 * only call one of these through the PLT are left out: probing both would
 * count an object twice (ruby-versions.md 2.1, rubies-facts.md 4.1).
 */
struct ruby_alloc_points {
	const char *series;
	const char *const *functions; /* NULL-terminated */
	/* Also the hidden rb_class_allocate_instance, found through BasicObject's allocator */
	uint32_t hidden_class_allocator;
	/*
	 * The allocating frame's pc is still on the allocating instruction
	 * (3.1's leaf instructions): its line is that of pc, not pc - 1.
	 */
	uint32_t alloc_pc_on_insn;
};

/* The allocation entry points of the version's series, or NULL: not traceable. */
const struct ruby_alloc_points *ruby_alloc_points_for(const char *version);
/* Comma-separated series that can be traced, for error messages. */
const char *ruby_traced_series(void);

/* The entry for a version string such as "3.1.7", or NULL if unsupported. */
const struct ruby_offsets *ruby_offsets_for(const char *version);
/* The table's entry for the version's series, supported or only generated; or NULL. */
const struct ruby_offsets *ruby_offsets_entry(const char *version);


#endif

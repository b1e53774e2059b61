// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "ruby_versions.h"

/*
 * 3.1 by hand (Debian's 3.1 is stripped and no 3.1 DWARF is at hand); the
 * other series are generated from DWARF into ruby_offsets_gen.h.
 */
static const struct ruby_offsets ruby_versions[] = {
	{
		.series = "3.1",
		.verified = "3.1.2, 3.1.7",
		.source = "offsetof() against rb_mjit_min_header-3.1.7.h (ruby3.1-dev)",
		.supported = 1,
		.rclass_ext = 24,
		.classext_embedded = 0,
		.classext_iv_tbl = 8,
		.classext_allocator = 96,
		.classext_classpath = 0,
		.classext_attached_object = 0,
		.fl_singleton = 0x1000,
		.st_entries_start = 32,
		.st_entries_bound = 40,
		.st_entries = 48,
		.st_entry_size = 24,
		.rstring_noembed = 0x2000,
		.rstring_embed_len_mask = 0x7c000,
		.rstring_embed_len_shift = 14,
		.rstring_embed_start = 16,
		.rstring_heap_len = 16,
		.rstring_heap_ptr = 24,
		.rstring_len = 0,
		.rarray_embed_flag = 0x2000,
		.rarray_embed_len_mask = 0x18000,
		.rarray_embed_len_shift = 15,
		.rarray_embed_start = 16,
		.rarray_heap_len = 16,
		.rarray_heap_ptr = 32,
		.ec_vm_stack = 0,
		.ec_vm_stack_size = 8,
		.ec_cfp = 16,
		.cfp_size = 64,
		.cfp_pc = 0,
		.cfp_iseq = 16,
		.cfp_ep = 32,
		.cfp_self = 24,
		.iseq_body = 16,
		.body_iseq_encoded = 8,
		.body_iseq_size = 4,
		.body_location_pathobj = 64,
		.body_location_label = 80,
		.body_first_lineno = 88,
		.body_first_lineno_size = 8,
		.body_insns_info_body = 120,
		.body_insns_info_size = 136,
		.body_succ_index_table = 144,
		.insn_info_size = 12,
		.insn_info_line_no = 0,
		.imemo_iseq = 7,
		.cme_def = 16,
		.cme_owner = 32,
		.def_original_id = 32,
		.imemo_ment = 6,
		.rclass_super = 16,
		.classext_m_tbl = 16,
		.rclass_m_tbl = 0,
		.me_def = 16,
		.me_owner = 32,
		.def_iseq = 8,
		.method_type_iseq = 0,
		.body_type = 0,
		.body_local_iseq = 176,
		.iseq_type_method = 1,
		.iseq_type_block = 2,
		/* id_table.c is not in the MJIT header: read from Ruby 3.1's source and
		 * checked by the end-to-end labels of methods found through m_tbl. */
		.id_table_capa = 0,
		.id_table_items = 16,
		.id_item_size = 16,
		.id_item_value = 8,
		.id_last_op = 0xa9,
		.id_next = 239,
		.id_initialize = 0xc31,
		.vm_objspace = 1112,
		/* rb_objspace_t is private to gc.c: found in a live 3.1.7 as the one word
		 * equal to GC.stat(:compact_count) across five GC.compact calls. */
		.objspace_compact_count = 400,
		/* After malloc_params (16), the flags word and hook_events; and
		 * profile.total_freed_objects.  Both checked against GC.stat in a
		 * live process by tests/unit/test_live_ruby.c. */
		.objspace_total_allocated = 24,
		.objspace_total_freed = 448,
		/* rb_gc_count reads vm->objspace (+0x458), then +0x1b8: profile.count.
		 * Checked against GC.count by tests/unit/test_live_ruby.c. */
		.objspace_gc_count = 440,
		/* size_pools[1] (SIZE_POOL_COUNT 1 without USE_RVARGC), no counters in it */
		.objspace_pools = 40,
		.pool_count = 1,
		.pool_size = 160,
		.pool_total_allocated = 0,
		.pool_total_freed = 0,
	},
#include "ruby_offsets_gen.h"
};

/* 3.1: newobj_of is inlined into all of these; *_zalloc call the wraps through the PLT. */
static const char *const alloc_points_31[] = {
	"rb_wb_protected_newobj_of", "rb_wb_unprotected_newobj_of", "rb_ec_wb_protected_newobj_of",
	"rb_newobj_of",		     "rb_newobj",		    "rb_imemo_new",
	"rb_data_object_wrap",	     "rb_data_typed_object_wrap",   "rb_alloc_tmp_buffer_with_count",
	NULL,
};

/*
 * 3.3: the ec variant merged into rb_wb_protected_newobj_of; the typed
 * zalloc allocates embeddable TypedData itself (3.3.8 gc.c:3170-3187).
 */
static const char *const alloc_points_33[] = {
	"rb_wb_protected_newobj_of", "rb_wb_unprotected_newobj_of", "rb_newobj_of",
	"rb_newobj",		     "rb_imemo_new",		    "rb_data_object_wrap",
	"rb_data_typed_object_wrap", "rb_data_typed_object_zalloc", "rb_alloc_tmp_buffer_with_count",
	NULL,
};

/*
 * 3.4: every other file allocates through NEWOBJ_OF, that is the two
 * rb_wb_*_newobj_of (internal/gc.h:125-128); rb_imemo_new, the tmp buffer
 * and rb_class_allocate_instance call them through the PLT.
 */
static const char *const alloc_points_34[] = {
	"rb_wb_protected_newobj_of", "rb_wb_unprotected_newobj_of", "rb_data_object_wrap",
	"rb_data_typed_object_wrap", "rb_data_typed_object_zalloc", NULL,
};

static const struct ruby_alloc_points alloc_points[] = {
	{.series = "3.1", .functions = alloc_points_31, .hidden_class_allocator = 1,
	 .alloc_pc_on_insn = 1},
	{.series = "3.3", .functions = alloc_points_33, .hidden_class_allocator = 1},
	{.series = "3.4", .functions = alloc_points_34, .hidden_class_allocator = 0},
};

/* "3.1" matches "3.1" and "3.1.7", not "3.10.0" */
static bool in_series(const char *version, const char *series)
{
	size_t len = strlen(series);

	return strncmp(version, series, len) == 0 && (version[len] == '\0' || version[len] == '.');
}

const struct ruby_alloc_points *ruby_alloc_points_for(const char *version)
{
	size_t i;

	for (i = 0; version && i < sizeof(alloc_points) / sizeof(alloc_points[0]); i++)
		if (in_series(version, alloc_points[i].series))
			return &alloc_points[i];
	return NULL;
}

const char *ruby_traced_series(void)
{
	static char list[64];
	size_t i, at = 0;

	if (list[0])
		return list;
	for (i = 0; i < sizeof(alloc_points) / sizeof(alloc_points[0]); i++)
		at += snprintf(list + at, sizeof(list) - at, "%s%s", i ? ", " : "",
			       alloc_points[i].series);
	return list;
}

const struct ruby_offsets *ruby_offsets_for(const char *version)
{
	const struct ruby_offsets *o = ruby_offsets_entry(version);

	return o && o->supported ? o : NULL;
}

const struct ruby_offsets *ruby_offsets_entry(const char *version)
{
	size_t i;

	for (i = 0; version && i < sizeof(ruby_versions) / sizeof(ruby_versions[0]); i++)
		if (in_series(version, ruby_versions[i].series))
			return &ruby_versions[i];
	return NULL;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every fact rbmemtrace holds about a Ruby version, in one file: see
 * ruby_versions.h.  Over ~300 lines because the hand-written 3.1 layout is
 * one initializer of ~130 fields, each with where it was checked.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ruby_versions.h"

#define FL_USER(n) (1ULL << (12 + (n))) /* FL_USHIFT is 12 in every series */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * 3.1 by hand: Debian's 3.1 is stripped, and Debian serves no 3.1 DWARF.
 * Public structs: offsetof() against rb_mjit_min_header-3.1.2.h (ruby3.1-dev;
 * tests/unit/test_ruby_versions.c compares every one with the header of the
 * installed patch release).  gc.c's private structs: Ruby 3.1.2's gc.c,
 * st.c, hash.c, array.c, string.c, checked live on 3.1.7 and 3.1.2:
 * every sorted page pointer had page->start inside a 16 KiB-aligned body
 * whose first word points back at it, total_slots 408..409, their sum ==
 * GC.stat(:heap_available_slots), GC.count == profile.count, an idle census
 * == ObjectSpace.count_objects.
 */
static const struct ruby_layout layouts[] = {
	{
		.series = "3.1",
		.verified = "3.1.2, 3.1.7",
		.source = "the 3.1 table (rb_mjit_min_header-3.1.2.h, ruby 3.1.2 gc.c)",
		.rclass_ext = 24,
		.classext_embedded = 0,
		.classext_size = 112,
		.classext_iv_tbl = 8,
		.classext_allocator = 96,
		.classext_classpath = 0,
		.classext_attached_object = 0,
		.fl_singleton = 0x1000,
		.rclass_super = 16,
		.classext_m_tbl = 16,
		.rclass_m_tbl = 0,
		.st_entries_start = 32,
		.st_entries_bound = 40,
		.st_entries = 48,
		.st_entry_size = 24,
		.st_size = 56,
		.st_bins = 24,
		.st_max_power_no_bins = 4,
		.rstring_noembed = FL_USER(1),
		.rstring_embed_len_mask = 0x7c000,
		.rstring_embed_len_shift = 14,
		.rstring_embed_start = 16,
		.rstring_heap_len = 16,
		.rstring_heap_ptr = 24,
		.rstring_len = 0,
		.str_capa = 32,
		.str_shared = FL_USER(2),
		.str_nofree = FL_USER(18),
		.rarray_embed_flag = FL_USER(1),
		.rarray_embed_len_mask = 0x18000,
		.rarray_embed_len_shift = 15,
		.rarray_embed_start = 16,
		.rarray_heap_len = 16,
		.rarray_heap_ptr = 32,
		.ary_capa = 24,
		.ary_shared = FL_USER(2),
		.ary_shared_root = FL_USER(5),
		.obj_embed = FL_USER(1),
		.obj_numiv = 16,
		.hash_st_flag = FL_USER(3),
		.hash_tbl = 16,
		.hash_tbl_inline = 0,
		.ar_table_size = 128, /* 8 pairs of {key, value}; hints live in RHash */
		.bignum_embed = FL_USER(2),
		.bignum_len = 16,
		.bdigit_size = 4, /* BDIGIT is unsigned int: memsize_of(2**1000) = 40 + 32 * 4 */
		.struct_embed_len_mask = FL_USER(1) | FL_USER(2),
		.struct_len = 16,
		/* rb_thread_main: ractor +0x210, thread +0x10; rb_thread_current: ec +0x30 */
		.ractor_main_thread = 528,
		.thread_self = 16,
		.thread_ec = 40,
		.ec_vm_stack = 0,
		.ec_vm_stack_size = 8,
		.ec_cfp = 16,
		.ec_thread_ptr = 48,
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
		/* 3.1.2's; 3.1.7 moved it (patch_fields below).  rb_gc_count reads it. */
		.vm_objspace = 1104,
		/* flags: mode:2, immediate_sweep, dont_gc, dont_incremental, during_gc,
		 * during_compacting (bit 6), gc_stressful, has_hook, during_minor_gc,
		 * during_incremental_marking (bit 10), measure_gc.  rb_during_gc reads
		 * the byte at +16 and its bit 5. */
		.objspace_flags = 16,
		.objspace_flags_mode_mask = 0x3,
		.objspace_flags_incremental = 1u << 10,
		.objspace_flags_compacting = 1u << 6,
		.objspace_flags_during_gc = 1u << 5,
		/* rb_objspace_t is private to gc.c: malloc_params 16, flags+hook_events 8,
		 * total_allocated_objects 24, next_object_id 32, size_pools[1] 40 (160 B),
		 * atomic_flags 200, mark_stack 208 (40 B), marked_slots 248, heap_pages
		 * 256; profile at 336: ... count 440 (rb_gc_count reads +0x1b8),
		 * total_freed_objects 448.  compact_count: the one word equal to
		 * GC.stat(:compact_count) across five GC.compact calls (live, 3.1.7). */
		.objspace_gc_count = 440,
		.objspace_compact_count = 400,
		.objspace_total_allocated = 24,
		.objspace_total_freed = 448,
		.objspace_total_moved = 1080,
		/* size_pools[1] (SIZE_POOL_COUNT 1 without USE_RVARGC), slot_size at 0,
		 * no counters in it */
		.objspace_pools = 40,
		.pool_count = 1,
		.pool_size = 160,
		.pool_slot_size = 0,
		.pool_total_allocated = 0,
		.pool_total_freed = 0,
		.objspace_sorted = 256,
		.objspace_allocated_pages = 264,
		.sorted_darray_data = 0,
		/* slot_size 0, total_slots 2, free_slots 4, pinned_slots 6,
		 * final_slots 8, flags 12, size_pool 16, free_next 24, start 32,
		 * freelist 40, page_node 48, wb_unprotected_bits 64 (7 words),
		 * mark_bits 120. */
		.page_read_size = 120 + 7 * 8,
		.page_slot_size = 0,
		.page_total_slots = 2,
		.page_flags = 12,
		.page_before_sweep = 1u << 0,
		.page_start = 32,
		.page_wb_unprotected_bits = 64,
		.page_mark_bits = 120,
		.page_age_bits = 0,
		.bitmap_words = 7, /* GC::INTERNAL_CONSTANTS[:HEAP_PAGE_BITMAP_SIZE] 56 */
		/* HEAP_PAGE_ALIGN_LOG is 14 in 3.1 (16 in 3.0): GC::INTERNAL_CONSTANTS
		 * says HEAP_PAGE_SIZE 16384, HEAP_PAGE_OBJ_LIMIT 409. */
		.page_size = 16384,
		.bit_granule = 40,
		.max_slots = 409,
		.slot_size = 40,
		.max_slot_size = 40, /* SIZE_POOL_COUNT 1: USE_RVARGC is off */
		.fl_age_mask = (1ULL << 5) | (1ULL << 6),
		.fl_age_shift = 5,
		.old_age = 3,
		.fl_exivar = 1u << 10,
		/*
		 * refs (`why`): public types by offsetof() against the 3.1.2 MJIT
		 * header like the rest; gc.c's objspace->global_list is where
		 * rb_gc_register_address of 3.1.2 stores (movhps 0x1f0(objspace));
		 * variable.c's rb_global_entry {var, id, ractor_local} and
		 * rb_global_variable {counter, block_trace, data, getter, setter,
		 * marker, compactor, trace}, eval_jump.c's end_proc_data {func,
		 * data, next} and hash.c's ar_table {pairs[8]} from Ruby 3.1's
		 * source; each checked live by the refs group (layout_proof.c).
		 */
		.refs_unknown = 0,
		.obj_ivptr = 24,
		.obj_embed_start = 16,
		.obj_embed_max = 3,
		.classext_iv_index_tbl = 0,
		.iv_index_entry_index = 0,
		.classext_iv_ptr = 0,
		.classext_const_tbl = 24,
		.const_entry_value = 8,
		.shape_size = 0,
		.ary_aux_shared = 24,
		.str_aux_shared = 32,
		.hash_ifnone = 24,
		.hash_proc_default = FL_USER(2),
		.hash_ar_bound_mask = 0xf00000,
		.hash_ar_bound_shift = 20,
		.ar_table_pairs = 0,
		.struct_embed_shift = 13,
		.struct_ptr = 24,
		.struct_embed_start = 16,
		.data_dmark = 16,
		.data_data = 32,
		.tdata_type = 16,
		.tdata_typed_flag = 24,
		.tdata_data = 32,
		.tdata_embedded = 0,
		.tdata_size = 40,
		.datatype_name = 0,
		.datatype_dmark = 8,
		.datatype_flags = 64,
		.typed_decl_marking = 0,
		.block_self = 0,
		.block_ep = 8,
		.block_code = 16,
		.block_type = 24,
		.block_type_iseq = 0,
		.block_type_ifunc = 1,
		.imemo_env = 0,
		.env_iseq = 8,
		.env_ep = 16,
		.env_env = 24,
		.env_size = 32,
		.env_data_size = 3,
		.env_flag_local = 0x2,
		.body_local_table = 152,
		.body_local_table_size = 240,
		.imemo_cref = 1,
		.cref_klass = 16,
		.cref_next = 24,
		.imemo_ifunc = 4,
		.ifunc_data = 24,
		.imemo_memo = 5,
		.memo_v1 = 16,
		.memo_v2 = 24,
		.me_defined_class = 8,
		.def_bmethod_proc = 8,
		.def_alias_me = 8,
		.def_iseq_cref = 16,
		.method_type_bmethod = 4,
		.method_type_alias = 6,
		/* rb_vm_t members before loaded_features_index: the same in every 3.1 patch */
		.vm_mark_object_ary = 328,
		.vm_special_exceptions = 336,
		.vm_top_self = 376,
		.vm_load_path = 384,
		.vm_expanded_load_path = 408,
		.vm_loaded_features = 416,
		.vm_global_list = 0,
		.objspace_global_list = 496,
		.ractor_threads_set = 304,
		.thread_value = 184,
		.thread_invoke_proc = 288,
		.thread_invoke_type = 312,
		.thread_invoke_type_proc = 1,
		.ec_local_storage = 56,
		.ec_storage = 0,
		.ec_errinfo = 112,
		.cfp_sp = 8,
		.gentry_var = 0,
		.gvar_data = 8,
		.gvar_marker = 32,
		.endproc_data = 8,
		.endproc_next = 16,
		/* cont.c and thread_sync.c at v3_1_2; sizes from the MJIT header (ec 368 B) */
		.fiber_saved_ec = 80,
		.fiber_first_proc = 504,
		.ec_fiber_ptr = 40,
		.queue_que = 24,
		.geniv_ivptr = 8,
		.ec_machine_start = 144,
		.ec_machine_end = 152,
		.ec_machine_regs = 168,
	},
#include "ruby_layout_gen.h"
};

/*
 * Fields a patch release moved.  Code decoding (layout_decode.c) finds these
 * by itself on a stripped build; a line here lets the table agree, so a
 * decoder that stops matching does not leave a known patch unproved.
 */
static const struct ruby_patch_field patch_fields[] = {
	{"3.1", 5, 7, "vm_objspace", 1112,
	 "3.1.5 added rb_vm_t.loaded_features_realpath_map (ruby_3_1 commit 8a8d889c, Backport "
	 "#19246): every member from loaded_features_index on moved by 8; rb_gc_count of "
	 "Debian's 3.1.7 reads +0x458"},
};

/*
 * Macro values for builds whose DWARF has no .debug_macro (-g, not -g3).
 * 3.1: the table above (3.1.2 source).  3.3, 3.4: .debug_macro of the
 * 3.3.8 and 3.4.5 ruby-build builds; tests/unit/test_dwarf_layout.c reads
 * those builds with macros ignored and checks the result is unchanged.
 */
static const struct macro_default {
	const char *series;
	const char *name;
	int64_t value;
} macro_defaults[] = {
    {"3.1", "STR_SHARED", FL_USER(2)},
    {"3.1", "STR_NOFREE", FL_USER(18)},
    {"3.1", "RARRAY_SHARED_FLAG", FL_USER(2)},
    {"3.1", "RARRAY_SHARED_ROOT_FLAG", FL_USER(5)},
    {"3.1", "BIGNUM_EMBED_FLAG", FL_USER(2)},
    {"3.1", "MAX_POWER2_FOR_TABLES_WITHOUT_BINS", 4},
    {"3.1", "RVALUE_OLD_AGE", 3},
    {"3.1", "HEAP_PAGE_SIZE", 16384},
    {"3.1", "HEAP_PAGE_OBJ_LIMIT", 409},
    {"3.1", "BASE_SLOT_SIZE", 40},
    {"3.1", "VM_ENV_DATA_SIZE", 3},

    {"3.3", "STR_SHARED", FL_USER(2)},
    {"3.3", "STR_NOFREE", FL_USER(18)},
    {"3.3", "RARRAY_SHARED_FLAG", FL_USER(2)},
    {"3.3", "RARRAY_SHARED_ROOT_FLAG", FL_USER(12)},
    {"3.3", "BIGNUM_EMBED_FLAG", FL_USER(2)},
    {"3.3", "MAX_POWER2_FOR_TABLES_WITHOUT_BINS", 4},
    {"3.3", "RVALUE_OLD_AGE", 3},
    {"3.3", "HEAP_PAGE_SIZE", 65536},
    {"3.3", "HEAP_PAGE_OBJ_LIMIT", 1638},
    {"3.3", "BASE_SLOT_SIZE", 40},
    {"3.3", "SHAPE_FLAG_SHIFT", 32},
    {"3.3", "OBJ_TOO_COMPLEX_SHAPE_ID", 11}, /* SIZE_POOL_COUNT * 2 + 1 */
    {"3.3", "TYPED_DATA_EMBEDDED", 2},
    {"3.3", "VM_ENV_DATA_SIZE", 3},

    {"3.4", "STR_SHARED", FL_USER(0)},
    {"3.4", "STR_NOFREE", FL_USER(18)},
    {"3.4", "RARRAY_SHARED_FLAG", FL_USER(0)},
    {"3.4", "RARRAY_SHARED_ROOT_FLAG", FL_USER(12)},
    {"3.4", "BIGNUM_EMBED_FLAG", FL_USER(2)},
    {"3.4", "MAX_POWER2_FOR_TABLES_WITHOUT_BINS", 4},
    {"3.4", "RVALUE_OLD_AGE", 3},
    {"3.4", "HEAP_PAGE_SIZE", 65536},
    {"3.4", "HEAP_PAGE_OBJ_LIMIT", 1638},
    {"3.4", "BASE_SLOT_SIZE", 40},
    {"3.4", "SHAPE_FLAG_SHIFT", 32},
    {"3.4", "OBJ_TOO_COMPLEX_SHAPE_ID", 2}, /* ROOT_SHAPE_ID + 2 */
    {"3.4", "TYPED_DATA_EMBEDDED", 2},
    {"3.4", "VM_ENV_DATA_SIZE", 3},
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
	/* 3.4.11 and 3.4.5, 10 GC.compact: allocated and freed both +12,156 for 12,156 moves */
	{.series = "3.4", .functions = alloc_points_34, .hidden_class_allocator = 0,
	 .counters_count_moves = 1},
};

bool ruby_in_series(const char *version, const char *series)
{
	size_t len = strlen(series);

	return version && strncmp(version, series, len) == 0 &&
	       (version[len] == '\0' || version[len] == '.');
}

/* The patch level of "3.1.7" (7); -1 if the version has none. */
static int patch_level(const char *version, const char *series)
{
	const char *p = version + strlen(series);
	char *end;
	long v;

	if (*p != '.')
		return -1;
	v = strtol(p + 1, &end, 10);
	return end == p + 1 || v < 0 || v > 1000 ? -1 : (int) v;
}

const struct ruby_layout *ruby_versions_entry(const char *version)
{
	size_t i;

	for (i = 0; version && i < ARRAY_LEN(layouts); i++)
		if (ruby_in_series(version, layouts[i].series))
			return &layouts[i];
	return NULL;
}

int ruby_versions_layout(const char *version, struct ruby_layout *out)
{
	const struct ruby_layout *entry = ruby_versions_entry(version);
	int patch;
	size_t i;

	if (!entry)
		return -ENOENT;
	*out = *entry;
	patch = patch_level(version, entry->series);
	for (i = 0; i < ARRAY_LEN(patch_fields); i++) {
		const struct ruby_patch_field *p = &patch_fields[i];
		const struct layout_field *f = layout_field_named(p->field);

		if (f && !strcmp(p->series, entry->series) && patch >= (int) p->first_patch &&
		    patch <= (int) p->last_patch)
			layout_field_set(out, f, p->value);
	}
	return 0;
}

const struct ruby_patch_field *ruby_versions_patches(size_t *n)
{
	*n = ARRAY_LEN(patch_fields);
	return patch_fields;
}

static const char *series_list(char *buf, size_t n, const char *(*series_of)(size_t i),
			       size_t count)
{
	size_t i, at = 0;

	for (i = 0; i < count && at < n; i++)
		at += snprintf(buf + at, n - at, "%s%s", i ? ", " : "", series_of(i));
	return buf;
}

static const char *layout_series(size_t i)
{
	return layouts[i].series;
}

static const char *alloc_series(size_t i)
{
	return alloc_points[i].series;
}

const char *ruby_known_series(void)
{
	static char list[64];

	return list[0] ? list : series_list(list, sizeof(list), layout_series, ARRAY_LEN(layouts));
}

const char *ruby_traced_series(void)
{
	static char list[64];

	return list[0] ? list
		       : series_list(list, sizeof(list), alloc_series, ARRAY_LEN(alloc_points));
}

int ruby_versions_macro_default(const char *series, const char *name, int64_t *value)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(macro_defaults); i++) {
		if (!strcmp(macro_defaults[i].series, series) &&
		    !strcmp(macro_defaults[i].name, name)) {
			*value = macro_defaults[i].value;
			return 0;
		}
	}
	return -ENOENT;
}

const struct ruby_alloc_points *ruby_alloc_points_for(const char *version)
{
	size_t i;

	for (i = 0; version && i < ARRAY_LEN(alloc_points); i++)
		if (ruby_in_series(version, alloc_points[i].series))
			return &alloc_points[i];
	return NULL;
}

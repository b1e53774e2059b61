// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/ruby_versions.c: the built-in layouts, patch fields, macro defaults, entry points. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "classnames.h"
#include "elfinfo.h"
#include "helpers.h"
#include "mjit_offsets.h"
#include "procmaps.h"
#include "ruby_versions.h"
#include "target_mem.h"

Test(ruby_versions, series_matching)
{
	const struct ruby_layout *o = ruby_versions_entry("3.1.7");

	cr_assert_not_null(o);
	cr_expect_str_eq(o->series, "3.1");
	/* Every 3.1 spelling gives the same entry. */
	cr_expect_eq(ruby_versions_entry("3.1.2"), o);
	cr_expect_eq(ruby_versions_entry("3.1"), o);
	cr_expect_eq(ruby_versions_entry("3.1.0"), o);
	cr_expect_eq(ruby_versions_entry(MJIT_RUBY_VERSION), o);
	cr_expect_str_eq(ruby_versions_entry("3.3.8")->series, "3.3");
	cr_expect_str_eq(ruby_versions_entry("3.4.11")->series, "3.4");
	/* Not 3.1. */
	cr_expect_null(ruby_versions_entry("3.10.0"));
	cr_expect_null(ruby_versions_entry("3.11"));
	cr_expect_null(ruby_versions_entry("3.2.0"));
	cr_expect_null(ruby_versions_entry("3.0.6"));
	cr_expect_null(ruby_versions_entry("2.7.8"));
	cr_expect_null(ruby_versions_entry("9.9.0"));
	cr_expect_null(ruby_versions_entry("3"));
	cr_expect_null(ruby_versions_entry("3."));
	cr_expect_null(ruby_versions_entry("3.1a"));
	cr_expect_null(ruby_versions_entry(" 3.1.7"));
	cr_expect_null(ruby_versions_entry(""));
}

Test(ruby_versions, entry_is_self_consistent)
{
	const struct ruby_layout *o = ruby_versions_entry("3.1");

	cr_assert_not_null(o);
	cr_expect(strstr(ruby_traced_series(), o->series) != NULL);
	cr_expect(strstr(o->verified, "3.1.7") != NULL);
	cr_expect(strstr(o->verified, "3.1.2") != NULL);
	/* Layout facts the readers rely on, each a property of the numbers. */
	cr_expect_eq(o->rstring_embed_len_mask >> o->rstring_embed_len_shift, 0x1f,
		     "5-bit embedded length");
	cr_expect_eq(o->rarray_embed_len_mask >> o->rarray_embed_len_shift, 0x3);
	cr_expect_geq(o->rstring_embed_len_mask >> o->rstring_embed_len_shift, 3 * 8 - 1,
		      "the mask holds RSTRING_EMBED_LEN_MAX (23)");
	cr_expect_eq(o->rstring_noembed & o->rstring_embed_len_mask, 0);
	cr_expect_eq(o->fl_singleton & o->rstring_noembed, 0);
	/* ruby_read_string reads 4 words: heap len and ptr must be inside them. */
	cr_expect_lt(o->rstring_heap_len, 32);
	cr_expect_lt(o->rstring_heap_ptr, 32);
	cr_expect_eq(o->rstring_heap_len % 8, 0);
	cr_expect_eq(o->rstring_heap_ptr % 8, 0);
	/* st_table entries are {hash, key, record}: three words, as class_ivar reads. */
	cr_expect_eq(o->st_entry_size, 3 * 8);
	cr_expect_eq(o->st_entries_bound, o->st_entries_start + 8);
	/* The imemo numbers name what they should. */
	cr_expect_str_eq(ruby_imemo_name(o->imemo_iseq), "iseq");
	cr_expect_str_eq(ruby_imemo_name(o->imemo_ment), "ment");
	cr_expect_eq(o->imemo_iseq, MJIT_IMEMO_ISEQ);
	cr_expect_eq(o->imemo_ment, MJIT_IMEMO_MENT);
}

/* A patch release's fields apply to its patch levels only, and to nothing else. */
Test(ruby_versions, patch_fields)
{
	struct ruby_layout l;
	size_t n, i;
	const struct ruby_patch_field *p = ruby_versions_patches(&n);

	cr_assert_eq(ruby_versions_layout("3.1.2", &l), 0);
	cr_expect_eq(l.vm_objspace, 1104);
	cr_assert_eq(ruby_versions_layout("3.1.4", &l), 0);
	cr_expect_eq(l.vm_objspace, 1104);
	cr_assert_eq(ruby_versions_layout("3.1.5", &l), 0);
	cr_expect_eq(l.vm_objspace, 1112, "3.1.5 added loaded_features_realpath_map");
	cr_assert_eq(ruby_versions_layout("3.1.7", &l), 0);
	cr_expect_eq(l.vm_objspace, 1112);
	cr_expect_eq(l.objspace_gc_count, 440, "rb_objspace_t did not move");
	cr_expect_eq(ruby_versions_layout("3.2.0", &l), -ENOENT);
	cr_expect_eq(ruby_versions_layout("3.10.1", &l), -ENOENT);
	cr_assert_eq(ruby_versions_layout("3.3.8", &l), 0);
	cr_expect_eq(l.vm_objspace, ruby_versions_entry("3.3")->vm_objspace);
	for (i = 0; i < n; i++) {
		cr_expect_not_null(layout_field_named(p[i].field), "%s", p[i].field);
		cr_expect_not_null(ruby_versions_entry(p[i].series), "%s", p[i].series);
		cr_expect_leq(p[i].first_patch, p[i].last_patch);
		cr_expect_gt(strlen(p[i].evidence), 20, "say how it was found");
	}
}

Test(ruby_versions, macro_defaults)
{
	int64_t v;

	cr_expect_eq(ruby_versions_macro_default("3.1", "HEAP_PAGE_SIZE", &v), 0);
	cr_expect_eq(v, 16384);
	cr_expect_eq(ruby_versions_macro_default("3.4", "STR_SHARED", &v), 0);
	cr_expect_eq(v, 1 << 12);
	cr_expect_eq(ruby_versions_macro_default("9.9", "STR_SHARED", &v), -ENOENT);
	cr_expect_eq(ruby_versions_macro_default("3.3", "NO_SUCH_MACRO", &v), -ENOENT);
}

/*
 * The layout the table gives the installed Ruby's exact patch release must
 * agree with the offsets that release's own header gives.
 */
Test(ruby_versions, table_matches_ruby_header)
{
	const struct ruby_layout layout = test_layout_of(MJIT_RUBY_VERSION), *o = &layout;

	cr_expect_eq(o->rclass_ext, MJIT_RCLASS_EXT);
	cr_expect_eq(o->classext_iv_tbl, MJIT_CLASSEXT_IV_TBL);
	cr_expect_eq(o->classext_allocator, MJIT_CLASSEXT_ALLOCATOR);
	cr_expect_eq(o->fl_singleton, MJIT_FL_SINGLETON);
	cr_expect_eq(o->st_entries_start, MJIT_ST_ENTRIES_START);
	cr_expect_eq(o->st_entries_bound, MJIT_ST_ENTRIES_BOUND);
	cr_expect_eq(o->st_entries, MJIT_ST_ENTRIES);
	cr_expect_eq(o->rstring_noembed, MJIT_RSTRING_NOEMBED);
	cr_expect_eq(o->rstring_embed_len_mask, MJIT_RSTRING_EMBED_LEN_MASK);
	cr_expect_eq(o->rstring_embed_len_shift, MJIT_RSTRING_EMBED_LEN_SHIFT);
	cr_expect_eq(o->rstring_embed_start, MJIT_RSTRING_EMBED_START);
	cr_expect_eq(o->rstring_heap_len, MJIT_RSTRING_HEAP_LEN);
	cr_expect_eq(o->rstring_heap_ptr, MJIT_RSTRING_HEAP_PTR);
	cr_expect_eq(o->rarray_embed_flag, MJIT_RARRAY_EMBED_FLAG);
	cr_expect_eq(o->rarray_embed_len_mask, MJIT_RARRAY_EMBED_LEN_MASK);
	cr_expect_eq(o->rarray_embed_len_shift, MJIT_RARRAY_EMBED_LEN_SHIFT);
	cr_expect_eq(o->rarray_embed_start, MJIT_RARRAY_EMBED_START);
	cr_expect_eq(o->rarray_heap_len, MJIT_RARRAY_HEAP_LEN);
	cr_expect_eq(o->rarray_heap_ptr, MJIT_RARRAY_HEAP_PTR);
	cr_expect_eq(o->ec_vm_stack, MJIT_EC_VM_STACK);
	cr_expect_eq(o->ec_vm_stack_size, MJIT_EC_VM_STACK_SIZE);
	cr_expect_eq(o->ec_cfp, MJIT_EC_CFP);
	cr_expect_eq(o->cfp_size, MJIT_CFP_SIZE);
	cr_expect_eq(o->cfp_pc, MJIT_CFP_PC);
	cr_expect_eq(o->cfp_iseq, MJIT_CFP_ISEQ);
	cr_expect_eq(o->cfp_ep, MJIT_CFP_EP);
	cr_expect_eq(o->iseq_body, MJIT_ISEQ_BODY);
	cr_expect_eq(o->body_iseq_encoded, MJIT_BODY_ISEQ_ENCODED);
	cr_expect_eq(o->body_iseq_size, MJIT_BODY_ISEQ_SIZE);
	cr_expect_eq(o->body_location_pathobj, MJIT_BODY_PATHOBJ);
	cr_expect_eq(o->body_location_label, MJIT_BODY_LABEL);
	cr_expect_eq(o->body_first_lineno, MJIT_BODY_FIRST_LINENO);
	cr_expect_eq(o->body_insns_info_body, MJIT_BODY_INSNS_INFO_BODY);
	cr_expect_eq(o->body_insns_info_size, MJIT_BODY_INSNS_INFO_SIZE);
	cr_expect_eq(o->body_succ_index_table, MJIT_BODY_SUCC_INDEX_TABLE);
	cr_expect_eq(o->insn_info_size, MJIT_INSN_INFO_SIZE);
	cr_expect_eq(o->insn_info_line_no, MJIT_INSN_INFO_LINE_NO);
	cr_expect_eq(o->imemo_iseq, MJIT_IMEMO_ISEQ);
	cr_expect_eq(o->imemo_ment, MJIT_IMEMO_MENT);
	cr_expect_eq(o->cme_def, MJIT_CME_DEF);
	cr_expect_eq(o->cme_owner, MJIT_CME_OWNER);
	cr_expect_eq(o->def_original_id, MJIT_DEF_ORIGINAL_ID);
	cr_expect_eq(o->vm_objspace, MJIT_VM_OBJSPACE);
	cr_expect_eq(o->cfp_self, MJIT_CFP_SELF);
	cr_expect_eq(o->rclass_super, MJIT_RCLASS_SUPER);
	cr_expect_eq(o->classext_m_tbl, MJIT_CLASSEXT_M_TBL);
	cr_expect_eq(o->me_def, MJIT_ME_DEF);
	cr_expect_eq(o->me_owner, MJIT_ME_OWNER);
	cr_expect_eq(o->def_iseq, MJIT_DEF_ISEQ);
	cr_expect_eq(o->method_type_iseq, MJIT_METHOD_TYPE_ISEQ);
	cr_expect_eq(o->body_type, MJIT_BODY_TYPE);
	cr_expect_eq(o->body_local_iseq, MJIT_BODY_LOCAL_ISEQ);
	cr_expect_eq(o->iseq_type_method, MJIT_ISEQ_TYPE_METHOD);
	cr_expect_eq(o->iseq_type_block, MJIT_ISEQ_TYPE_BLOCK);
	cr_expect_eq(o->ractor_main_thread, MJIT_RACTOR_MAIN_THREAD);
	cr_expect_eq(o->thread_self, MJIT_THREAD_SELF);
	cr_expect_eq(o->thread_ec, MJIT_THREAD_EC);
	cr_expect_eq(o->ec_thread_ptr, MJIT_EC_THREAD_PTR);
}

/* Where objects are born, per series: the lists ruby-versions.md 2.1 gives. */
Test(ruby_versions, alloc_points_per_series)
{
	const struct ruby_alloc_points *p31 = ruby_alloc_points_for("3.1.7");
	const struct ruby_alloc_points *p33 = ruby_alloc_points_for("3.3.8");
	const struct ruby_alloc_points *p34 = ruby_alloc_points_for("3.4.11");
	size_t n31 = 0, n33 = 0, n34 = 0, i;

	cr_assert(p31 && p33 && p34);
	cr_expect_null(ruby_alloc_points_for("3.2.0"), "3.2 was never checked");
	cr_expect_null(ruby_alloc_points_for("3.10.0"));
	cr_expect_null(ruby_alloc_points_for("4.0.0"));
	cr_expect_null(ruby_alloc_points_for(NULL));
	while (p31->functions[n31])
		n31++;
	while (p33->functions[n33])
		n33++;
	while (p34->functions[n34])
		n34++;
	cr_expect_eq(n31, 9);
	cr_expect_eq(n33, 9);
	cr_expect_eq(n34, 5, "3.4 allocates through five exported functions");
	/* 3.4's Foo.new goes through rb_wb_protected_newobj_of: probing the allocator too would
	 * count twice. */
	cr_expect(p31->hidden_class_allocator && p33->hidden_class_allocator);
	cr_expect(!p34->hidden_class_allocator);
	for (i = 0; i < n34; i++) {
		cr_expect_neq(strcmp(p34->functions[i], "rb_imemo_new"), 0, "W in 3.4: a PLT call");
		cr_expect_neq(strcmp(p34->functions[i], "rb_alloc_tmp_buffer_with_count"), 0);
	}
	for (i = 0; i < n33; i++)
		cr_expect_neq(strcmp(p33->functions[i], "rb_ec_wb_protected_newobj_of"), 0,
			      "merged into rb_wb_protected_newobj_of in 3.3");
	/* The allocating frame's pc is on its instruction only in 3.1. */
	cr_expect(p31->alloc_pc_on_insn && !p33->alloc_pc_on_insn && !p34->alloc_pc_on_insn);
	cr_expect_str_eq(ruby_traced_series(), "3.1, 3.3, 3.4");
}

Test(ruby_versions, the_31_pages)
{
	/* GC::INTERNAL_CONSTANTS of 3.1.7: 16 KiB pages, 409 slots of 40 B, 56-byte bitmaps. */
	const struct ruby_layout l = test_layout_of("3.1.7");

	cr_expect_eq(l.page_size, 16384);
	cr_expect_eq(l.max_slots, (16384 - 8) / 40);
	cr_expect_eq(l.bitmap_words * 8, 56);
	cr_expect_leq(l.page_mark_bits + l.bitmap_words * 8, l.page_read_size);
}

/* The objspace counters sampling scales by are GC.stat's, read from outside. */
Test(ruby_versions, objspace_allocation_counters)
{
	char *argv[] = {"ruby", "-e",
			"3.times { GC.start }; GC.disable; STDOUT.sync = true; "
			"a = GC.stat(:total_allocated_objects); f = GC.stat(:total_freed_objects); "
			"puts \"#{a} #{f} #{GC.count}\"; sleep 30",
			NULL};
	const struct ruby_layout layout = test_layout_of(MJIT_RUBY_VERSION), *off = &layout;
	uint64_t sym, vm, objspace, allocated, freed, count;
	unsigned long want_allocated, want_freed, want_count;
	struct ruby_image img;
	char err[512];
	struct test_child c;

	test_child_start(&c, argv);
	cr_assert_eq(sscanf(c.line, "%lu %lu %lu", &want_allocated, &want_freed, &want_count), 3,
		     "%s", c.line);
	cr_assert_eq(procmaps_find_ruby(c.pid, &img, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(elf_symbol_value(img.host_path, "ruby_current_vm_ptr", &sym, NULL), 0);
	cr_assert_eq(target_read_u64(c.pid, img.load_bias + sym, &vm), 0);
	cr_assert_eq(target_read_u64(c.pid, vm + off->vm_objspace, &objspace), 0);
	cr_assert_eq(target_read_u64(c.pid, objspace + off->objspace_total_allocated, &allocated),
		     0);
	cr_assert_eq(target_read_u64(c.pid, objspace + off->objspace_total_freed, &freed), 0);
	/* The line itself allocated a few strings after the counter was read. */
	cr_expect(allocated >= want_allocated && allocated <= want_allocated + 50,
		  "objspace says %lu allocated, GC.stat said %lu", (unsigned long) allocated,
		  want_allocated);
	cr_expect_eq(freed, want_freed);
	cr_assert_eq(target_read_u64(c.pid, objspace + off->objspace_gc_count, &count), 0);
	cr_expect(want_count >= 3, "GC.count %lu", want_count);
	cr_expect_eq(count, want_count);
	test_child_stop(&c);
}

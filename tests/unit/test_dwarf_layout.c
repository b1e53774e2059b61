// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/dwarf_layout.c: a Ruby's layout from DWARF, against the table and notes/layouts/. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dwarf_layout.h"
#include "dwarf_types.h"
#include "helpers.h"
#include "mjit_offsets.h"
#include "ruby_versions.h"

/* ---- the test Rubies' DWARF builds ---- */

struct ruby_build {
	const char *dir, *lib, *version;
};

static const struct ruby_build builds[] = {
    {RUBIES "/3.3.8-ruby-build", RUBIES "/3.3.8-ruby-build/lib/libruby.so.3.3.8", "3.3.8"},
    {RUBIES "/3.4.5-ruby-build", RUBIES "/3.4.5-ruby-build/lib/libruby.so.3.4.5", "3.4.5"},
};

static int compare(const char *what, const struct ruby_layout *a, const struct ruby_layout *b)
{
	const struct layout_field *fl = ruby_layout_fields;
	size_t i, n = ruby_layout_nfields;
	int diffs = 0;

	for (i = 0; i < n; i++) {
		uint64_t x = layout_field_get(a, &fl[i]), y = layout_field_get(b, &fl[i]);

		if (x == y)
			continue;
		diffs++;
		cr_expect_eq(x, y, "%s.%s: DWARF %#llx, table %#llx", what, fl[i].name,
			     (unsigned long long) x, (unsigned long long) y);
	}
	return diffs;
}

static double ms(const struct timespec *a, const struct timespec *b)
{
	return (double) (b->tv_sec - a->tv_sec) * 1e3 + (double) (b->tv_nsec - a->tv_nsec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

Test(dwarf_layout, ruby_builds_equal_their_generated_entries)
{
	size_t i, k;
	int checked = 0;

	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		const struct ruby_build *b = &builds[i];
		struct ruby_layout table, dwarf;
		double wall[5], cpu[5];
		char err[2048];

		if (!test_have_ruby(b->lib))
			continue;
		cr_assert_eq(ruby_versions_layout(b->version, &table), 0,
			     "no table entry for %s: make gen-tables", b->version);
		for (k = 0; k < 5; k++) {
			struct timespec w0, w1, c0, c1;

			clock_gettime(CLOCK_MONOTONIC, &w0);
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
			cr_assert_eq(dwarf_layout_read(b->lib, NULL, b->version, &dwarf, NULL, 0,
						       err, sizeof(err)),
				     0, "%s", err);
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
			clock_gettime(CLOCK_MONOTONIC, &w1);
			wall[k] = ms(&w0, &w1);
			cpu[k] = ms(&c0, &c1);
		}
		qsort(wall, 5, sizeof(double), cmp_double);
		qsort(cpu, 5, sizeof(double), cmp_double);
		cr_log_info("dwarf_layout_read(%s): median of 5: %.0f ms wall, %.0f ms CPU "
			    "(min %.0f / %.0f)",
			    b->version, wall[2], cpu[2], wall[0], cpu[0]);
		cr_expect_lt(cpu[2], 1000.0, "reading the layout must stay well under a second");
		cr_expect_eq(compare(b->version, &dwarf, &table), 0, "%s: run make gen-tables",
			     b->version);
		checked++;
	}
	test_require_rubies(checked, "the DWARF test Rubies");
}

/* Without .debug_macro (a -g build), the per-series defaults give the same layout. */
Test(dwarf_layout, macro_defaults_equal_the_builds_macros)
{
	size_t i;
	int checked = 0;

	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		struct ruby_layout with, without;
		struct dwarf_types *dt;
		char err[2048];

		if (!test_have_ruby(builds[i].lib))
			continue;
		dt = test_dwarf_open(builds[i].lib, NULL);
		cr_assert(dwarf_types_has_macros(dt), "ruby-build compiles with -ggdb3");
		cr_assert_eq(dwarf_layout_from(dt, builds[i].version, &with, err, sizeof(err)), 0,
			     "%s", err);
		dwarf_types_close(dt);
		dt = test_dwarf_open(builds[i].lib, NULL);
		dwarf_types_ignore_macros(dt);
		cr_assert_eq(dwarf_layout_from(dt, builds[i].version, &without, err, sizeof(err)),
			     0, "%s", err);
		cr_expect_eq(compare("defaults", &without, &with), 0);
		/* an unknown series without macros is refused, naming the macro */
		cr_expect_eq(dwarf_layout_from(dt, "9.9.0", &without, err, sizeof(err)), -1);
		cr_expect(strstr(err, "STR_SHARED"), "%s", err);
		dwarf_types_close(dt);
		checked++;
	}
	test_require_rubies(checked, "the DWARF test Rubies");
}

Test(dwarf_layout, stripped_distro_libruby_is_refused)
{
	const char *lib = RUBIES "/3.3.8-distro/root/usr/lib/x86_64-linux-gnu/libruby-3.3.so.3.3.8";
	struct ruby_layout off;
	char err[1024];

	if (!test_have_ruby(lib))
		test_require_rubies(0, "3.3.8-distro's stripped libruby");
	cr_expect_eq(dwarf_layout_read(lib, NULL, "3.3.8", &off, NULL, 0, err, sizeof(err)), -1);
	cr_expect(strstr(err, "no DWARF"), "%s", err);
}

/* ---- notes/layouts/VERSION.txt: gdb's reading of the same builds (scripts/ruby-layout.sh) ---- */

struct note_map {
	const char *note; /* name in the notes file */
	const char *field;
	int kind;	  /* 0 value, 1 bit position of a mask field relative to its word field */
	const char *word; /* kind 1: the field holding the word's offset */
};

static const struct note_map note_maps[] = {
    {"RClass.classext", "rclass_ext", 0, NULL},
    {"RClass.ptr", "rclass_ext", 0, NULL},
    {"classext.iv_tbl", "classext_iv_tbl", 0, NULL},
    {"classext.allocator", "classext_allocator", 0, NULL},
    {"classext.allocator_31", "classext_allocator", 0, NULL},
    {"classext.classpath", "classext_classpath", 0, NULL},
    {"classext.attached_object", "classext_attached_object", 0, NULL},
    {"RUBY_FL_SINGLETON", "fl_singleton", 0, NULL},
    {"RClass.super", "rclass_super", 0, NULL},
    {"RClass.m_tbl", "rclass_m_tbl", 0, NULL},
    {"classext.m_tbl", "classext_m_tbl", 0, NULL},
    {"ec.vm_stack", "ec_vm_stack", 0, NULL},
    {"ec.vm_stack_size", "ec_vm_stack_size", 0, NULL},
    {"ec.cfp", "ec_cfp", 0, NULL},
    {"cfp.sizeof", "cfp_size", 0, NULL},
    {"cfp.pc", "cfp_pc", 0, NULL},
    {"cfp.iseq", "cfp_iseq", 0, NULL},
    {"cfp.self", "cfp_self", 0, NULL},
    {"cfp.ep", "cfp_ep", 0, NULL},
    {"iseq.body", "iseq_body", 0, NULL},
    {"body.type", "body_type", 0, NULL},
    {"body.iseq_encoded", "body_iseq_encoded", 0, NULL},
    {"body.location.pathobj", "body_location_pathobj", 0, NULL},
    {"body.location.label", "body_location_label", 0, NULL},
    {"body.location.first_lineno", "body_first_lineno", 0, NULL},
    {"body.location.first_lineno.sizeof", "body_first_lineno_size", 0, NULL},
    {"body.insns_info.body", "body_insns_info_body", 0, NULL},
    {"body.insns_info.size", "body_insns_info_size", 0, NULL},
    {"body.insns_info.succ_index_table", "body_succ_index_table", 0, NULL},
    {"body.local_iseq", "body_local_iseq", 0, NULL},
    {"insn_info.sizeof", "insn_info_size", 0, NULL},
    {"insn_info.line_no", "insn_info_line_no", 0, NULL},
    {"me.def", "me_def", 0, NULL},
    {"me.owner", "me_owner", 0, NULL},
    {"def.body.iseq.iseqptr", "def_iseq", 0, NULL},
    {"def.original_id", "def_original_id", 0, NULL},
    {"RString.len", "rstring_len", 0, NULL},
    {"RString.as.heap.len", "rstring_heap_len", 0, NULL},
    {"RString.as.heap.ptr", "rstring_heap_ptr", 0, NULL},
    {"RString.as.embed.ary", "rstring_embed_start", 0, NULL},
    {"RSTRING_NOEMBED", "rstring_noembed", 0, NULL},
    {"RArray.as.heap.len", "rarray_heap_len", 0, NULL},
    {"RArray.as.heap.ptr", "rarray_heap_ptr", 0, NULL},
    {"RArray.as.ary", "rarray_embed_start", 0, NULL},
    {"RARRAY_EMBED_FLAG", "rarray_embed_flag", 0, NULL},
    {"RARRAY_EMBED_LEN_MASK", "rarray_embed_len_mask", 0, NULL},
    {"RARRAY_EMBED_LEN_SHIFT", "rarray_embed_len_shift", 0, NULL},
    {"st_table.entries_start", "st_entries_start", 0, NULL},
    {"st_table.entries_bound", "st_entries_bound", 0, NULL},
    {"st_table.entries", "st_entries", 0, NULL},
    {"st_table_entry.sizeof", "st_entry_size", 0, NULL},
    {"id_table.capa", "id_table_capa", 0, NULL},
    {"id_table.items", "id_table_items", 0, NULL},
    {"id_table.item.sizeof", "id_item_size", 0, NULL},
    {"id_table.item.val", "id_item_value", 0, NULL},
    {"imemo.imemo_iseq", "imemo_iseq", 0, NULL},
    {"imemo.imemo_ment", "imemo_ment", 0, NULL},
    {"vm.objspace", "vm_objspace", 0, NULL},
    {"vm.gc.objspace", "vm_objspace", 0, NULL},
    {"objspace.profile.compact_count", "objspace_compact_count", 0, NULL},
    {"objspace.profile.count", "objspace_gc_count", 0, NULL},
    {"objspace.total_allocated_objects", "objspace_total_allocated", 0, NULL},
    {"objspace.profile.total_freed_objects", "objspace_total_freed", 0, NULL},
    {"objspace.size_pools", "objspace_pools", 0, NULL},
    {"objspace.heaps", "objspace_pools", 0, NULL},
    {"objspace.size_pools.count", "pool_count", 0, NULL},
    {"objspace.heaps.count", "pool_count", 0, NULL},
    {"size_pool.sizeof", "pool_size", 0, NULL},
    {"size_pool.total_allocated_objects", "pool_total_allocated", 0, NULL},
    {"size_pool.total_freed_objects", "pool_total_freed", 0, NULL},
    {"heap.total_allocated_objects", "pool_total_allocated", 0, NULL},
    {"heap.total_freed_objects", "pool_total_freed", 0, NULL},

    {"objspace.flags", "objspace_flags", 0, NULL},
    {"objspace.flags.mode.bitpos", "objspace_flags_mode_mask", 1, "objspace_flags"},
    {"objspace.flags.during_compacting.bitpos", "objspace_flags_compacting", 1, "objspace_flags"},
    {"objspace.flags.during_incremental_marking.bitpos", "objspace_flags_incremental", 1,
     "objspace_flags"},
    {"objspace.flags.during_gc.bitpos", "objspace_flags_during_gc", 1, "objspace_flags"},
    {"objspace.heap_pages.sorted", "objspace_sorted", 0, NULL},
    {"objspace.heap_pages.allocated_pages", "objspace_allocated_pages", 0, NULL},
    {"size_pool.slot_size", "pool_slot_size", 0, NULL},
    {"heap.slot_size", "pool_slot_size", 0, NULL},
    {"heap_page.slot_size", "page_slot_size", 0, NULL},
    {"heap_page.total_slots", "page_total_slots", 0, NULL},
    {"heap_page.flags", "page_flags", 0, NULL},
    {"heap_page.flags.before_sweep.bitpos", "page_before_sweep", 1, "page_flags"},
    {"heap_page.start", "page_start", 0, NULL},
    {"heap_page.mark_bits", "page_mark_bits", 0, NULL},
    {"heap_page.wb_unprotected_bits", "page_wb_unprotected_bits", 0, NULL},
    {"heap_page.age_bits", "page_age_bits", 0, NULL},
    {"heap_page.mark_bits.count", "bitmap_words", 0, NULL},
    {"HEAP_PAGE_BITMAP_LIMIT", "bitmap_words", 0, NULL},
    {"HEAP_PAGE_ALIGN", "page_size", 0, NULL},
    {"HEAP_PAGE_SIZE", "page_size", 0, NULL},
    {"HEAP_PAGE_OBJ_LIMIT", "max_slots", 0, NULL},
    {"RVALUE.sizeof", "bit_granule", 0, NULL},
    {"RVALUE_OLD_AGE", "old_age", 0, NULL},
};

/* Compares a layout with a notes file; returns how many values were compared. */
static int check_notes(const char *notes, const struct ruby_layout *l)
{
	char line[512], name[256], value[256];
	FILE *f = fopen(notes, "r");
	int checked = 0;
	size_t i;

	cr_assert_not_null(f, "%s", notes);
	while (fgets(line, sizeof(line), f)) {
		char *end;
		unsigned long long v;

		if (sscanf(line, "%255s %255s", name, value) != 2)
			continue;
		v = strtoull(value, &end, 0);
		if (*end || end == value)
			continue; /* n/a, a macro's text */
		for (i = 0; i < sizeof(note_maps) / sizeof(note_maps[0]); i++) {
			const struct note_map *m = &note_maps[i];
			const struct layout_field *fl = layout_field_named(m->field);
			uint64_t got;

			if (strcmp(m->note, name))
				continue;
			cr_assert_not_null(fl, "%s", m->field);
			got = layout_field_get(l, fl);
			if (m->kind ==
			    1) { /* bit position: of the mask's lowest bit, from byte 0 */
				const struct layout_field *w = layout_field_named(m->word);

				cr_assert(got, "%s is 0", m->field);
				got = layout_field_get(l, w) * 8 + (uint64_t) __builtin_ctzll(got);
			}
			cr_expect_eq(got, v, "%s: %s = %llu in the layout, %llu in %s", name,
				     m->field, (unsigned long long) got, v, notes);
			checked++;
		}
	}
	fclose(f);
	return checked;
}

Test(dwarf_layout, equal_to_notes_layouts)
{
	struct ruby_layout l;
	char err[2048], notes[256];
	size_t i;
	int n;

	/* 3.1.7: the hand-written entry and 3.1.7's patch fields against the values derived
	 * from the source and checked live on Debian's 3.1.7 */
	cr_assert_eq(ruby_versions_layout("3.1.7", &l), 0);
	n = check_notes("notes/layouts/3.1.7-source.txt", &l);
	cr_expect_geq(n, 40, "only %d values of 3.1 compared", n);
	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		if (!test_have_ruby(builds[i].lib))
			continue;
		cr_assert_eq(dwarf_layout_read(builds[i].lib, NULL, builds[i].version, &l, NULL, 0,
					       err, sizeof(err)),
			     0, "%s", err);
		snprintf(notes, sizeof(notes), "notes/layouts/%s-ruby-build.txt",
			 builds[i].version);
		n = check_notes(notes, &l);
		cr_expect_geq(n, 80, "only %d values of %s compared", n, builds[i].version);
		cr_log_info("%s: %d values equal to %s", builds[i].version, n, notes);
	}
}

/*
 * Ruby 3.1 has no DWARF build at hand, but its MJIT header has every type
 * outside gc.c, st.c, id_table.c and hash.c: the reader's 3.1 paths must give
 * the layout the table gives the installed patch release for all of them.
 */
Test(dwarf_layout, ruby31_types_equal_the_31_table)
{
	static const char *const private[] = {
	    /* gc.c, st.c, id_table.c, hash.c: not in the MJIT header */
	    /* ...nor variable.c's globals, eval_jump.c's at_exit list, gc.c's registered addresses */
	    "refs_unknown",
	    /* cont.c's fibers, thread_sync.c's queues; gen_ivtbl is read from variable.c's CU */
	    "fiber_saved_ec",
	    "fiber_first_proc",
	    "queue_que",
	    "geniv_ivptr",
	    "objspace_global_list",
	    "gvar_data",
	    "gvar_marker",
	    "gentry_var",
	    "endproc_data",
	    "endproc_next",
	    "ar_table_pairs",
	    "st_entry_size",
	    "st_size",
	    "st_bins",
	    "id_table_capa",
	    "id_table_items",
	    "id_item_size",
	    "id_item_value",
	    "objspace_flags",
	    "objspace_flags_mode_mask",
	    "objspace_flags_incremental",
	    "objspace_flags_compacting",
	    "objspace_flags_during_gc",
	    "objspace_compact_count",
	    "objspace_total_allocated",
	    "objspace_total_freed",
	    "objspace_total_moved",
	    "objspace_gc_count",
	    "objspace_pools",
	    "pool_count",
	    "pool_size",
	    "objspace_sorted",
	    "objspace_allocated_pages",
	    "page_read_size",
	    "page_slot_size",
	    "page_total_slots",
	    "page_flags",
	    "page_before_sweep",
	    "page_start",
	    "page_mark_bits",
	    "page_wb_unprotected_bits",
	    "bitmap_words",
	    "max_slot_size",
	    "ar_table_size"};
	struct dwarf_types *dt = test_dwarf_open(".output/fixtures/ruby31_types.so", NULL);
	struct ruby_layout table, got;
	char err[4096];
	size_t i, j, same = 0;

	cr_assert_eq(ruby_versions_layout(MJIT_RUBY_VERSION, &table), 0);
	cr_expect_eq(dwarf_layout_from(dt, MJIT_RUBY_VERSION, &got, err, sizeof(err)), -1);
	cr_expect(strstr(err, "rb_objspace_t"), "%s", err);
	dwarf_types_close(dt);
	for (i = 0; i < ruby_layout_nfields; i++) {
		const struct layout_field *fl = &ruby_layout_fields[i];
		uint64_t a = layout_field_get(&got, fl), b = layout_field_get(&table, fl);

		/* clang-format would take "private" for C++'s and write "fl -> name" */
		// clang-format off
		for (j = 0; j < sizeof(private) / sizeof(private[0]); j++)
			if (!strcmp(private[j], fl->name))
				break;
		// clang-format on
		if (j < sizeof(private) / sizeof(private[0]))
			continue;
		cr_expect_eq(a, b, "%s: DWARF %#llx, the table for %s %#llx", fl->name,
			     (unsigned long long) a, MJIT_RUBY_VERSION, (unsigned long long) b);
		same++;
	}
	cr_expect_geq(same, 90, "only %zu fields compared", same);
}

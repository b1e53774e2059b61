// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stddef.h>
#include <string.h>
#include "heap_layout.h"

#define FL_USER(n) (1ULL << (12 + (n))) /* FL_USHIFT is 12 */

static const struct heap_layout layouts[] = {
	{
		.series = "3.1",
		.verified = "3.1.7",
		/*
		 * gc.c, st.c, hash.c, array.c, string.c of ruby 3.1.2 (Debian's
		 * source package; 3.1.7's gc.c structs are the same, checked
		 * live).  Public struct offsets from rb_mjit_min_header-3.1.7.h.
		 * Live checks on 3.1.7, see census.c's page checks and the
		 * report: every sorted page pointer had page->start inside a
		 * 16 KiB-aligned body whose first word points back at it,
		 * total_slots 408..409, their sum == GC.stat(:heap_available_slots),
		 * GC.count == profile.count, idle census == ObjectSpace.count_objects.
		 */
		.source = "ruby 3.1.2 gc.c; GC::INTERNAL_CONSTANTS and live checks on 3.1.7",
		.supported = 1,

		/* flags: mode:2, immediate_sweep, dont_gc, dont_incremental, during_gc,
		 * during_compacting (bit 6), gc_stressful, has_hook, during_minor_gc,
		 * during_incremental_marking (bit 10), measure_gc. */
		.os_flags = 16,
		.os_flags_mode_mask = 0x3,
		.os_flags_incremental = 1u << 10,
		.os_flags_compacting = 1u << 6,
		.os_flags_during_gc = 1u << 5,
		/* malloc_params 16, flags+hook_events 8, total_allocated_objects 24,
		 * next_object_id 32, size_pools[1] 40 (160 B), atomic_flags 200,
		 * mark_stack 208 (40 B), marked_slots 248, heap_pages 256. */
		.os_sorted = 256,
		.os_allocated_pages = 264,
		.sorted_darray_data = 0,
		/* profile at 336: ... count 440, total_freed_objects 448 */
		.os_gc_count = 440,
		.os_total_allocated = 24,
		.os_total_freed = 448,
		/* size_pools[1], 160 B each, slot_size at 0, no counters in it */
		.os_pools = 40,
		.pool_count = 1,
		.pool_size = 160,
		.pool_slot_size = 0,
		.pool_total_allocated = 0,
		.pool_total_freed = 0,

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

		.str_noembed = FL_USER(1),
		.str_shared = FL_USER(2),
		.str_nofree = FL_USER(18),
		.str_capa = 32,
		.ary_embed = FL_USER(1),
		.ary_shared = FL_USER(2),
		.ary_shared_root = FL_USER(5),
		.ary_len = 16,
		.ary_capa = 24,
		.obj_embed = FL_USER(1),
		.obj_numiv = 16,
		.hash_st_flag = FL_USER(3),
		.hash_tbl = 16,
		.hash_tbl_inline = 0,
		.ar_table_size = 128, /* 8 pairs of {key, value}; hints live in RHash */
		.st_size = 56,
		.st_bins = 24,
		.st_entry_size = 24,
		.st_max_power_no_bins = 4,
		.bignum_embed = FL_USER(2),
		.bignum_len = 16,
		.bdigit_size = 4, /* BDIGIT is unsigned int: memsize_of(2**1000) = 40 + 32 * 4 */
		.struct_embed_len_mask = FL_USER(1) | FL_USER(2),
		.struct_len = 16,
		.class_ext = 24,
		.classext_size = 112,
	},
#include "heap_layout_gen.h"
};

const struct heap_layout *heap_layout_for(const char *version)
{
	const struct heap_layout *hl = heap_layout_entry(version);

	return hl && hl->supported ? hl : NULL;
}

const struct heap_layout *heap_layout_entry(const char *version)
{
	size_t i;

	if (!version)
		return NULL;
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		size_t n = strlen(layouts[i].series);

		/* "3.1" matches "3.1" and "3.1.7", not "3.10". */
		if (!strncmp(version, layouts[i].series, n) &&
		    (version[n] == '\0' || version[n] == '.'))
			return &layouts[i];
	}
	return NULL;
}

bool heap_layout_ages_may_lag(const struct heap_layout *hl, uint32_t flags)
{
	uint32_t mode = flags & hl->os_flags_mode_mask; /* the mode is bits 0-1 */

	return mode == 1 || (flags & hl->os_flags_incremental) ||
	       (mode == 0 && (flags & hl->os_flags_during_gc));
}

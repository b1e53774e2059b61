/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a Ruby series keeps its object heap: gc.c's private rb_objspace_t and
 * struct heap_page, and the object flag bits the census reads.  libruby is
 * stripped, so none of this can be looked up at run time: every number comes
 * from the series' source and was checked against a live process (see the
 * table in heap_layout.c).  Adding a series is one more table entry,
 * generated from DWARF (scripts/gen-ruby-tables.sh); when the target's
 * libruby has DWARF, dwarf_layout.c fills this structure from it.
 *
 * Shape of the heap in every series so far: objspace->heap_pages.sorted is an
 * array of allocated_pages pointers to struct heap_page (malloc'ed, holding
 * the bitmaps); each page's objects live in a page_size-aligned "body" whose
 * first word points back to the struct heap_page, then total_slots slots of
 * slot_size bytes from page->start.  Mark bits are indexed by
 * (addr & (page_size - 1)) / bit_granule.
 */
#ifndef RBM_HEAP_LAYOUT_H
#define RBM_HEAP_LAYOUT_H
#include <stdbool.h>
#include <stdint.h>

struct heap_layout {
	const char *series;   /* "3.1": patch releases share the layout */
	const char *verified; /* patch releases checked against a live process */
	const char *source;   /* where the numbers come from */
	uint32_t supported;   /* 0: generated, no consumer reads it yet: heap_layout_for skips it */

	/* rb_objspace_t (vm->objspace) */
	uint32_t os_flags;	       /* the flags bitfield word (u32) */
	uint32_t os_flags_mode_mask;   /* flags.mode: 0 none, 1 marking, 2 sweeping */
	uint32_t os_flags_incremental; /* flags.during_incremental_marking */
	uint32_t os_flags_compacting;  /* flags.during_compacting */
	uint32_t os_flags_during_gc;   /* flags.during_gc: in gc_start, or a mark/sweep step */
	uint32_t os_sorted;	       /* heap_pages.sorted (struct heap_page **) */
	uint32_t os_allocated_pages;   /* heap_pages.allocated_pages (size_t): 3.4, cumulative */
	/*
	 * 3.4: heap_pages.sorted is an rb_darray: a pointer to {size_t size,
	 * capa; struct heap_page *data[]}, size being the page count; this is
	 * the offset of data.  0: a plain array of os_allocated_pages pointers.
	 */
	uint32_t sorted_darray_data;
	uint32_t os_gc_count;	       /* profile.count = GC.count */
	uint32_t os_total_allocated;   /* total_allocated_objects */
	uint32_t os_total_freed;       /* profile.total_freed_objects; 0: per pool only (3.2+) */
	/* size_pools[] (3.1-3.3) or heaps[] (3.4) */
	uint32_t os_pools;
	uint32_t pool_count;
	uint32_t pool_size;
	uint32_t pool_slot_size;       /* short */
	uint32_t pool_total_allocated; /* 0: none (3.1) */
	uint32_t pool_total_freed;     /* 0: none (3.1) */

	/* struct heap_page: the fields of the page's bookkeeping the census reads */
	uint32_t page_read_size;    /* bytes from the start that cover all fields below */
	uint32_t page_slot_size;    /* short */
	uint32_t page_total_slots;  /* short */
	uint32_t page_flags;	    /* u32 bitfield word */
	uint32_t page_before_sweep; /* bit in it: the page is still to be swept */
	uint32_t page_start;	    /* RVALUE *start: the first slot */
	uint32_t page_wb_unprotected_bits; /* bits_t wb_unprotected_bits[bitmap_words] */
	uint32_t page_mark_bits;    /* bits_t mark_bits[bitmap_words] */
	uint32_t page_age_bits;	    /* 0: age lives in the object flags (<= 3.2); else 2 bits
				     * per bit_granule, bitmap_words * 2 words */
	uint32_t bitmap_words;	    /* HEAP_PAGE_BITMAP_LIMIT */

	/* heap_page_body */
	uint32_t page_size;    /* HEAP_PAGE_SIZE: bodies are aligned to it */
	uint32_t bit_granule;  /* bytes per mark bit: sizeof(RVALUE) / BASE_SLOT_SIZE */
	uint32_t max_slots;    /* sanity bound on page->total_slots */
	uint32_t slot_size;    /* RVALUE size (smallest slot) */
	uint32_t max_slot_size;/* largest size pool's slot (== slot_size without RVARGC) */

	/* Object flags (RBasic.flags) */
	uint64_t fl_age_mask;	/* FL_PROMOTED0|1, when age is in the flags; 0 (3.2+): in the page */
	uint32_t fl_age_shift;
	uint32_t old_age;	/* RVALUE_OLD_AGE */
	uint32_t fl_exivar;	/* generic ivars elsewhere: not counted */

	/* Heap memory owned by common types, as ObjectSpace.memsize_of counts it */
	uint64_t str_noembed;	/* STR_NOEMBED */
	uint64_t str_shared;	/* STR_SHARED */
	uint64_t str_nofree;	/* STR_NOFREE */
	uint32_t str_capa;	/* as.heap.aux.capa */
	uint64_t ary_embed;	/* RARRAY_EMBED_FLAG */
	uint64_t ary_shared;	/* ELTS_SHARED */
	uint64_t ary_shared_root; /* RARRAY_SHARED_ROOT_FLAG: capa holds a refcount */
	uint32_t ary_len;	/* as.heap.len */
	uint32_t ary_capa;	/* as.heap.aux.capa */
	uint64_t obj_embed;	/* ROBJECT_EMBED */
	uint32_t obj_numiv;	/* as.heap.numiv (u32); 0: none (3.2+: the shape's capacity) */
	uint64_t hash_st_flag;	/* RHASH_ST_TABLE_FLAG */
	uint32_t hash_tbl;	/* as.st / as.ar: a pointer; with hash_tbl_inline, the table itself */
	uint32_t hash_tbl_inline; /* 3.3+: the ar/st table lies in the slot after struct RHash */
	uint32_t ar_table_size; /* sizeof(ar_table) */
	uint32_t st_size;	/* sizeof(st_table) */
	uint32_t st_bins;	/* st_table.bins (entry_power is byte 0) */
	uint32_t st_entry_size; /* sizeof(st_table_entry) */
	uint32_t st_max_power_no_bins; /* MAX_POWER2_FOR_TABLES_WITHOUT_BINS */
	uint64_t bignum_embed;	/* BIGNUM_EMBED_FLAG */
	uint32_t bignum_len;	/* as.heap.len (digits) */
	uint32_t bdigit_size;
	uint64_t struct_embed_len_mask; /* RSTRUCT_EMBED_LEN_MASK: 0 means on the heap */
	uint32_t struct_len;	/* as.heap.len */
	uint32_t class_ext;	/* RClass.ptr: rb_classext_t *; 0: inside the slot (3.3+) */
	uint32_t classext_size; /* malloc'ed per class/module (0: inside the slot) */
};

/* The entry for a version ("3.1.7") or series ("3.1") string, or NULL. */
const struct heap_layout *heap_layout_for(const char *version);
/* The table's entry for the series, supported or only generated; or NULL. */
const struct heap_layout *heap_layout_entry(const char *version);

/*
 * Whether objspace flags (the word at os_flags) say the GC that GC.count
 * already counts may not have aged every surviving object yet: it marks (or
 * its incremental marking waits for its next step), or it has started and
 * not marked yet.  gc_start sets during_gc, bumps the count, then sets the
 * mode to marking: in between, during_gc with mode none (live: a pass there
 * found objects of 3 GCs at age 2).  Once the mode is sweeping, ages are
 * final; during_gc with mode none after a sweep only makes this cautious.
 */
bool heap_layout_ages_may_lag(const struct heap_layout *hl, uint32_t flags);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-version knowledge of Ruby's internals, in one place.  Adding a Ruby
 * version is one table entry in ruby_versions.c plus its tests.
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

	/* struct RClass and rb_classext_t */
	uint32_t rclass_ext;
	uint32_t classext_iv_tbl;
	uint32_t classext_allocator;
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

	/* rb_vm_t -> rb_objspace_t, for GC.compact detection */
	uint32_t vm_objspace;
	uint32_t objspace_compact_count; /* 0: unknown for this version */
};

/* The entry for a version string such as "3.1.7", or NULL if unsupported. */
const struct ruby_offsets *ruby_offsets_for(const char *version);

/* Comma-separated series we support, for error messages. */
const char *ruby_supported_series(void);

#endif

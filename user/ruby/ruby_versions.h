/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What rbmemtrace knows of each Ruby version, in one place (ruby_versions.c):
 *   - the layout of each series (struct ruby_layout): 3.1 by hand, the
 *     others generated from DWARF (scripts/gen-ruby-tables.sh);
 *   - the fields a patch release moved within its series;
 *   - macro values for builds whose DWARF has no .debug_macro;
 *   - where each series allocates objects (the probes' entry points).
 * The generic readers use it: dwarf_layout.c (DWARF), layout_decode.c
 * (exported code), layout_proof.c (checks against the live process).
 *
 * Adding a series: HACKING.md, "A new Ruby".  A patch release that moved a
 * field: one line in patch_fields[] (ruby_versions.c), with how it was found.
 */
#ifndef RBM_RUBY_VERSIONS_H
#define RBM_RUBY_VERSIONS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ruby_layout.h"

/* Whether version ("3.1.7") is of series ("3.1"): "3.1" matches "3.1" and "3.1.7", not "3.10.0". */
bool ruby_in_series(const char *version, const char *series);

/*
 * The built-in layout of version: its series' entry with the fields its
 * patch release moved applied.  0, or -ENOENT when no series matches.
 */
int ruby_versions_layout(const char *version, struct ruby_layout *out);
/* The series' entry as the table holds it (no patch applied), or NULL. */
const struct ruby_layout *ruby_versions_entry(const char *version);
/* Comma-separated series with a built-in layout, for messages. */
const char *ruby_known_series(void);

/* A field a patch release moved, relative to its series' entry. */
struct ruby_patch_field {
	const char *series;
	unsigned int first_patch, last_patch; /* the patch levels (X.Y.first..last) it holds for */
	const char *field;		      /* a struct ruby_layout field */
	uint64_t value;
	const char *evidence; /* how it was found */
};
/* The patch table, for the tests; n set to its length. */
const struct ruby_patch_field *ruby_versions_patches(size_t *n);

/*
 * A macro's value in series, for DWARF without .debug_macro (-g, not -g3).
 * 0, or -ENOENT when the series has no default for it.
 */
int ruby_versions_macro_default(const char *series, const char *name, int64_t *value);

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
	 * GC.stat's total_allocated_objects and total_freed_objects count each
	 * object GC.compact moves once more (measured with GC.stat in the
	 * target: 3.4, not 3.1 nor 3.3): compared with what was traced, the
	 * moves are taken out (total_moved_objects).
	 */
	uint32_t counters_count_moves;
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

#endif

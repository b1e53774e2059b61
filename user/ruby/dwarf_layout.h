/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ruby's layout (struct ruby_layout) read from a
 * libruby's own DWARF, so that a build with debug info (ruby-build, Docker
 * images, a distro's debug file) needs no table entry, and so that the
 * built-in entries for stripped builds are generated from DWARF of our own
 * build of that version (rbm-gen-tables, scripts/gen-ruby-tables.sh).
 *
 * Every field comes from DWARF: member offsets and sizes by struct and
 * member name, enumerator values, array lengths, bit-field positions.  What C
 * keeps as macros comes from .debug_macro when the build has it (-g3;
 * ruby-build's default -ggdb3), else from a per-series default in
 * ruby_versions.c (an unknown series without -g3 is refused):
 *   STR_SHARED, STR_NOFREE, RARRAY_SHARED_FLAG, RARRAY_SHARED_ROOT_FLAG,
 *   BIGNUM_EMBED_FLAG, MAX_POWER2_FOR_TABLES_WITHOUT_BINS, RVALUE_OLD_AGE,
 *   BASE_SLOT_SIZE (3.4; sizeof(RVALUE) before), and HEAP_PAGE_SIZE /
 *   HEAP_PAGE_OBJ_LIMIT where gcc dropped the anonymous enum holding them.
 * Derived rather than read (rules that hold in 3.1-3.4, checked by tests):
 *   - max_slot_size = slot_size << (pool_count - 1) (gc.c: (1 << i) * BASE_SLOT_SIZE);
 *   - page_read_size = end of mark_bits, or of age_bits when the page has them;
 *   - fl_age_shift = lowest bit of RUBY_FL_PROMOTED0 (RVALUE_AGE_SHIFT);
 *   - with no RHash.as.st member (3.3+) the ar/st table lies inside the slot
 *     right after struct RHash (RHASH_AR_TABLE / RHASH_ST_TABLE, inline
 *     functions, so not in DWARF): hash_tbl = sizeof(struct RHash) and
 *     hash_tbl_inline = 1;
 *   - def->type is checked to be the low 4 bits of the definition's first word.
 *
 * Cost: only the CUs named in dwarf_layout.c are indexed (gc.c first), and
 * the compressed sections libdw does not need are not inflated: ~0.1-0.2 s
 * for libruby 3.4 on this machine (tests/unit/test_dwarf_layout.c prints it).
 */
#ifndef RBM_DWARF_LAYOUT_H
#define RBM_DWARF_LAYOUT_H
#include <stddef.h>
#include "dwarf_types.h"
#include "ruby_layout.h"

/*
 * Reads the layout from the DWARF of elf_path (a libruby, or a static
 * ruby), or of its separate debug file under root ("/" when NULL); version
 * ("3.4.5") picks the macro defaults when the DWARF has no macros.  Its
 * strings: series "dwarf", source saying so; from (may be NULL) gets the
 * file the DWARF was read from.  Returns 0, or -1 with the missing fields
 * in err.
 */
int dwarf_layout_read(const char *elf_path, const char *root, const char *version,
		      struct ruby_layout *out, char *from, size_t fromlen, char *err,
		      size_t errlen);

/* The same from DWARF already opened.  For tests and the generator. */
int dwarf_layout_from(struct dwarf_types *dt, const char *version, struct ruby_layout *out,
		      char *err, size_t errlen);

#endif

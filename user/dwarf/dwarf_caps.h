/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The dwarf layer's bounds on what a file's DWARF can make us inflate,
 * follow or expand: the file (a libruby, a debug file) may come from a
 * hostile container image.  One constant per bound, here; docs/caps.md
 * gives each one's cost at the bound and what happens when it is reached.
 */
#ifndef RBM_DWARF_CAPS_H
#define RBM_DWARF_CAPS_H

/* Bytes libdw may inflate from the compressed .debug_* sections it reads. */
#define DWARF_MAX_INFLATED (1ull << 30)
/* Hops through a type's DW_AT_type (an enum's underlying type) before giving up. */
#define DWARF_MAX_TYPE_DEPTH 16
/*
 * Anonymous members entered to find a member (each aggregate once on the way down), and the
 * member DIEs one path component may look at: Ruby's take at most 48 (3.3, 3.4); a crafted
 * one fans out as members^depth.
 */
#define DWARF_MAX_ANON_DEPTH 8
#define DWARF_MAX_MEMBERS_SEARCHED 4096
/*
 * Units a CU's imports (DW_TAG_imported_unit) lead to, each followed once: in dwz's output of
 * Ruby 3.3.8's and 3.4.5's libruby a CU reaches at most 725 (both in one dwz -m, 8 deep; 716
 * alone); a crafted unit imports one unit, or itself, over and over.
 */
#define DWARF_MAX_UNIT_IMPORTS 4096
/*
 * What indexing may keep and walk in one file, all its CUs together: each CU indexes the units
 * it imports on its own, so a unit every CU imports is walked and kept once a CU.  Entries are
 * the names and enumerators kept: Ruby 3.3.8's and 3.4.5's libruby, every CU indexed, keep at
 * most 46,931 (15,203 names, 31,728 enumerators; plain, dwz'd or both in one dwz -m).  Bytes
 * are those of .debug_info the walks cover, each unit's to its end: at most 11.2 MB (3.4.5's
 * whole .debug_info).  A crafted 153 KB file of 2000 CUs each importing one unit of 20000 types
 * kept 40 million names (955 MB, 4.5 s); 10000 CUs importing one struct of 50000 members
 * walked 1.5 GB (9.1 s).
 */
#define DWARF_MAX_INDEXED (1u << 20)
#define DWARF_MAX_INDEX_BYTES (256ull << 20)
/* DW_MACRO_import entries followed in one CU. */
#define DWARF_MAX_MACRO_IMPORTS 65536
/*
 * What reading .debug_macro may keep and read in one file, all its CUs together: each CU reads
 * and keeps its own copy of the units it imports (DW_MACRO_import), so a unit every CU imports
 * is read and kept once a CU.  Macros are the definitions kept: Ruby 3.3.8's and 3.4.5's
 * libruby, every CU read, keep at most 622,506 (574,866 in 3.3.8; the same after dwz, whose
 * -m moves them to the common file, not read).  Bytes are the entries read (each import, each
 * #define, #undef, start and end of a file) counted as DWARF_MACRO_ENTRY_BYTES each, and their
 * strings: at most 38.1 MB (834,528 entries, 24.7 MB of strings in 3.4.5).  libdw takes 40-70
 * ns an entry: the bound is 1.8 s of imports of an empty unit.  A crafted 395 KB file of
 * 2000 CUs sharing one unit of 20000 macros kept 40 million (956 MB, 4.7 s); 64 CUs
 * importing 64 times a unit of a million one-byte entries read 4 billion entries (198 s).
 */
#define DWARF_MAX_MACROS (1u << 22)
#define DWARF_MAX_MACRO_BYTES (512ull << 20)
#define DWARF_MACRO_ENTRY_BYTES 16
/* Macro expansions one constant expression may take (a macro used twice per level doubles). */
#define DWARF_MAX_MACRO_STEPS 100000
/*
 * Bytes of text one constant expression may evaluate, its macros' bodies each time they are
 * expanded: a crafted body of 64 KB expanded DWARF_MAX_MACRO_STEPS times is 6.5 GB to scan.
 * Ruby's take at most 132 (3.3.8 and 3.4.5 ruby-build, every expression a census evaluates).
 */
#define DWARF_MAX_MACRO_TEXT (1ull << 20)

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside struct dwarf_types: shared by dwarf_open.c (files, CUs, their
 * units), dwarf_index.c (a CU's index), dwarf_types.c (types, enumerators),
 * dwarf_macros.c (macros) and dwarf_cexpr.c (constant expressions).  Not
 * for other callers.
 */
#ifndef RBM_DWARF_TYPES_IMPL_H
#define RBM_DWARF_TYPES_IMPL_H
#include <stdbool.h>
#include <elfutils/libdw.h>
#include "dwarf_types.h"
#include "u64map.h"

enum dt_kind { DT_STRUCT, DT_UNION, DT_ENUM, DT_TYPEDEF, DT_BASE };

struct dt_name {
	const char *name; /* in libdw's string sections: lives as long as the Dwarf */
	Dwarf_Off off;
	int kind;
};

struct dt_enumerator {
	const char *name;
	int64_t value;
};

struct dt_macro {
	const char *def; /* "NAME body" or "NAME(params) body", in libdw's string data */
	size_t namelen;
	size_t seq; /* definition order: the last one wins */
};

struct dt_cu {
	Dwarf_Off die_off;
	const char *name;
	bool indexed;
	struct dt_name *names;
	size_t nnames, capnames;
	struct dt_enumerator *enums;
	size_t nenums, capenums;
	bool macros_read;
	bool has_macros;
	struct dt_macro *macros; /* sorted by name; last definition wins */
	size_t nmacros, capmacros;
};

struct dwarf_types {
	int fd;
	void *elf; /* Elf * */
	Dwarf *dbg;
	char file[4096];
	char origin[1024]; /* the debuginfod URL the debug file came from; "" if local */
	struct dt_cu *cus;
	size_t ncus;
	size_t *use; /* indexes into cus, in search order */
	size_t nuse;
	/* What indexing may still keep (names, enumerators) and walk (bytes), all CUs together */
	uint32_t index_entries_left;
	uint64_t index_bytes_left;
	/*
	 * What reading macros may still keep and read, all CUs together (dwarf_macros.c); once
	 * spent, macros_cut: no macro is found any more, in any CU.
	 */
	uint32_t macros_left;
	uint64_t macro_bytes_left;
	bool macros_cut;
	bool no_macros;
	uint32_t macro_steps; /* expansions the expression being evaluated took (dt_eval) */
	uint64_t macro_text;  /* bytes of text it evaluated, its macros' bodies included */
};

/*
 * The units whose top-level DIEs are a CU's (dwarf_open.c): its own, then those it imports
 * (DW_TAG_imported_unit: dwz's partial units, which import others) in the order they are met,
 * each once, DWARF_MAX_UNIT_IMPORTS imports at most: past it, no more are added.
 */
struct dt_units {
	struct dwarf_types *dt;
	Dwarf_Die *die;
	size_t n, cap;
	struct u64map seen; /* a unit's DIE offset, its top bit set in the alt file (dwz -m) */
};
/* u with cu's own DIE; 0 or -1. */
int dt_units_start(struct dwarf_types *dt, const struct dt_cu *cu, struct dt_units *u);
/* Adds the unit a DW_TAG_imported_unit DIE names, if new and under the cap; 0 or -1 (memory). */
int dt_units_import(struct dt_units *u, Dwarf_Die *import);
void dt_units_free(struct dt_units *u);
/* The bytes of .debug_info (or the alt file's) from a unit's DIE to the end of its unit. */
uint64_t dt_unit_bytes(Dwarf_Die *unit);
/*
 * Indexes cu's top-level DIEs (and its units') if not done yet, within what the file's budget
 * has left (dwarf_caps.h): once it is spent, nothing more is indexed.  0 or -1 (memory).
 */
int dt_index_cu(struct dwarf_types *dt, struct dt_cu *cu);
/* The first of cu's index entries for name of kind, or NULL (cu indexed). */
const struct dt_name *dt_cu_find_name(const struct dt_cu *cu, const char *name, int kind);
/* An enumerator of cu named name, or NULL (cu indexed). */
const struct dt_enumerator *dt_cu_find_enum(const struct dt_cu *cu, const char *name);
/* Whether type is a signed integer, after typedefs and an enum's underlying type. */
bool dt_type_is_signed(Dwarf_Die *type);
/* Reads cu's macros if not done yet (dwarf_macros.c). */
void dt_read_macros(struct dwarf_types *dt, struct dt_cu *cu);
void dt_free_macros(struct dt_cu *cu);
/* The last definition of name[0..len) in the searched CUs, or NULL. */
const struct dt_macro *dt_find_macro(struct dwarf_types *dt, const char *name, size_t len);
/* Evaluates a C constant expression (dwarf_cexpr.c); 0 or -1. */
int dt_eval(struct dwarf_types *dt, const char *text, size_t len, int64_t *value);
/* Size and signedness of a type named as in C ("unsigned long", "VALUE"); 0 or -1. */
int dt_type_info(struct dwarf_types *dt, const char *type, uint64_t *size, bool *is_signed);

#endif

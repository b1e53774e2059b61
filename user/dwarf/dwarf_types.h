/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * C type layouts from an ELF file's DWARF (elfutils' libdw): struct and
 * union member offsets, sizes, bit-fields, array lengths, enumerator values,
 * and macro definitions when the file was built with -g3.  Generic: knows
 * nothing of Ruby (dwarf_layout.c does).
 *
 * Why it indexes lazily, one compile unit at a time: libruby's DWARF holds
 * ~150 CUs and millions of DIEs; a caller names the few CUs it needs
 * (dwarf_types_use_cus), and only their top-level DIEs are indexed, on
 * first use.
 */
#ifndef RBM_DWARF_TYPES_H
#define RBM_DWARF_TYPES_H
#include <stddef.h>
#include <stdint.h>

struct dwarf_types;

/*
 * Opens path's DWARF.  When path has no .debug_info, looks for a separate
 * debug file by build-id (ROOT/usr/lib/debug/.build-id/xx/rest.debug) and by
 * .gnu_debuglink (next to path, in .debug/, in ROOT/usr/lib/debug/DIR/),
 * then from debuginfod by build-id when a server is configured
 * (process/debuginfod.h); root may be NULL ("/").  Returns 0, or -1 with a
 * message in err.
 */
int dwarf_types_open(const char *path, const char *root, struct dwarf_types **out, char *err,
		     size_t errlen);
void dwarf_types_close(struct dwarf_types *dt);
/* The file the DWARF was read from (path itself or its debug file). */
const char *dwarf_types_file(const struct dwarf_types *dt);
/* Where that file came from when it was fetched: the debuginfod URL; "" if local. */
const char *dwarf_types_origin(const struct dwarf_types *dt);

/*
 * Restricts lookups to the CUs with these names (DW_AT_name equal to a name
 * or ending in "/name"), searched in this order; a NULL-terminated list.
 * NULL: every CU, in file order.  Returns how many of the names were found.
 */
int dwarf_types_use_cus(struct dwarf_types *dt, const char *const *names);

struct dwarf_field {
	uint64_t
	    offset;    /* bytes from the start of the outer type; bit-fields: their storage unit */
	uint64_t size; /* bytes of the member's type (bit-fields: of the storage unit) */
	uint32_t bit_offset; /* bit-fields: first bit in the unit, from its least significant bit */
	uint32_t bit_size;   /* bit-fields: width; 0 for a whole member */
	uint64_t count;	     /* arrays: elements (0: flexible or not an array) */
	uint64_t elem_size;  /* arrays: bytes per element */
	int is_pointer;	     /* the member is a pointer */
	int is_signed;	     /* the member is a signed integer (after typedefs) */
};

/*
 * Size of a type: "struct NAME", "union NAME", "enum NAME", or a typedef or
 * base type name ("rb_vm_t", "unsigned long").  0 or -1 (not found).
 */
int dwarf_type_size(struct dwarf_types *dt, const char *type, uint64_t *size);

/*
 * A member of type by path: "a.b.c" walks nested members (members of
 * anonymous structs and unions are found as if they were the outer type's),
 * "a[2].b" indexes an array, "a->b" follows a pointer: offsets then count
 * from the pointee.  0 or -1 (type or member not found).
 */
int dwarf_member(struct dwarf_types *dt, const char *type, const char *path, struct dwarf_field *f);

/*
 * The names of type's direct members, in order ("" for anonymous ones), up
 * to max of them.  Returns how many, or -1 (type not found).
 */
int dwarf_member_names(struct dwarf_types *dt, const char *type, const char **names, size_t max);

/* The value of an enumerator (of any enum, named or not).  0 or -1. */
int dwarf_enumerator(struct dwarf_types *dt, const char *name, int64_t *value);

/*
 * The value of an integer macro or enumerator, evaluating the macro's
 * definition from .debug_macro (gcc -g3): integer literals, other macros
 * (function-like ones included), enumerators, casts, sizeof of a type,
 * unary and binary arithmetic, ?:.  The macro is taken as defined at the end
 * of the CUs searched.  0, -1 (unknown or not a constant), or -2 (the
 * DWARF has no macro information at all: built without -g3).
 */
int dwarf_constant(struct dwarf_types *dt, const char *name, int64_t *value);
/* Whether the searched CUs have macro information. */
int dwarf_types_has_macros(struct dwarf_types *dt);
/* Acts as if the file had no macro information (a -g build): for tests. */
void dwarf_types_ignore_macros(struct dwarf_types *dt);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A CU's index: the names and enumerators of its top-level DIEs and of the units it imports,
 * sorted for dwarf_types.c's lookups, within one budget for the whole file (dwarf_caps.h).
 *
 * Why one budget for the file: each CU indexes the units it imports on its own, so a unit that
 * every CU imports is walked and kept once a CU (a crafted 153 KB file of 2000 CUs each
 * importing one unit of 20000 types kept 40 million names: 955 MB).  An index shared by the
 * CUs that import a unit would keep it once, but each CU would still follow its imports, and
 * a lookup in every CU search each CU's units: the fan-out moves to the lookups.  The budget
 * bounds the walks and what they keep, whatever the file's shape.
 */
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "sort.h"
#include "dwarf_types_impl.h"

/* Past the budget nothing more is indexed, in this CU or any other. */
static int budget_spent(struct dwarf_types *dt)
{
	dt->index_entries_left = 0;
	dt->index_bytes_left = 0;
	return 1;
}

/* Entries are names and enumerators: 0, 1 (the budget is spent: stop) or -1 (memory). */
static int add_name(struct dwarf_types *dt, struct dt_cu *cu, const char *name, Dwarf_Off off,
		    int kind)
{
	if (!dt->index_entries_left)
		return budget_spent(dt);
	if (cu->nnames == cu->capnames) {
		size_t cap = cu->capnames ? 2 * cu->capnames : 1024;
		struct dt_name *p = realloc(cu->names, cap * sizeof(*p));

		if (!p)
			return -1;
		cu->names = p;
		cu->capnames = cap;
	}
	cu->names[cu->nnames++] = (struct dt_name){name, off, kind};
	dt->index_entries_left--;
	return 0;
}

/* An enumerator's value: its bits as stored, sign-extended when the enum is signed. */
static int enumerator_value(Dwarf_Die *e, bool is_signed, int64_t *v)
{
	Dwarf_Attribute a;
	Dwarf_Word u;
	Dwarf_Sword s;

	if (!dwarf_attr(e, DW_AT_const_value, &a))
		return -1;
	switch (dwarf_whatform(&a)) {
	case DW_FORM_sdata:
		if (dwarf_formsdata(&a, &s))
			return -1;
		*v = s;
		return 0;
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4: {
		int bits = dwarf_whatform(&a) == DW_FORM_data1	 ? 8
			   : dwarf_whatform(&a) == DW_FORM_data2 ? 16
								 : 32;

		if (dwarf_formudata(&a, &u))
			return -1;
		u &= (1ULL << bits) - 1;
		if (is_signed && (u >> (bits - 1)) & 1)
			u |= ~0ULL << bits;
		*v = (int64_t) u;
		return 0;
	}
	default:
		if (dwarf_formudata(&a, &u))
			return -1;
		*v = (int64_t) u;
		return 0;
	}
}

/* 0, 1 (the budget is spent) or -1 (memory). */
static int add_enumerators(struct dwarf_types *dt, struct dt_cu *cu, Dwarf_Die *type)
{
	Dwarf_Die child;
	Dwarf_Attribute a;
	Dwarf_Die under;
	bool is_signed = dwarf_attr_integrate(type, DW_AT_type, &a) &&
			 dwarf_formref_die(&a, &under) && dt_type_is_signed(&under);

	if (dwarf_child(type, &child))
		return 0;
	do {
		const char *name = dwarf_diename(&child);
		int64_t v;

		if (dwarf_tag(&child) != DW_TAG_enumerator || !name ||
		    enumerator_value(&child, is_signed, &v))
			continue;
		if (!dt->index_entries_left)
			return budget_spent(dt);
		if (cu->nenums == cu->capenums) {
			size_t cap = cu->capenums ? 2 * cu->capenums : 1024;
			struct dt_enumerator *p = realloc(cu->enums, cap * sizeof(*p));

			if (!p)
				return -1;
			cu->enums = p;
			cu->capenums = cap;
		}
		cu->enums[cu->nenums++] = (struct dt_enumerator){name, v};
		dt->index_entries_left--;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	const struct dt_name *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->kind - y->kind;
}

static int cmp_enum(const void *a, const void *b)
{
	return strcmp(((const struct dt_enumerator *) a)->name,
		      ((const struct dt_enumerator *) b)->name);
}

static int tag_kind(int tag)
{
	switch (tag) {
	case DW_TAG_structure_type:
		return DT_STRUCT;
	case DW_TAG_union_type:
		return DT_UNION;
	case DW_TAG_enumeration_type:
		return DT_ENUM;
	case DW_TAG_typedef:
		return DT_TYPEDEF;
	case DW_TAG_base_type:
		return DT_BASE;
	default:
		return -1;
	}
}

/*
 * Unit i's top-level DIEs, its bytes taken from the budget first (the walk passes over every
 * DIE of the unit, a type's children included): 0, 1 (the budget is spent) or -1 (memory).
 */
static int index_children(struct dwarf_types *dt, struct dt_cu *cu, struct dt_units *units,
			  size_t i)
{
	uint64_t bytes = dt_unit_bytes(&units->die[i]);
	Dwarf_Die child;
	int ret;

	if (bytes > dt->index_bytes_left)
		return budget_spent(dt);
	dt->index_bytes_left -= bytes;
	if (dwarf_child(&units->die[i], &child)) /* an import added moves units->die */
		return 0;
	do {
		const char *name = dwarf_diename(&child);
		int tag = dwarf_tag(&child), kind = tag_kind(tag);

		if (tag == DW_TAG_imported_unit) { /* dwz's partial units (Debian's -dbgsym files) */
			if (dt_units_import(units, &child))
				return -1;
			continue;
		}
		if (kind == DT_ENUM && (ret = add_enumerators(dt, cu, &child)))
			return ret;
		if (kind >= 0 && name && (ret = add_name(dt, cu, name, dwarf_dieoffset(&child), kind)))
			return ret;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

int dt_index_cu(struct dwarf_types *dt, struct dt_cu *cu)
{
	struct dt_units units;
	size_t i;
	int ret = 0;

	if (cu->indexed)
		return 0;
	cu->indexed = true;
	if (!dt->index_bytes_left)
		return 0;
	if (dt_units_start(dt, cu, &units))
		return -1;
	for (i = 0; i < units.n && !ret; i++)
		ret = index_children(dt, cu, &units, i);
	dt_units_free(&units);
	if (ret < 0)
		return -1;
	sort_array(cu->names, cu->nnames, sizeof(*cu->names), cmp_name);
	sort_array(cu->enums, cu->nenums, sizeof(*cu->enums), cmp_enum);
	return 0;
}

const struct dt_name *dt_cu_find_name(const struct dt_cu *cu, const char *name, int kind)
{
	struct dt_name key = {name, 0, kind};
	const struct dt_name *e = search_array(&key, cu->names, cu->nnames, sizeof(key), cmp_name);

	/* bsearch finds one of equal keys: the first of them */
	while (e && e > cu->names && !cmp_name(e - 1, e))
		e--;
	return e;
}

const struct dt_enumerator *dt_cu_find_enum(const struct dt_cu *cu, const char *name)
{
	struct dt_enumerator key = {name, 0};

	return search_array(&key, cu->enums, cu->nenums, sizeof(key), cmp_enum);
}

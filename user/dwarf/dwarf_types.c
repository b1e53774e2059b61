// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Types, members and enumerators, looked up in each searched CU's index (dwarf_index.c). */
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "dwarf_types_impl.h"
#include "dwarf_caps.h"

/* depth: an enum's underlying type is followed that far (a crafted one may be itself) */
static bool type_is_signed(Dwarf_Die *type, int depth)
{
	Dwarf_Die peeled, under;
	Dwarf_Attribute a;
	Dwarf_Word enc;

	if (depth > DWARF_MAX_TYPE_DEPTH || dwarf_peel_type(type, &peeled))
		return false;
	if (dwarf_tag(&peeled) == DW_TAG_enumeration_type) {
		if (!dwarf_attr_integrate(&peeled, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, &under))
			return false;
		return type_is_signed(&under, depth + 1);
	}
	if (dwarf_tag(&peeled) != DW_TAG_base_type ||
	    !dwarf_attr_integrate(&peeled, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc))
		return false;
	return enc == DW_ATE_signed || enc == DW_ATE_signed_char;
}

bool dt_type_is_signed(Dwarf_Die *type)
{
	return type_is_signed(type, 0);
}

/* A complete definition of "struct|union|enum NAME", or the typedef or base type NAME. */
static int find_named(struct dwarf_types *dt, const char *name, int kind, bool all_cus,
		      Dwarf_Die *out)
{
	size_t i, n = all_cus ? dt->ncus : dt->nuse;

	for (i = 0; i < n; i++) {
		struct dt_cu *cu = &dt->cus[all_cus ? i : dt->use[i]];
		const struct dt_name *e;

		if (dt_index_cu(dt, cu))
			return -1;
		/* a name may be declared and defined: look at each entry for a definition */
		e = dt_cu_find_name(cu, name, kind);
		for (; e && e < cu->names + cu->nnames && !strcmp(e->name, name) && e->kind == kind;
		     e++) {
			if (dwarf_offdie(dt->dbg, e->off, out) &&
			    !dwarf_hasattr(out, DW_AT_declaration))
				return 0;
		}
	}
	return -1;
}

/* Typedefs and qualifiers stripped, a declaration replaced by its definition. */
static int complete_type(struct dwarf_types *dt, Dwarf_Die *type, Dwarf_Die *out)
{
	const char *name;
	int tag, kind;

	if (dwarf_peel_type(type, out))
		return -1;
	if (!dwarf_hasattr(out, DW_AT_declaration))
		return 0;
	name = dwarf_diename(out);
	tag = dwarf_tag(out);
	kind = tag == DW_TAG_structure_type ? DT_STRUCT
	       : tag == DW_TAG_union_type   ? DT_UNION
					    : DT_ENUM;
	if (!name)
		return -1;
	if (find_named(dt, name, kind, false, out) == 0)
		return 0;
	return find_named(dt, name, kind, true, out);
}

static int lookup_type(struct dwarf_types *dt, const char *type, Dwarf_Die *out)
{
	static const struct {
		const char *prefix;
		int kind;
	} kw[] = {{"struct ", DT_STRUCT}, {"union ", DT_UNION}, {"enum ", DT_ENUM}};
	Dwarf_Die die;
	size_t i;

	for (i = 0; i < sizeof(kw) / sizeof(kw[0]); i++) {
		size_t n = strlen(kw[i].prefix);

		if (!strncmp(type, kw[i].prefix, n)) {
			if (find_named(dt, type + n, kw[i].kind, false, out) &&
			    find_named(dt, type + n, kw[i].kind, true, out))
				return -1;
			return 0;
		}
	}
	if (find_named(dt, type, DT_TYPEDEF, false, &die) &&
	    find_named(dt, type, DT_BASE, false, &die))
		return -1;
	return complete_type(dt, &die, out);
}

int dwarf_type_size(struct dwarf_types *dt, const char *type, uint64_t *size)
{
	Dwarf_Die die;
	Dwarf_Word w;

	if (lookup_type(dt, type, &die) || dwarf_aggregate_size(&die, &w))
		return -1;
	*size = w;
	return 0;
}

static int member_location(Dwarf_Die *m, uint64_t *bytes)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	Dwarf_Word w;

	*bytes = 0;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a))
		return 0; /* union members */
	if (dwarf_formudata(&a, &w) == 0) {
		*bytes = w;
		return 0;
	}
	if (dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 &&
	    ops[0].atom == DW_OP_plus_uconst) {
		*bytes = ops[0].number;
		return 0;
	}
	return -1;
}

/* Bit position of member m in its parent, and its bit width (0: not a bit-field). */
static int member_bits(Dwarf_Die *m, uint64_t *bitpos, uint32_t *bitsize)
{
	Dwarf_Attribute a;
	Dwarf_Word w, size, boff;
	uint64_t loc;

	*bitsize = 0;
	if (dwarf_attr(m, DW_AT_data_bit_offset, &a)) {
		if (dwarf_formudata(&a, &w))
			return -1;
		*bitpos = w;
		if (dwarf_attr(m, DW_AT_bit_size, &a) && dwarf_formudata(&a, &w) == 0)
			*bitsize = (uint32_t) w;
		return 0;
	}
	if (member_location(m, &loc))
		return -1;
	*bitpos = loc * 8;
	if (!dwarf_attr(m, DW_AT_bit_size, &a) || dwarf_formudata(&a, &w))
		return 0;
	*bitsize = (uint32_t) w;
	/* DWARF 2/3: DW_AT_bit_offset counts from the most significant bit of the unit */
	if (dwarf_attr(m, DW_AT_bit_offset, &a) && dwarf_formudata(&a, &boff) == 0) {
		if (!(dwarf_attr(m, DW_AT_byte_size, &a) && dwarf_formudata(&a, &size) == 0))
			size = 0;
		if (!size) {
			Dwarf_Die t;

			if (!dwarf_attr_integrate(m, DW_AT_type, &a) ||
			    !dwarf_formref_die(&a, &t) || dwarf_aggregate_size(&t, &size))
				return -1;
		}
		*bitpos = loc * 8 + size * 8 - boff - w;
	}
	return 0;
}

/*
 * A member searched for through anonymous members: the aggregates the search is inside (a
 * crafted anonymous member may be of its own struct: entered again, it added its offset once a
 * level), and the member DIEs looked at (14 such members, each its own struct, took hours).
 */
struct member_search {
	Dwarf_Off inside[DWARF_MAX_ANON_DEPTH + 1];
	uint32_t looked_at;
};

static bool search_is_inside(const struct member_search *s, int depth, Dwarf_Off agg)
{
	while (depth >= 0 && s->inside[depth] != agg)
		depth--;
	return depth >= 0;
}

/* Finds member name in struct/union die, searching anonymous members too. */
static int find_member(struct dwarf_types *dt, Dwarf_Die *agg, const char *name, uint64_t *bitpos,
		       uint32_t *bitsize, Dwarf_Die *mtype, struct member_search *s, int depth)
{
	Dwarf_Die child, t, inner;
	Dwarf_Attribute a;

	if (depth > DWARF_MAX_ANON_DEPTH || dwarf_child(agg, &child))
		return -1;
	s->inside[depth] = dwarf_dieoffset(agg);
	do {
		const char *mname;
		uint64_t pos, sub;
		uint32_t bits;

		if (++s->looked_at > DWARF_MAX_MEMBERS_SEARCHED)
			return -1;
		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		mname = dwarf_diename(&child);
		if (!dwarf_attr_integrate(&child, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
			continue;
		if (mname && strcmp(mname, name))
			continue;
		if (member_bits(&child, &pos, &bits))
			return -1;
		if (mname) {
			*bitpos = pos;
			*bitsize = bits;
			*mtype = t;
			return 0;
		}
		if (complete_type(dt, &t, &inner) ||
		    (dwarf_tag(&inner) != DW_TAG_structure_type &&
		     dwarf_tag(&inner) != DW_TAG_union_type) ||
		    search_is_inside(s, depth, dwarf_dieoffset(&inner)))
			continue;
		if (find_member(dt, &inner, name, &sub, bitsize, mtype, s, depth + 1) == 0) {
			*bitpos = pos + sub;
			return 0;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return -1;
}

static int array_info(Dwarf_Die *arr, uint64_t *count, uint64_t *elem_size)
{
	Dwarf_Die sub, elem;
	Dwarf_Attribute a;
	Dwarf_Word w, total;
	Dwarf_Sword s;

	*count = 0;
	if (dwarf_child(arr, &sub) == 0 && dwarf_tag(&sub) == DW_TAG_subrange_type) {
		if (dwarf_attr(&sub, DW_AT_count, &a) && dwarf_formudata(&a, &w) == 0)
			*count = w;
		else if (dwarf_attr(&sub, DW_AT_upper_bound, &a) && dwarf_formsdata(&a, &s) == 0 &&
			 s >= 0)
			*count = (uint64_t) s + 1;
	}
	if (*count && dwarf_aggregate_size(arr, &total) == 0) {
		*elem_size = total / *count;
		return 0;
	}
	if (!dwarf_attr_integrate(arr, DW_AT_type, &a) || !dwarf_formref_die(&a, &elem) ||
	    dwarf_aggregate_size(&elem, &w))
		return -1;
	*elem_size = w;
	return 0;
}

/* "[i]..." at *p, after a member whose complete type is *peeled: each index steps in. */
static int index_steps(struct dwarf_types *dt, const char **p, Dwarf_Die *peeled, Dwarf_Die *mtype,
		       uint64_t *bitpos, uint32_t *bitsize)
{
	uint64_t count, elem;

	while (**p == '[') {
		char *end;
		unsigned long idx = strtoul(*p + 1, &end, 10);
		Dwarf_Attribute a;

		/* one dimension: the element type of a[i][j] is not a row */
		if (*end != ']' || dwarf_tag(peeled) != DW_TAG_array_type ||
		    array_info(peeled, &count, &elem) ||
		    !dwarf_attr_integrate(peeled, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, mtype) || complete_type(dt, mtype, peeled))
			return -1;
		*bitpos += idx * elem * 8;
		*bitsize = 0;
		*p = end + 1;
	}
	return 0;
}

/* f from the last member's type and where the path put it. */
static int field_of(struct dwarf_types *dt, Dwarf_Die *mtype, uint64_t bitpos, uint32_t bitsize,
		    struct dwarf_field *f)
{
	Dwarf_Die peeled;
	uint64_t count, elem, size;
	Dwarf_Word w;

	if (complete_type(dt, mtype, &peeled))
		return -1;
	if (dwarf_aggregate_size(&peeled, &w))
		w = 0; /* a flexible array member */
	size = w;
	f->size = size;
	if (dwarf_tag(&peeled) == DW_TAG_array_type) {
		if (array_info(&peeled, &count, &elem))
			return -1;
		f->count = count;
		f->elem_size = elem;
	}
	f->is_pointer = dwarf_tag(&peeled) == DW_TAG_pointer_type;
	f->is_signed = type_is_signed(mtype, 0);
	if (bitsize && size) {
		/*
		 * Readers take the unit as one word and shift by these: a bit-field
		 * wider than its unit, or across its end, is no field they can read.
		 */
		if (size > 16 || bitsize > size * 8)
			return -1;
		f->offset = bitpos / (size * 8) * size;
		f->bit_offset = (uint32_t) (bitpos - f->offset * 8);
		f->bit_size = bitsize;
		if (f->bit_offset + bitsize > size * 8)
			return -1;
	} else {
		f->offset = bitpos / 8;
	}
	return 0;
}

int dwarf_member(struct dwarf_types *dt, const char *type, const char *path, struct dwarf_field *f)
{
	Dwarf_Die cur, mtype, peeled;
	struct member_search search;
	uint64_t bitpos = 0;
	uint32_t bitsize = 0;
	const char *p = path;

	memset(f, 0, sizeof(*f));
	if (lookup_type(dt, type, &cur))
		return -1;
	mtype = cur;
	while (*p) {
		char name[128];
		size_t n = strcspn(p, ".-[");
		uint64_t pos;

		if (n == 0 || n >= sizeof(name))
			return -1;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (dwarf_tag(&cur) != DW_TAG_structure_type &&
		    dwarf_tag(&cur) != DW_TAG_union_type)
			return -1;
		search.looked_at = 0;
		if (find_member(dt, &cur, name, &pos, &bitsize, &mtype, &search, 0))
			return -1;
		bitpos += pos;
		if (complete_type(dt, &mtype, &peeled) ||
		    index_steps(dt, &p, &peeled, &mtype, &bitpos, &bitsize))
			return -1;
		if (*p == '.') {
			p++;
			cur = peeled;
		} else if (p[0] == '-' && p[1] == '>') {
			Dwarf_Attribute a;

			if (dwarf_tag(&peeled) != DW_TAG_pointer_type ||
			    !dwarf_attr_integrate(&peeled, DW_AT_type, &a) ||
			    !dwarf_formref_die(&a, &mtype) || complete_type(dt, &mtype, &cur))
				return -1;
			bitpos = 0;
			p += 2;
		} else if (*p) {
			return -1;
		}
	}
	if (p == path)
		return -1;
	return field_of(dt, &mtype, bitpos, bitsize, f);
}

int dwarf_enumerator(struct dwarf_types *dt, const char *name, int64_t *value)
{
	const struct dt_enumerator *e;
	size_t i;

	for (i = 0; i < dt->nuse; i++) {
		struct dt_cu *cu = &dt->cus[dt->use[i]];

		if (dt_index_cu(dt, cu))
			return -1;
		e = dt_cu_find_enum(cu, name);
		if (e) {
			*value = e->value;
			return 0;
		}
	}
	return -1;
}

int dt_type_info(struct dwarf_types *dt, const char *type, uint64_t *size, bool *is_signed)
{
	Dwarf_Die die;
	Dwarf_Word w;

	if (lookup_type(dt, type, &die) || dwarf_aggregate_size(&die, &w))
		return -1;
	*size = w;
	*is_signed = type_is_signed(&die, 0);
	return 0;
}

int dwarf_member_names(struct dwarf_types *dt, const char *type, const char **names, size_t max)
{
	Dwarf_Die die, child;
	size_t n = 0;

	if (lookup_type(dt, type, &die))
		return -1;
	if (dwarf_child(&die, &child))
		return 0;
	do {
		const char *name;

		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		name = dwarf_diename(&child);
		if (n < max)
			names[n] = name ? name : "";
		n++;
	} while (dwarf_siblingof(&child, &child) == 0);
	return (int) (n < max ? n : max);
}

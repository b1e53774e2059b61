// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Macros from .debug_macro (gcc/clang -g3; ruby-build's default -ggdb3):
 * what C keeps as macros (Ruby's STR_SHARED, HEAP_PAGE_SIZE, RVALUE_OLD_AGE...)
 * is found here and evaluated by dwarf_cexpr.c.  The last definition in the
 * CU wins and #undef is ignored.
 *
 * Each CU reads and keeps its own copy of the units it imports (DW_MACRO_import:
 * gcc's units of a header's macros, shared by the CUs that include it), so a
 * unit every CU imports is read once a CU.  What the CUs keep and read is one
 * budget for the file (dwarf_caps.h), as indexing's: once it is spent, no
 * macro is found in any CU, since any of them may lack its last definitions;
 * the caller's tables serve.  Sharing one read of a unit would keep it once,
 * but not bound the reading (a CU may import one unit 65536 times) nor what a
 * CU's lookup must then search, unit by unit, for the last definition.
 */
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include "sort.h"
#include "dwarf_types_impl.h"
#include "dwarf_caps.h"

struct macro_read {
	struct dwarf_types *dt;
	struct dt_cu *cu;
	int depth;
	uint32_t imports;	   /* DW_MACRO_import followed: a unit may import one many times */
	uint64_t str_offsets_base; /* the CU's DW_AT_str_offsets_base */
	/* the sections, found once a CU: .debug_macro, .debug_str_offsets, .debug_str */
	Elf_Data *macro, *offs, *strs;
};

static Elf_Data *section_data(Elf *elf, const char *want)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, want))
			return elf_getdata(scn, NULL); /* libdw inflated it already if compressed */
	}
	return NULL;
}

/*
 * DW_MACRO_define_strx (clang's DWARF 5): libdw 0.188 cannot resolve the
 * string index without the CU, so resolve it here: index -> 32-bit offset in
 * .debug_str_offsets (from the CU's base) -> .debug_str.
 */
static const char *strx_string(struct macro_read *r, Dwarf_Macro *m)
{
	Dwarf_Attribute a;
	Elf_Data *offs, *strs;
	const unsigned char *p;
	uint64_t idx = 0, at;
	uint32_t off;
	int shift = 0;

	if (dwarf_macro_param(m, 1, &a) || !a.valp)
		return NULL;
	p = a.valp;
	switch (a.form) {
	case DW_FORM_strx1:
		idx = p[0];
		break;
	case DW_FORM_strx2:
		idx = p[0] | (uint64_t) p[1] << 8;
		break;
	case DW_FORM_strx3:
		idx = p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16;
		break;
	case DW_FORM_strx4:
		idx = p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16 | (uint64_t) p[3] << 24;
		break;
	case DW_FORM_strx:
		do
			idx |= (uint64_t) (*p & 0x7f) << shift, shift += 7;
		while (*p++ & 0x80 && shift < 64);
		break;
	default:
		return NULL;
	}
	offs = r->offs;
	strs = r->strs;
	/* Base and index are the file's: the sum must not wrap past the check. */
	if (!offs || !strs || r->str_offsets_base > offs->d_size ||
	    idx >= (offs->d_size - r->str_offsets_base) / 4)
		return NULL;
	at = r->str_offsets_base + idx * 4;
	memcpy(&off, (const char *) offs->d_buf + at, 4);
	if (off >= strs->d_size || !memchr((const char *) strs->d_buf + off, 0, strs->d_size - off))
		return NULL;
	return (const char *) strs->d_buf + off;
}

/*
 * elfutils 0.188's libdw writes past a buffer on its stack when it reads a
 * .debug_macro unit whose header has an opcode operands table of hostile
 * entries (fuzz_dwarf found it).  No compiler writes that table for the
 * macros read here: a unit with one, or whose header does not fit, is
 * never handed to libdw, and its macros are not read.
 */
static bool macro_unit_ok(Elf_Data *d, uint64_t off)
{
	const uint8_t *p;
	unsigned int version;

	if (!d || !d->d_buf || off > d->d_size || d->d_size - off < 3)
		return false;
	p = (const uint8_t *) d->d_buf + off;
	version = p[0] | (unsigned int) p[1] << 8;
	return (version == 4 || version == 5) && !(p[2] & 4);
}

static int macro_cb(Dwarf_Macro *m, void *arg);

/* Past the budget nothing more is read, and no macro found (dt_find_macro): the caller stops. */
static int budget_spent(struct dwarf_types *dt)
{
	dt->macros_left = 0;
	dt->macro_bytes_left = 0;
	dt->macros_cut = true;
	return DWARF_CB_ABORT;
}

/* Takes bytes read from the budget: false when it is spent. */
static bool charge(struct dwarf_types *dt, uint64_t bytes)
{
	if (bytes > dt->macro_bytes_left) {
		budget_spent(dt);
		return false;
	}
	dt->macro_bytes_left -= bytes;
	return true;
}

static void read_macros_at(struct macro_read *r, Dwarf_Off off)
{
	/* 16 deep, DWARF_MAX_MACRO_IMPORTS in all: a fan-out of imports is exponential */
	if (r->depth > 16 || ++r->imports > DWARF_MAX_MACRO_IMPORTS)
		return;
	r->depth++;
	/* the callback never aborts: one call reads the whole unit */
	dwarf_getmacros_off(r->dt->dbg, off, macro_cb, r, DWARF_GETMACROS_START);
	r->depth--;
}

static bool is_define(unsigned int op)
{
	return op == DW_MACRO_define || op == DW_MACRO_define_strp || op == DW_MACRO_define_strx ||
	       op == DW_MACRO_define_sup;
}

/* With a #define, the only entries whose second operand is a string: param2 reads no other. */
static bool is_undef(unsigned int op)
{
	return op == DW_MACRO_undef || op == DW_MACRO_undef_strp || op == DW_MACRO_undef_strx ||
	       op == DW_MACRO_undef_sup;
}

static int macro_cb(Dwarf_Macro *m, void *arg)
{
	struct macro_read *r = arg;
	struct dt_cu *cu = r->cu;
	unsigned int op;
	const char *s;
	Dwarf_Attribute a;
	Dwarf_Word w;

	/* an entry costs DWARF_MACRO_ENTRY_BYTES and its string's (libdw steps over an inline one) */
	if (r->dt->macros_cut || !charge(r->dt, DWARF_MACRO_ENTRY_BYTES) ||
	    dwarf_macro_opcode(m, &op))
		return r->dt->macros_cut ? DWARF_CB_ABORT : DWARF_CB_OK;
	if (op == DW_MACRO_import) {
		if (dwarf_macro_param(m, 0, &a) == 0 && dwarf_formudata(&a, &w) == 0 &&
		    macro_unit_ok(r->macro, w))
			read_macros_at(r, w);
		return r->dt->macros_cut ? DWARF_CB_ABORT : DWARF_CB_OK;
	}
	if (!is_define(op) && !is_undef(op))
		return DWARF_CB_OK;
	if (dwarf_macro_param2(m, NULL, &s) || !s)
		s = op == DW_MACRO_define_strx ? strx_string(r, m) : NULL;
	if (s && !charge(r->dt, strlen(s)))
		return DWARF_CB_ABORT;
	if (!s || !is_define(op))
		return DWARF_CB_OK;
	if (!r->dt->macros_left)
		return budget_spent(r->dt);
	if (cu->nmacros == cu->capmacros) {
		size_t cap = cu->capmacros ? 2 * cu->capmacros : 4096;
		struct dt_macro *p = realloc(cu->macros, cap * sizeof(*p));

		if (!p)
			return DWARF_CB_ABORT;
		cu->macros = p;
		cu->capmacros = cap;
	}
	cu->macros[cu->nmacros] = (struct dt_macro){s, strcspn(s, " ("), cu->nmacros};
	cu->nmacros++;
	r->dt->macros_left--;
	return DWARF_CB_OK;
}

static int cmp_macro(const void *a, const void *b)
{
	const struct dt_macro *x = a, *y = b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int c = memcmp(x->def, y->def, n);

	if (c)
		return c;
	if (x->namelen != y->namelen)
		return x->namelen < y->namelen ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void dt_read_macros(struct dwarf_types *dt, struct dt_cu *cu)
{
	struct macro_read r = {dt, cu, 0, 0, 0, section_data(dt->elf, ".debug_macro"),
			       section_data(dt->elf, ".debug_str_offsets"),
			       section_data(dt->elf, ".debug_str")};
	Dwarf_Attribute a;
	Dwarf_Word base, off;
	Dwarf_Die die;

	if (cu->macros_read || dt->no_macros)
		return;
	cu->macros_read = true;
	if (!dwarf_offdie(dt->dbg, cu->die_off, &die))
		return;
	if (!dwarf_hasattr(&die, DW_AT_macros) && !dwarf_hasattr(&die, DW_AT_GNU_macros) &&
	    !dwarf_hasattr(&die, DW_AT_macro_info))
		return;
	cu->has_macros = true;
	if ((dwarf_attr(&die, DW_AT_macros, &a) || dwarf_attr(&die, DW_AT_GNU_macros, &a)) &&
	    (dwarf_formudata(&a, &off) || !macro_unit_ok(r.macro, off)))
		return;
	if (dwarf_attr(&die, DW_AT_str_offsets_base, &a) && dwarf_formudata(&a, &base) == 0)
		r.str_offsets_base = base;
	if (!dt->macros_cut)
		dwarf_getmacros(&die, macro_cb, &r, DWARF_GETMACROS_START);
	sort_array(cu->macros, cu->nmacros, sizeof(*cu->macros), cmp_macro);
}

void dt_free_macros(struct dt_cu *cu)
{
	free(cu->macros);
	cu->macros = NULL;
}

/* The last definition of name[0..len) in the searched CUs, or NULL. */
const struct dt_macro *dt_find_macro(struct dwarf_types *dt, const char *name, size_t len)
{
	size_t i;

	if (dt->no_macros || dt->macros_cut)
		return NULL;
	for (i = 0; i < dt->nuse; i++) {
		struct dt_cu *cu = &dt->cus[dt->use[i]];
		struct dt_macro key = {name, len, (size_t) -1};
		size_t lo = 0, hi;

		dt_read_macros(dt, cu);
		if (dt->macros_cut)
			return NULL;
		/* the last entry before where (name, seq = max) would go */
		hi = cu->nmacros;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (cmp_macro(&cu->macros[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && cu->macros[lo - 1].namelen == len &&
		    !memcmp(cu->macros[lo - 1].def, name, len))
			return &cu->macros[lo - 1];
	}
	return NULL;
}

int dwarf_types_has_macros(struct dwarf_types *dt)
{
	size_t i;

	if (dt->no_macros)
		return 0;
	for (i = 0; i < dt->nuse; i++) {
		dt_read_macros(dt, &dt->cus[dt->use[i]]);
		if (dt->cus[dt->use[i]].has_macros)
			return 1;
	}
	return 0;
}

void dwarf_types_ignore_macros(struct dwarf_types *dt)
{
	dt->no_macros = true;
}

int dwarf_constant(struct dwarf_types *dt, const char *name, int64_t *value)
{
	int ret;

	if (!dt_find_macro(dt, name, strlen(name))) {
		if (dwarf_enumerator(dt, name, value) == 0)
			return 0;
		return dwarf_types_has_macros(dt) ? -1 : -2;
	}
	ret = dt_eval(dt, name, strlen(name), value);
	/* the budget spent on the way: a macro the value uses may have gone unread */
	return dt->macros_cut ? -1 : ret;
}

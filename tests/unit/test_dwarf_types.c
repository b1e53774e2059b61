// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/dwarf/dwarf_types.c, dwarf_open.c, dwarf_macros.c, dwarf_cexpr.c: one unit, dwarf_types.h */
#include <criterion/criterion.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dwarf_fixture.h"
#include "dwarf_types.h"
#include "helpers.h"

/*
 * The reader on a fixture compiled at test time from tests/unit/fixtures/:
 * the expected values are the compiler's own offsetof and sizeof, and the
 * macro values of the same header.
 */

static void expect_member(struct dwarf_types *dt, const char *type, const char *path, size_t off,
			  size_t size)
{
	struct dwarf_field f;

	cr_assert_eq(dwarf_member(dt, type, path, &f), 0, "%s.%s not found", type, path);
	cr_expect_eq(f.offset, off, "%s.%s: offset %lu, expected %zu", type, path,
		     (unsigned long) f.offset, off);
	cr_expect_eq(f.size, size, "%s.%s: size %lu, expected %zu", type, path,
		     (unsigned long) f.size, size);
	cr_expect_eq(f.bit_size, 0);
}

#define MEMBER(dt, type, ctype, path)                                                              \
	expect_member(dt, type, #path, offsetof(ctype, path), sizeof(((ctype *) 0)->path))

Test(dwarf_types, members_match_offsetof)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	const char *types[] = {"struct fix_outer", "fix_outer_t", "fix_const_t"};
	struct dwarf_field f;
	uint64_t size;
	size_t i;

	for (i = 0; i < 3; i++) {
		MEMBER(dt, types[i], struct fix_outer, flags);
		MEMBER(dt, types[i], struct fix_outer, as.heap.len);
		MEMBER(dt, types[i], struct fix_outer, as.heap.ptr);
		MEMBER(dt, types[i], struct fix_outer, as.ary);
		MEMBER(dt, types[i], struct fix_outer, anon_i); /* anonymous union */
		MEMBER(dt, types[i], struct fix_outer, anon_d);
		MEMBER(dt, types[i], struct fix_outer, before_bits);
		MEMBER(dt, types[i], struct fix_outer, inners);
		MEMBER(dt, types[i], struct fix_outer, inners[2].v[1]);
		MEMBER(dt, types[i], struct fix_outer, tag);  /* anonymous struct */
		MEMBER(dt, types[i], struct fix_outer, deep); /* in one inside it */
		MEMBER(dt, types[i], struct fix_outer, darray);
		MEMBER(dt, types[i], struct fix_outer, priv);
		MEMBER(dt, types[i], struct fix_outer, color);
		MEMBER(dt, types[i], struct fix_outer, tail);
		cr_expect_eq(dwarf_type_size(dt, types[i], &size), 0);
		cr_expect_eq(size, sizeof(struct fix_outer));
	}
	cr_assert_eq(dwarf_member(dt, "struct fix_outer", "as.ary", &f), 0);
	cr_expect_eq(f.count, 24);
	cr_expect_eq(f.elem_size, 1);
	cr_assert_eq(dwarf_member(dt, "struct fix_outer", "inners", &f), 0);
	cr_expect_eq(f.count, 4);
	cr_expect_eq(f.elem_size, sizeof(struct fix_inner));
	cr_assert_eq(dwarf_member(dt, "struct fix_outer", "as.heap.ptr", &f), 0);
	cr_expect(f.is_pointer);
	cr_assert_eq(dwarf_member(dt, "struct fix_outer", "tail", &f), 0);
	cr_expect(f.is_signed);
	cr_assert_eq(dwarf_member(dt, "struct fix_outer", "flags", &f), 0);
	cr_expect(!f.is_signed && !f.is_pointer);

	/* "->" follows a pointer: offsets count from the pointee (a flexible array here) */
	cr_assert_eq(dwarf_member(dt, "struct fix_outer", "darray->data", &f), 0);
	cr_expect_eq(f.offset, offsetof(struct fix_darray, data));
	cr_expect_eq(f.count, 0);
	cr_expect_eq(f.elem_size, sizeof(struct fix_inner *));
	MEMBER(dt, "struct fix_darray", struct fix_darray, capa);

	cr_expect_eq(dwarf_type_size(dt, "FIX_VALUE", &size), 0);
	cr_expect_eq(size, sizeof(FIX_VALUE));
	cr_expect_eq(dwarf_type_size(dt, "enum fix_color", &size), 0);
	cr_expect_eq(size, sizeof(enum fix_color));
	cr_expect_eq(dwarf_type_size(dt, "struct fix_inner", &size), 0);
	cr_expect_eq(size, sizeof(struct fix_inner));
	dwarf_types_close(dt);
}

static uint32_t bits_mask(void (*set)(struct fix_bits *))
{
	union {
		struct fix_bits b;
		uint32_t w;
	} u;

	memset(&u, 0, sizeof(u));
	set(&u.b);
	return u.w;
}
static void set_mode(struct fix_bits *b)
{
	b->mode = 3;
}
static void set_gc(struct fix_bits *b)
{
	b->during_gc = 1;
}
static void set_pad(struct fix_bits *b)
{
	b->pad = 63;
}
static void set_last(struct fix_bits *b)
{
	b->last = 1;
}

Test(dwarf_types, bit_fields_as_masks_of_their_word)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	struct {
		const char *path;
		void (*set)(struct fix_bits *);
		uint32_t width;
	} bf[] = {{"bits.mode", set_mode, 2},
		  {"bits.during_gc", set_gc, 1},
		  {"bits.pad", set_pad, 6},
		  {"bits.last", set_last, 1}};
	struct dwarf_field f;
	size_t i;

	for (i = 0; i < sizeof(bf) / sizeof(bf[0]); i++) {
		uint32_t mask = bits_mask(bf[i].set);

		cr_assert_eq(dwarf_member(dt, "struct fix_outer", bf[i].path, &f), 0);
		cr_expect_eq(f.offset, offsetof(struct fix_outer, bits), "%s", bf[i].path);
		cr_expect_eq(f.size, 4);
		cr_expect_eq(f.bit_size, bf[i].width, "%s", bf[i].path);
		cr_expect_eq(((1u << f.bit_size) - 1) << f.bit_offset, mask, "%s: bit %u, mask %#x",
			     bf[i].path, f.bit_offset, mask);
	}
	dwarf_types_close(dt);
}

Test(dwarf_types, enumerators_and_macros)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	struct {
		const char *name;
		int64_t value;
	} c[] = {
	    {"FIX_GREEN", FIX_GREEN},
	    {"FIX_BLUE", (int64_t) FIX_BLUE}, /* unsigned enum: no sign extension */
	    {"FIX_NEG", FIX_NEG},
	    {"FIX_ANON_B", FIX_ANON_B},
	    {"FIX_SHIFT", FIX_SHIFT},
	    {"FIX_FLAG", (int64_t) FIX_FLAG}, /* function-like macros, casts, typedefs */
	    {"FIX_MASK", (int64_t) FIX_MASK},
	    {"FIX_SIZE", (int64_t) FIX_SIZE}, /* sizeof(struct), sizeof(T[N]) */
	    {"FIX_NEGATIVE", FIX_NEGATIVE},
	    {"FIX_TERNARY", FIX_TERNARY},
	    {"FIX_PRECEDENCE", FIX_PRECEDENCE},
	    {"FIX_TRUNC", FIX_TRUNC},
	    {"FIX_ALL_ONES", (int64_t) FIX_ALL_ONES},
	    {"FIX_RED", FIX_RED}, /* "#define FIX_RED FIX_RED": the enumerator */
	};
	int64_t v;
	size_t i;

	cr_assert(dwarf_types_has_macros(dt), "the fixture is built with -g3 -fdebug-macro");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_expect_eq(dwarf_constant(dt, c[i].name, &v), 0, "%s", c[i].name);
		cr_expect_eq(v, c[i].value, "%s = %lld, expected %lld", c[i].name, (long long) v,
			     (long long) c[i].value);
	}
	cr_expect_eq(dwarf_enumerator(dt, "FIX_NEG", &v), 0);
	cr_expect_eq(v, -5);
	cr_expect_eq(dwarf_enumerator(dt, "FIX_FLAG", &v), -1, "a macro is no enumerator");
	cr_expect_eq(dwarf_constant(dt, "FIX_NOT_CONSTANT", &v), -1);
	cr_expect_eq(dwarf_constant(dt, "FIX_USER", &v), -1, "function-like, no arguments");
	cr_expect_eq(dwarf_constant(dt, "FIX_NO_SUCH_NAME", &v), -1);

	/* a -g build: enumerators still, macros not, and it says why */
	dwarf_types_ignore_macros(dt);
	cr_expect(!dwarf_types_has_macros(dt));
	cr_expect_eq(dwarf_constant(dt, "FIX_FLAG", &v), -2);
	cr_expect_eq(dwarf_constant(dt, "FIX_RED", &v), 0);
	cr_expect_eq(v, 1);
	dwarf_types_close(dt);
}

Test(dwarf_types, lookups_that_must_fail)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	struct dwarf_field f;
	uint64_t size;

	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "nope", &f), -1);
	cr_expect_eq(dwarf_member(dt, "struct no_such_type", "flags", &f), -1);
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "flags.x", &f), -1, "not a struct");
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "flags->x", &f), -1, "not a pointer");
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "inners[1]x", &f), -1);
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "flags[0]", &f), -1, "not an array");
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "", &f), -1);
	cr_expect_eq(dwarf_type_size(dt, "union fix_outer", &size), -1, "a struct, not a union");
	cr_expect_eq(dwarf_type_size(dt, "no_such_typedef", &size), -1);
	dwarf_types_close(dt);
}

Test(dwarf_types, compile_units_chosen_by_name)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	const char *priv[] = {"dwarf_fixture_private.c", NULL};
	const char *main_cu[] = {"tests/unit/fixtures/dwarf_fixture.c", NULL};
	const char *none[] = {"gc.c", NULL};
	struct dwarf_field f;

	cr_expect_eq(dwarf_types_use_cus(dt, priv), 1, "matched by its last path component");
	cr_expect_eq(dwarf_member(dt, "struct fix_private", "b", &f), 0);
	cr_expect_eq(f.offset, 8);
	cr_expect_eq(dwarf_types_use_cus(dt, main_cu), 1, "and by its whole name");
	/* declared only in this CU: the definition is found in the other */
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "priv->b", &f), 0);
	cr_expect_eq(f.offset, 8);
	cr_expect_eq(dwarf_types_use_cus(dt, none), 0);
	dwarf_types_close(dt);
}

Test(dwarf_types, separate_debug_files)
{
	struct dwarf_types *dt;
	struct dwarf_field f;
	char err[512];
	int64_t v;

	/* .gnu_debuglink, next to the file; the debug file's sections are zlib-compressed */
	dt = test_dwarf_open(DWARF_FIX "/debuglink/libfix.so", NULL);
	cr_expect_str_eq(dwarf_types_file(dt), DWARF_FIX "/debuglink/libfix.so.debug");
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "tail", &f), 0);
	cr_expect_eq(f.offset, offsetof(struct fix_outer, tail));
	cr_expect_eq(dwarf_constant(dt, "FIX_MASK", &v), 0);
	cr_expect_eq(v, (int64_t) FIX_MASK);
	dwarf_types_close(dt);

	/* build-id, under a root (a container's /proc/PID/root) */
	dt = test_dwarf_open(DWARF_FIX "/buildid/libfix.so", DWARF_FIX "/root");
	cr_expect(strstr(dwarf_types_file(dt), "/usr/lib/debug/.build-id/"));
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "deep", &f), 0);
	cr_expect_eq(f.offset, offsetof(struct fix_outer, deep));
	dwarf_types_close(dt);

	cr_expect_eq(dwarf_types_open(DWARF_FIX "/buildid/libfix.so", NULL, &dt, err, sizeof(err)),
		     -1);
	cr_expect(strstr(err, "no DWARF"), "%s", err);
	cr_expect_eq(dwarf_types_open(DWARF_FIX "/no-such-file.so", NULL, &dt, err, sizeof(err)),
		     -1);
}

/* A hostile image's DWARF: bounded in time, and its files opened without blocking. */
Test(dwarf_types, hostile_macros_and_files_bounded)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	char dir[] = "/tmp/rbm-dw-XXXXXX", fifo[64], err[512];
	struct timespec t0, t1;
	int64_t v;

	cr_expect_eq(dwarf_constant(dt, "FIX_BOMB12", &v), 0, "8191 expansions: within the cap");
	cr_expect_eq(v, 4096);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(dwarf_constant(dt, "FIX_BOMB24", &v), -1, "2^25 expansions: past the cap");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(test_seconds_between(&t0, &t1), CAPPED_SECONDS, "refused at the cap, not evaluated");
	dwarf_types_close(dt);

	/* a FIFO where a libruby (or its debug file) is looked for: refused, not waited on */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/libruby.so", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_expect_eq(dwarf_types_open(fifo, NULL, &dt, err, sizeof(err)), -1);
	unlink(fifo);
	rmdir(dir);
}

/* The top-level definition of struct name. */
static bool find_struct(Dwarf *dbg, const char *name, Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die cu;

	for (; dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0; off = next) {
		if (!dwarf_offdie(dbg, off + hsize, &cu) || dwarf_child(&cu, out))
			continue;
		do {
			if (dwarf_tag(out) == DW_TAG_structure_type && dwarf_diename(out) &&
			    !strcmp(dwarf_diename(out), name) && !dwarf_hasattr(out, DW_AT_declaration))
				return true;
		} while (dwarf_siblingof(out, out) == 0);
	}
	return false;
}

/* Where attribute a's value is in the file: .debug_info's offset plus its place in the section. */
static off_t debug_info_at(Elf *elf, const Dwarf_Attribute *a)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t strndx;
	Elf_Data *d;

	cr_assert_eq(elf_getshdrstrndx(elf, &strndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || strcmp(elf_strptr(elf, strndx, sh.sh_name), ".debug_info"))
			continue;
		cr_assert(!(sh.sh_flags & SHF_COMPRESSED), "the fixture's .debug_info is compressed");
		/* libdw reads the section through the same Elf_Data */
		d = elf_getdata(scn, NULL);
		cr_assert(d && a->valp >= (unsigned char *) d->d_buf &&
			  a->valp + 4 <= (unsigned char *) d->d_buf + d->d_size);
		return (off_t) sh.sh_offset + (a->valp - (unsigned char *) d->d_buf);
	}
	cr_assert_fail("no .debug_info");
	return 0;
}

/*
 * The fixture compressed by dwz (DWARF_DWZ_FIX): the types both CUs define are in a partial unit
 * each imports, and are found through the import, the CU searched alone.
 */
Test(dwarf_types, dwz_partial_unit)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_DWZ_FIX, NULL);
	const char *main_cu[] = {"dwarf_fixture.c", NULL};
	Dwarf_Die inner, unit;
	uint64_t size;
	Dwarf *dbg;
	int64_t v;
	int fd;

	fd = open(DWARF_DWZ_FIX, O_RDONLY);
	dbg = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	cr_assert(dbg && find_struct(dbg, "fix_inner", &inner) && dwarf_diecu(&inner, &unit, NULL, NULL));
	cr_assert_eq(dwarf_tag(&unit), DW_TAG_partial_unit, "dwz left struct fix_inner in its CU");
	dwarf_end(dbg);
	close(fd);

	/* not the size of an array there: libdw has none without the unit's DW_AT_language */
	cr_assert_eq(dwarf_types_use_cus(dt, main_cu), 1);
	MEMBER(dt, "struct fix_inner", struct fix_inner, s);
	MEMBER(dt, "struct fix_darray", struct fix_darray, capa);
	MEMBER(dt, "struct fix_outer", struct fix_outer, inners[2].v[1]);
	MEMBER(dt, "struct fix_outer", struct fix_outer, bits);
	cr_expect_eq(dwarf_type_size(dt, "FIX_VALUE", &size), 0);
	cr_expect_eq(size, sizeof(FIX_VALUE));
	cr_expect_eq(dwarf_enumerator(dt, "FIX_NEG", &v), 0);
	cr_expect_eq(v, FIX_NEG);
	cr_expect_eq(dwarf_enumerator(dt, "FIX_ANON_B", &v), 0);
	cr_expect_eq(v, FIX_ANON_B);
	dwarf_types_close(dt);
}

/*
 * dst: a copy of libfix.so whose struct fix_outer holds an anonymous member of struct fix_outer
 * itself (the anonymous union's DW_AT_type, a DW_FORM_ref4, made to point at fix_outer): a
 * cycle no compiler emits, as a hostile image's DWARF may hold one.
 */
static void write_anonymous_cycle(const char *dst)
{
	int fd = open(DWARF_FIX "/libfix.so", O_RDONLY), out;
	Dwarf_Die outer, m, t;
	Dwarf_Attribute a;
	struct stat st;
	uint32_t was, now;
	char *bytes;
	Dwarf *dbg;
	off_t at;
	Elf *elf;

	cr_assert(fd >= 0 && fstat(fd, &st) == 0, "libfix.so missing: run the tests with `make unit`");
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	dbg = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	cr_assert(dbg && find_struct(dbg, "fix_outer", &outer) && dwarf_child(&outer, &m) == 0);
	while (dwarf_diename(&m) || !dwarf_attr(&m, DW_AT_type, &a) ||
	       !dwarf_formref_die(&a, &t) || dwarf_tag(&t) != DW_TAG_union_type)
		cr_assert_eq(dwarf_siblingof(&m, &m), 0, "no anonymous union in struct fix_outer");
	cr_assert_eq(dwarf_whatform(&a), DW_FORM_ref4);
	at = debug_info_at(elf, &a);
	bytes = malloc((size_t) st.st_size);
	cr_assert(bytes && pread(fd, bytes, (size_t) st.st_size, 0) == st.st_size);
	memcpy(&was, bytes + at, 4);
	cr_assert_eq(was, dwarf_cuoffset(&t), "a DW_FORM_ref4 counts from its unit");
	now = (uint32_t) dwarf_cuoffset(&outer);
	memcpy(bytes + at, &now, 4);
	out = open(dst, O_WRONLY | O_TRUNC);
	cr_assert(out >= 0 && write(out, bytes, (size_t) st.st_size) == st.st_size);
	close(out);
	free(bytes);
	dwarf_end(dbg);
	elf_end(elf);
	close(fd);
}

/*
 * An anonymous member of its own struct: entered again and again, 8 deep, it added its offset
 * once a level to every member after it (tail was found 8 x 32 bytes too far); now an aggregate
 * is not entered twice on one path down.
 */
Test(dwarf_types, anonymous_member_of_its_own_struct, .timeout = 20)
{
	char path[] = "/tmp/rbm-dw-cycle-XXXXXX";
	int fd = mkstemp(path);
	struct dwarf_types *dt;
	struct dwarf_field f;

	cr_assert(fd >= 0);
	close(fd);
	write_anonymous_cycle(path);
	dt = test_dwarf_open(path, NULL);
	MEMBER(dt, "struct fix_outer", struct fix_outer, tail);
	MEMBER(dt, "struct fix_outer", struct fix_outer, color);
	MEMBER(dt, "struct fix_outer", struct fix_outer, deep);
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "anon_i", &f), -1, "its union is gone");
	cr_expect_eq(dwarf_member(dt, "struct fix_outer", "nope", &f), -1);
	dwarf_types_close(dt);
	unlink(path);
}

/*
 * Anonymous members that fan out without a cycle (dwarf_fixture_fan.c): a member fix_fan8 lacks
 * would be looked for in 16^8 of them; the search stops at DWARF_MAX_MEMBERS_SEARCHED.
 */
Test(dwarf_types, anonymous_members_fanning_out_bounded, .timeout = 20)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);
	struct timespec t0, t1;
	struct dwarf_field f;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(dwarf_member(dt, "struct fix_fan8", "first", &f), 0);
	cr_expect_eq(f.offset, 0);
	cr_expect_eq(dwarf_member(dt, "struct fix_fan8", "nope", &f), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(test_seconds_between(&t0, &t1), CAPPED_SECONDS, "refused at the cap, not searched");
	dwarf_types_close(dt);
}

/* The byte size of base type name in the CU named cu, or 0 when it is not found. */
static uint64_t size_in_cu(struct dwarf_types *dt, const char *cu, const char *name)
{
	const char *cus[] = {cu, NULL};
	uint64_t size;

	cr_assert_eq(dwarf_types_use_cus(dt, cus), 1, "no CU %s in the fixture", cu);
	return dwarf_type_size(dt, name, &size) ? 0 : size;
}

/*
 * A unit imported 64 times by a CU and 64 times by itself (dwarf_fixture_imports.S), and a CU
 * importing itself 64 times: each unit's types are indexed once.  Followed at each import, 4
 * deep, each was 64^4 (17 million) passes over the unit.
 */
Test(dwarf_types, imported_units_indexed_once, .timeout = 20)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_IMPORTS_FIX, NULL);
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(size_in_cu(dt, "fix_imp_fan.c", "fix_imp_fan_own"), 1);
	cr_expect_eq(size_in_cu(dt, "fix_imp_fan.c", "fix_imp_loop"), 2, "from the imported unit");
	cr_expect_eq(size_in_cu(dt, "fix_imp_self.c", "fix_imp_self_own"), 3);
	cr_expect_eq(size_in_cu(dt, "fix_imp_self.c", "fix_imp_loop"), 0, "not imported there");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(test_seconds_between(&t0, &t1), CAPPED_SECONDS, "each unit indexed once");
	dwarf_types_close(dt);
}

/*
 * Partial units importing partial units 8 deep, as dwz writes them (Ruby 3.4.5's with dwz -m):
 * followed 4 deep, the types of the last 4 were not found.
 */
Test(dwarf_types, imported_units_eight_deep)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_IMPORTS_FIX, NULL);
	char name[32];
	int n;

	for (n = 1; n <= 8; n++) {
		snprintf(name, sizeof(name), "fix_imp_deep%d", n);
		cr_expect_eq(size_in_cu(dt, "fix_imp_deep.c", name), (uint64_t) n, "%s", name);
	}
	dwarf_types_close(dt);
}

/* A CU's imports are followed DWARF_MAX_UNIT_IMPORTS times at most: the one after is not. */
Test(dwarf_types, imported_units_capped)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_IMPORTS_FIX, NULL);

	cr_expect_eq(size_in_cu(dt, "fix_imp_cap.c", "fix_imp_first"), 9, "the first import");
	cr_expect_eq(size_in_cu(dt, "fix_imp_cap.c", "fix_imp_last"), 0, "past the cap");
	dwarf_types_close(dt);
}

/*
 * Every CU of fixture searched (dwarf_fixture_budget.S): the many CUs importing one unit (of a
 * type wide, 4 bytes) spend the file's index budget, and the CU after them is indexed no more;
 * searched first, it is.  What was indexed before the budget ran out still serves.
 */
static void budget_spent_by_many_cus(const char *fixture, const char *wide)
{
	struct dwarf_types *dt = test_dwarf_open(fixture, NULL);
	struct timespec t0, t1;
	uint64_t size;

	cr_expect_eq(size_in_cu(dt, "fix_budget_after.c", "fix_budget_after"), 11, "searched first");
	dwarf_types_close(dt);
	dt = test_dwarf_open(fixture, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(dwarf_type_size(dt, "fix_budget_absent", &size), -1, "every CU searched");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(test_seconds_between(&t0, &t1), CAPPED_SECONDS, "stopped at the budget");
	cr_expect_eq(size_in_cu(dt, "fix_budget_after.c", "fix_budget_after"), 0, "past the budget");
	cr_expect_eq(size_in_cu(dt, "fix_budget_many.c", wide), 4, "indexed before: kept");
	dwarf_types_close(dt);
}

/*
 * The names and enumerators all CUs keep are one budget, DWARF_MAX_INDEXED: each CU indexed the
 * units it imports on its own, and 2000 CUs importing a unit of 20000 types kept 40 million
 * names (955 MB, 4.5 s).  Here 257 CUs keep 4097 entries each, half of them enumerators.
 */
Test(dwarf_types, index_budget_names, .timeout = 20)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_BUDGET_FIX "/names.so", NULL);
	int64_t v;

	cr_expect_eq(size_in_cu(dt, "fix_budget_many.c", "fix_budget_wide"), 4);
	cr_expect_eq(dwarf_enumerator(dt, "FIX_BUDGET_WIDE", &v), 0);
	cr_expect_eq(v, 1);
	dwarf_types_close(dt);
	budget_spent_by_many_cus(DWARF_BUDGET_FIX "/names.so", "fix_budget_wide");
}

/*
 * The bytes of .debug_info the walks cover, all CUs together, are one budget too,
 * DWARF_MAX_INDEX_BYTES: a walk passes over a type's children (a struct's members) to the
 * next, and 10000 CUs importing a unit of one struct of 50000 members took 9.1 s.  Here 4098
 * CUs import a unit of 64 KiB.
 */
Test(dwarf_types, index_budget_bytes, .timeout = 20)
{
	budget_spent_by_many_cus(DWARF_BUDGET_FIX "/bytes.so", "fix_budget_blob");
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/ruby_layout.c: what the objspace flags say of the ages, the list of layout fields. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "dwarf_types.h"
#include "helpers.h"
#include "ruby_layout.h"
#include "ruby_versions.h"

/*
 * Flags words read live from 3.3.8 (mode bits 0-1, during_gc bit 5,
 * during_minor_gc 10, during_incremental_marking 11, measure_gc 12): the
 * GC's count is bumped while 0x1420, before its marking sets the mode.
 */
Test(ruby_layout, ages_may_lag)
{
	static const struct {
		uint32_t flags;
		bool lag;
	} cases[] = {
	    {0x1000, false}, /* idle after a major GC */
	    {0x1400, false}, /* idle after a minor GC */
	    {0x1402, false}, /* a lazy sweep between its steps */
	    {0x1422, false}, /* a sweep step: marking is over */
	    {0x1420, true},  /* gc_start: counted, not marked yet (or swept, not yet left) */
	    {0x1421, true},  /* marking */
	    {0x1821, true},  /* an incremental marking step */
	    {0x1801, true},  /* an incremental marking between its steps */
	};
	const char *series[] = {"3.3", "3.4"};
	const struct ruby_layout l31 = test_layout_of("3.1.7"), *h31 = &l31;
	size_t i, k;

	for (k = 0; k < 2; k++) {
		const struct ruby_layout *hl = ruby_versions_entry(series[k]);

		cr_assert_not_null(hl, "%s", series[k]);
		cr_expect_eq(hl->objspace_flags_during_gc, 1u << 5, "%s", series[k]);
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			cr_expect_eq(ruby_layout_ages_may_lag(hl, cases[i].flags), cases[i].lag,
				     "%s flags %#x", series[k], cases[i].flags);
	}
	/* 3.1: the same bits but during_incremental_marking at 10. */
	cr_expect_eq(h31->objspace_flags_during_gc, 1u << 5);
	cr_expect(ruby_layout_ages_may_lag(h31, 0x20));
	cr_expect(ruby_layout_ages_may_lag(h31, 0x401));
	cr_expect(!ruby_layout_ages_may_lag(h31, 0x22));
	cr_expect(!ruby_layout_ages_may_lag(h31, 0x202));
}

/* The generator and these tests list every field: a new field must be listed too. */
static void expect_all_listed(struct dwarf_types *dt, const char *type,
			      const struct layout_field *fields, size_t n)
{
	const char *names[256];
	struct dwarf_field f;
	int i, count = dwarf_member_names(dt, type, names, 256), numeric = 0;
	size_t j;

	cr_assert_gt(count, 3, "%s not in the fixture", type);
	for (i = 0; i < count; i++) {
		if (!strcmp(names[i], "series") || !strcmp(names[i], "verified") ||
		    !strcmp(names[i], "source"))
			continue;
		numeric++;
		for (j = 0; j < n && strcmp(fields[j].name, names[i]); j++)
			;
		cr_expect_lt(j, n, "%s.%s is not in dwarf_layout.c's field list", type, names[i]);
		if (j == n)
			continue;
		cr_assert_eq(dwarf_member(dt, type, names[i], &f), 0);
		cr_expect_eq(f.offset, fields[j].offset, "%s", names[i]);
		cr_expect_eq(f.size, fields[j].size, "%s", names[i]);
	}
	cr_expect_eq((size_t) numeric, n, "%s: %d members, %zu listed", type, numeric, n);
}

/* The DWARF fixture (tests/unit/fixtures/dwarf_fixture_private.c) holds a struct ruby_layout. */
Test(ruby_layout, field_lists_cover_the_structures)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_FIX "/libfix.so", NULL);

	expect_all_listed(dt, "struct ruby_layout", ruby_layout_fields, ruby_layout_nfields);
	dwarf_types_close(dt);
}

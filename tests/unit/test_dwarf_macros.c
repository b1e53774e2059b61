// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The file's macro budget (dwarf_macros.c, dwarf_caps.h): many CUs sharing one macro unit
 * (fixtures/dwarf_fixture_macro_budget.S) each read and keep their own copy of it.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <time.h>
#include "dwarf_types.h"
#include "helpers.h"

/* FIX_MAC_AFTER's value when only fix_mac_after.c is searched, or -1. */
static int64_t after_alone(struct dwarf_types *dt)
{
	const char *const after[] = {"fix_mac_after.c", NULL};
	int64_t v;

	dwarf_types_use_cus(dt, after);
	return dwarf_constant(dt, "FIX_MAC_AFTER", &v) ? -1 : v;
}

/*
 * Every CU of fixture searched: the many CUs spend the file's macro budget before the CU after
 * them is read, and then no macro is found, in any CU (one may lack its last definitions): the
 * caller's tables serve.  Searched first, the CU after them is read.
 */
static void budget_spent_by_many_cus(const char *fixture)
{
	struct dwarf_types *dt = test_dwarf_open(fixture, NULL);
	struct timespec t0, t1;
	int64_t v;

	cr_expect_eq(after_alone(dt), 11, "searched first");
	cr_expect_eq(dwarf_constant(dt, "FIX_MAC_WIDE", &v), -1, "a CU left unread: the file's cut");
	dwarf_types_close(dt);

	dt = test_dwarf_open(fixture, NULL);
	const char *const many[] = {"fix_mac_many.c", NULL};
	dwarf_types_use_cus(dt, many);
	cr_expect_eq(dwarf_constant(dt, "FIX_MAC_WIDE", &v), 0, "one CU of them: within the budget");
	cr_expect_eq(v, 4);
	dwarf_types_use_cus(dt, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(dwarf_constant(dt, "FIX_MAC_ABSENT", &v), -1, "every CU searched");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt(test_seconds_between(&t0, &t1), CAPPED_SECONDS, "stopped at the budget");
	cr_expect_eq(dwarf_constant(dt, "FIX_MAC_WIDE", &v), -1, "past the budget: none found");
	cr_expect_eq(after_alone(dt), -1, "past the budget: not read");
	dwarf_types_close(dt);
}

/*
 * The macros all CUs keep are one budget, DWARF_MAX_MACROS: 2000 CUs sharing a unit of 20000
 * macros kept 40 million.  Here 1025 CUs keep 4096 each.
 */
Test(dwarf_macros, macro_budget_kept, .timeout = 20)
{
	budget_spent_by_many_cus(DWARF_MACRO_FIX "/macros.so");
}

/*
 * The bytes of macro entries read, all CUs together, are one budget too,
 * DWARF_MAX_MACRO_BYTES: an #undef is read and not kept.  Here 8194 CUs read an #undef of
 * 64 KiB.
 */
Test(dwarf_macros, macro_budget_bytes, .timeout = 20)
{
	budget_spent_by_many_cus(DWARF_MACRO_FIX "/bytes.so");
}

/*
 * A macro of a 64 KB body used twice per level: FIX_FAT16 expands it 2^17 times, 100,000 at the
 * step cap (6.5 GB to scan); the text cap (1 MiB an expression) stops it at 16.  FIX_FAT3, 8
 * expansions (520 KB), evaluates.
 */
Test(dwarf_macros, fat_bodies_bounded_in_text, .timeout = 20)
{
	struct dwarf_types *dt = test_dwarf_open(DWARF_MACRO_FIX "/macros.so", NULL);
	const char *const after[] = {"fix_mac_after.c", NULL};
	struct timespec t0, t1;
	int64_t v;

	dwarf_types_use_cus(dt, after);
	cr_expect_eq(dwarf_constant(dt, "FIX_FAT3", &v), 0, "8 expansions: within the cap");
	cr_expect_eq(v, 8);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(dwarf_constant(dt, "FIX_FAT16", &v), -1, "6.5 GB of text: past the cap");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 500,
		     "refused at the cap, not evaluated");
	dwarf_types_close(dt);
}

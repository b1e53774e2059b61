// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/heap/census.c: a class's counts and age histogram, a slot's state by address. */
#include <criterion/criterion.h>
#include "census.h"
#include "slots.h"

Test(census, class_count_age_histogram)
{
	struct census_class cc = {.live = 99, .old = 99};

	census_class_count(&cc, SLOT_LIVE, 0, 40);
	census_class_count(&cc, SLOT_LIVE, 1, 141);
	census_class_count(&cc, SLOT_LIVE, 3, 40);
	census_class_count(&cc, SLOT_LIVE, 3, 40);
	census_class_count(&cc, SLOT_LIVE, 7, 40); /* impossible age: clamped, not out of bounds */
	census_class_count(&cc, SLOT_GARBAGE, 2, 40);
	census_class_count(&cc, SLOT_FREE, 0, 40);
	census_class_finish(&cc, 3);
	cr_expect_eq(cc.live, 5);
	cr_expect_eq(cc.bytes, 301);
	cr_expect_eq(cc.garbage, 1);
	cr_expect_eq(cc.old, 3);
	cr_expect_eq(cc.age[0], 1);
	cr_expect_eq(cc.age[1], 1);
	cr_expect_eq(cc.age[2], 0);
	cr_expect_eq(cc.age[3], 3);
	census_class_finish(&cc, 1); /* a series whose objects are old after one GC */
	cr_expect_eq(cc.live, 5);
	cr_expect_eq(cc.old, 4);
}

Test(census, slot_state_lookup)
{
	uint8_t a[3] = {SLOT_LIVE | 3 << 4, SLOT_FREE, SLOT_GARBAGE | 1 << 4};
	uint8_t b[2] = {SLOT_ZOMBIE, SLOT_LIVE};
	struct census_page pages[2] = {
	    {.start = 0x10010, .nslots = 3, .slot_size = 40, .slot = a},
	    {.start = 0x20010, .nslots = 2, .slot_size = 40, .slot = b},
	};
	struct census c = {.page = pages, .npage = 2};
	unsigned int age;

	cr_expect_eq(census_slot_state(&c, 0x10010, &age), SLOT_LIVE);
	cr_expect_eq(age, 3);
	cr_expect_eq(census_slot_state(&c, 0x10010 + 40, &age), SLOT_FREE);
	cr_expect_eq(census_slot_state(&c, 0x10010 + 80, &age), SLOT_GARBAGE);
	cr_expect_eq(age, 1);
	cr_expect_eq(census_slot_state(&c, 0x10010 + 120, &age), SLOT_UNKNOWN); /* past the end */
	cr_expect_eq(census_slot_state(&c, 0x10010 + 8, &age), SLOT_UNKNOWN);	/* mid-slot */
	cr_expect_eq(census_slot_state(&c, 0x10000, &age), SLOT_UNKNOWN);
	cr_expect_eq(census_slot_state(&c, 0x20010 + 40, &age), SLOT_LIVE);
	cr_expect_eq(census_slot_state(&c, 0x20010, &age), SLOT_ZOMBIE);
	cr_expect_eq(census_slot_state(&c, 0x30000, &age), SLOT_UNKNOWN);
}

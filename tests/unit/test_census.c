// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/heap/census.c: a class's counts and age histogram, a slot's state by address, two censuses
 * compared. */
#include <criterion/criterion.h>
#include "census.h"
#include "slots.h"
#include <errno.h>
#include <stdlib.h>

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

#define LIVE(age) (SLOT_LIVE | (age) << 4)
#define LIVE_WBU (SLOT_LIVE | SLOT_WB_UNPROTECTED)

/*
 * Two censuses of one page, compared: which live objects at the end were
 * made since the start, by their age, their slot and their class.  Two GCs
 * ran between them (old age 3).
 */
Test(census, compare_counts_what_is_new)
{
	uint64_t key_a = 0x1000, key_b = 0x2000;
	uint32_t a = census_class_hash(key_a), b = census_class_hash(key_b);
	/* slot: 0 old A kept; 1 A aged 1->3 kept; 2 A freed, B made; 3 free, A made and aged;
	 *       4 A age 0 kept (0->2); 5 A replaced by a newer A (age 1 < 0+2); 6 new A age 0;
	 *       7 wb-unprotected A kept; 8 wb-unprotected A in a free slot; 9 age 3 > 2 GCs */
	uint8_t s0[10] = {LIVE(3), LIVE(1),   LIVE(2),	SLOT_FREE, LIVE(0),
			  LIVE(0), SLOT_FREE, LIVE_WBU, SLOT_FREE, SLOT_FREE};
	uint32_t c0[10] = {a, a, a, 0, a, a, 0, a, 0, 0};
	uint8_t s1[10] = {LIVE(3), LIVE(3), LIVE(1),  LIVE(2),	LIVE(2),
			  LIVE(1), LIVE(0), LIVE_WBU, LIVE_WBU, LIVE(3)};
	uint32_t c1[10] = {a, a, b, a, a, a, a, a, a, a};
	struct census_page
	    p0 = {.start = 0x10000, .nslots = 10, .slot_size = 40, .slot = s0, .class_of = c0},
	    p1 = {.start = 0x10000, .nslots = 10, .slot_size = 40, .slot = s1, .class_of = c1};
	struct census before = {.page = &p0, .npage = 1, .gc_count = 5},
		      now = {.page = &p1, .npage = 1, .gc_count = 7};
	struct census_class *ca = calloc(1, sizeof(*ca)), *cb = calloc(1, sizeof(*cb));

	cr_assert(ca && cb);
	cr_assert_eq(u64map_put(&now.classes, key_a, ca), 0);
	cr_assert_eq(u64map_put(&now.classes, key_b, cb), 0);
	cr_assert_eq(census_compare(&before, &now, 3), 0);
	cr_expect(now.compared);
	/* A: slots 3, 5, 6, 8 are new; 3 and 5 aged, 8 cannot tell, 6 young */
	cr_expect_eq(ca->new_alive, 4);
	cr_expect_eq(ca->new_aged, 2);
	cr_expect_eq(ca->new_unaged, 1);
	cr_expect_eq(ca->new_old, 0);
	cr_expect_eq(cb->new_alive, 1);
	cr_expect_eq(cb->new_aged, 1);

	/* Four GCs: a new object may be old; an old one in an old one's slot is taken as it. */
	now.gc_count = 9;
	s1[3] = LIVE(3);
	cr_assert_eq(census_compare(&before, &now, 3), 0);
	cr_expect_eq(ca->new_old, 2, "slots 3 and 9: made and grown old within four GCs");
	cr_expect_eq(ca->new_alive, 6, "and slot 4: age 2 is not 0 + 4 GCs, a newer object");

	/* A compaction or a census without slots: nothing to compare. */
	now.gc_count = 4;
	cr_expect_eq(census_compare(&before, &now, 3), -EINVAL, "GC count went back");
	before.page = NULL;
	now.gc_count = 7;
	cr_expect_eq(census_compare(&before, &now, 3), -EINVAL);
	u64map_free(&now.classes, free);
}

/* A census caught marking: an object seen then may be aged once more by that GC. */
Test(census, compare_allows_the_gc_under_way)
{
	uint32_t a = census_class_hash(0x1000);
	uint8_t s0[2] = {LIVE(0), LIVE(0)}, s1[2] = {LIVE(2), LIVE(1)};
	uint32_t c0[2] = {a, a}, c1[2] = {a, a};
	struct census_page
	    p0 = {.start = 0x10000, .nslots = 2, .slot_size = 40, .slot = s0, .class_of = c0},
	    p1 = {.start = 0x10000, .nslots = 2, .slot_size = 40, .slot = s1, .class_of = c1};
	struct census before = {.page = &p0, .npage = 1, .gc_count = 5, .marking = true},
		      now = {.page = &p1, .npage = 1, .gc_count = 6};
	struct census_class *ca = calloc(1, sizeof(*ca));

	cr_assert_eq(u64map_put(&now.classes, 0x1000, ca), 0);
	cr_assert_eq(census_compare(&before, &now, 3), 0);
	cr_expect_eq(ca->new_alive, 0, "both the same objects: aged by 1 or by 1 + the GC marking");
	before.marking = false;
	cr_assert_eq(census_compare(&before, &now, 3), 0);
	cr_expect_eq(ca->new_alive, 0, "slot 0: age 2 > 1 GC; slot 1: 0 + 1");
	s1[0] = LIVE(0);
	cr_assert_eq(census_compare(&before, &now, 3), 0);
	cr_expect_eq(ca->new_alive, 1, "slot 0: age 0 after a GC is a newer object");
	u64map_free(&now.classes, free);
}

/*
 * The end marked against the start answers census_slot_new_at as the
 * comparison did, once the start's slots are gone (the leak verdict frees
 * them before its end's walk); another start is compared as before.
 */
Test(census, marks_answer_once_the_start_is_gone)
{
	uint32_t a = census_class_hash(0x1000), b = census_class_hash(0x2000), h;
	uint8_t s0[6] = {LIVE(3), LIVE(2), SLOT_FREE, LIVE(0), LIVE_WBU, SLOT_FREE};
	uint32_t c0[6] = {a, a, 0, a, a, 0};
	uint8_t s1[6] = {LIVE(3), LIVE(1), LIVE(0), LIVE(2), LIVE_WBU, SLOT_FREE};
	uint32_t c1[6] = {a, b, a, a, a, 0};
	struct census_page
	    p1 = {.start = 0x10000, .nslots = 6, .slot_size = 40, .slot = s1, .class_of = c1};
	struct census before = {.npage = 1, .gc_count = 5}, other = {.npage = 1, .gc_count = 5},
		      now = {.page = &p1, .npage = 1, .gc_count = 7};
	struct census_page *p0 = malloc(sizeof(*p0));
	enum census_newness want[6];
	struct census_hint hint = {0};
	uint32_t i;

	cr_assert(p0);
	*p0 = (struct census_page){.start = 0x10000, .nslots = 6, .slot_size = 40};
	p0->slot = malloc(sizeof(s0));
	p0->class_of = malloc(sizeof(c0));
	cr_assert(p0->slot && p0->class_of);
	memcpy(p0->slot, s0, sizeof(s0));
	memcpy(p0->class_of, c0, sizeof(c0));
	before.page = p0;
	before.slot_mem = p0->slot;
	before.class_mem = p0->class_of;
	other.page = p0;
	for (i = 0; i < 6; i++)
		want[i] = census_slot_new(&before, &now, 0x10000 + i * 40, 3, &h);
	cr_expect_eq(want[0], CENSUS_OLD);
	cr_expect_eq(want[1], CENSUS_NEW, "another class in its slot");
	cr_expect_eq(want[2], CENSUS_NEW);
	cr_expect_eq(want[5], CENSUS_NOT_LIVE);
	cr_assert_eq(census_mark_new(&before, &now, 3), 0);
	/* another census with the same slots is still compared, not read from the marks */
	cr_expect_eq(census_slot_new(&other, &now, 0x10000 + 40, 3, &h), CENSUS_NEW);
	census_drop_slots(&before); /* frees p0 and its arrays */
	cr_expect_null(before.page);
	for (i = 0; i < 6; i++) {
		cr_expect_eq(census_slot_new_at(&before, &now, 0x10000 + i * 40, 3, &h, &hint),
			     want[i], "slot %u", i);
		cr_expect_eq(h, want[i] == CENSUS_NOT_LIVE ? 0 : c1[i], "slot %u", i);
	}
	cr_expect_eq(census_slot_new(&before, &now, 0x20000, 3, &h), CENSUS_UNKNOWN);
}
